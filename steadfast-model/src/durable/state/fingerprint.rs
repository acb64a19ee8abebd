//! The packing of [`State`] into the checker's fingerprint: its `Hash`, which reads the
//! fields as a few machine words and compresses them. Kept apart because it is the one
//! place that knows every field's bit layout, and the hottest code of a check.

use super::{
    Checkpoint, Phase, State, MAX_ACTIONS, MAX_CONCURRENT, MAX_INPUTS, MAX_KEYS, MAX_PARTITIONS,
    MAX_SLOTS,
};

// The fingerprint below reads the per-state-key arrays as two words and a tail of two
// bytes, and the per-key ones as three bytes.
const _: () =
    assert!(MAX_SLOTS == 18 && MAX_KEYS == 3 && MAX_PARTITIONS == 2 && MAX_CONCURRENT == 3);

/// Offsets are below [`crate::durable::MAX_LOG`], so this byte names "no offset" in the
/// fingerprint.
const NO_OFFSET: u8 = 0xFF;

/// Little-endian value of a three-byte array.
#[inline(always)]
fn le3(a: [u8; 3]) -> u64 {
    a[0] as u64 | (a[1] as u64) << 8 | (a[2] as u64) << 16
}

/// The four words of an 18-entry array of two-byte values and its four-byte tail.
#[inline(always)]
fn words16(a: [u16; MAX_SLOTS]) -> ([u64; 4], u64) {
    let word = |i: usize| {
        a[i] as u64 | (a[i + 1] as u64) << 16 | (a[i + 2] as u64) << 32 | (a[i + 3] as u64) << 48
    };
    (
        [word(0), word(4), word(8), word(12)],
        a[16] as u64 | (a[17] as u64) << 16,
    )
}

/// The two words of an 18-byte array and its two-byte tail.
#[inline(always)]
fn words(a: [u8; MAX_SLOTS]) -> (u64, u64, u64) {
    let (lo, rest) = a.split_first_chunk::<8>().expect("18 bytes");
    let (hi, tail) = rest.split_first_chunk::<8>().expect("10 bytes");
    (
        u64::from_le_bytes(*lo),
        u64::from_le_bytes(*hi),
        tail[0] as u64 | (tail[1] as u64) << 8,
    )
}

/// A checkpoint as one full word (sequence numbers, finished, marker) and a half word
/// (next actions and the presence tag).
#[inline(always)]
fn checkpoint_words(c: &Option<Checkpoint>) -> (u64, u64) {
    match c {
        Some(c) => (
            le3(c.next_seq)
                | le3(c.finished) << 24
                | (c.marker[0] as u64) << 48
                | (c.marker[1] as u64) << 56,
            le3(c.next_action) | 1 << 24 | (c.awaiting_subtask as u64) << 25,
        ),
        None => (0, 0),
    }
}

/// Odd constants with well-spread bits (golden-ratio, SplitMix, SHA-2 words): the keys of
/// the NH-style compression in [`State`]'s hash.
const NH_KEYS: [u64; 24] = [
    0x9e37_79b9_7f4a_7c15,
    0xbf58_476d_1ce4_e5b9,
    0x94d0_49bb_1331_11eb,
    0x2545_f491_4f6c_dd1d,
    0xd6e8_feb8_6659_fd93,
    0xa076_1d64_78bd_642f,
    0xe703_7ed1_a0b4_28db,
    0x8ebc_6af0_9c88_c6e3,
    0x5899_65cc_7537_4cc3,
    0x1d8e_4e27_c47d_124f,
    0xff51_afd7_ed55_8ccd,
    0xc4ce_b9fe_1a85_ec53,
    0x87c3_7b91_1142_53d5,
    0x4cf5_ad43_2745_937f,
    0x6a09_e667_f3bc_c909,
    0xbb67_ae85_84ca_a73b,
    0x3c6e_f372_fe94_f82b,
    0xa54f_f53a_5f1d_36f1,
    0x510e_527f_ade6_82d1,
    0x9b05_688c_2b3e_6c1f,
    0x1f83_d9ab_fb41_bd6b,
    0x5be0_cd19_137e_2179,
    0x7137_4491_23ef_65cd,
    0xb5c0_fbcf_ec4d_3b2f,
];

impl std::hash::Hash for State {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        // Every field but the `supplier_runs` ghost, as bytes (the per-state-key arrays
        // as they are held; one byte per phase, put field and counter), laid out as 24
        // words, compressed NH-style (sum of products of key-offset word pairs, 128
        // bits) and handed to the hasher as two words: far fewer hasher rounds than the
        // fields one by one.
        let acked = self.acked_offset.0;
        let offset = self.log.offset;
        let landed = self.log.landed;
        let (c0, c1, ct) = words(self.cache.0);
        let (a0, a1, at) = words(acked);
        let (l0, l1, lt) = words(self.log.latest);
        let (o0, o1, ot) = words(offset);
        let ([d0, d1, d2, d3], dt) = words16(landed);
        let tails = ct | at << 16 | lt << 32 | ot << 48;
        debug_assert!(
            self.checkpoints < 8 && self.crashes < 4,
            "three and two bits"
        );
        let flags = (dt & 0xFFFF)
            | (self.log_len[0] as u64) << 16
            | (self.log_len[1] as u64) << 24
            | (self.failed as u64) << 32
            | (self.scaled_in as u64) << 33
            | (self.zombie_fenced as u64) << 34
            | (self.fenced_partitions as u64) << 35
            | (self.down as u64) << 40
            | (self.checkpoints as u64) << 41
            | (self.crashes as u64) << 44
            | (self.failed_sends as u64) << 48
            | (self.events.code() as u64) << 56;
        let keys1 = le3(self.next_seq) | le3(self.finished) << 24;
        let keys2 = le3(self.next_action)
            | le3(self.phase.map(Phase::code)) << 24
            | (self.events.committed_rerun as u64) << 48
            | (self
                .call_index_behind
                .iter()
                .rev()
                .fold(0, |bits, &b| bits << 1 | b as u64))
                << 49;
        let zombie = self.zombie.map_or(0xFFFF, |r| {
            (r.state_key.slot() as u16) << 4 | r.state.index() as u16
        });
        let keys3 = le3(self.committed_outputs) | le3(self.key_boundary) << 24 | (dt >> 16) << 48;
        // Per key, its put's record (its state key within the key, and its state) and
        // offset.
        let puts = self.puts.iter().enumerate().fold(0, |word, (k, put)| {
            let (record, offset) = match put {
                Some(p) => (
                    ((p.record.state_key.slot() - k * MAX_INPUTS * MAX_ACTIONS) as u8) << 4
                        | p.record.state.index(),
                    p.offset.unwrap_or(NO_OFFSET),
                ),
                None => (0xFF, NO_OFFSET),
            };
            word | (record as u64 | (offset as u64) << 8) << (16 * k)
        });
        let misc = puts | (zombie as u64) << 48;
        let (p0, p1) = checkpoint_words(&self.pending[0]);
        let (r0, r1) = checkpoint_words(&self.pending[1]);
        let (t0, t1) = checkpoint_words(&self.pending[2]);
        let (q0, q1) = checkpoint_words(&self.completed);
        let words = [
            c0,
            c1,
            a0,
            a1,
            l0,
            l1,
            o0,
            o1,
            d0,
            d1,
            d2,
            d3,
            tails,
            flags,
            keys1,
            keys2,
            keys3,
            misc,
            p0,
            q0,
            p1 | q1 << 32,
            r0,
            t0,
            r1 | t1 << 32,
        ];
        let mut acc = 0u128;
        for i in 0..12 {
            let x = words[2 * i].wrapping_add(NH_KEYS[2 * i]);
            let y = words[2 * i + 1].wrapping_add(NH_KEYS[2 * i + 1]);
            acc = acc.wrapping_add(x as u128 * y as u128);
        }
        h.write_u64(acc as u64);
        h.write_u64((acc >> 64) as u64);
    }
}
