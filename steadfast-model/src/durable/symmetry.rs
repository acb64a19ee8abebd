//! Key symmetry: keys of one partition (key `k` writes to partition `k % partitions`)
//! are interchangeable. Inputs, actions and calls are per key, every step treats keys
//! alike, and offsets, markers and the end offset are per partition, so renaming keys
//! within a partition maps runs to runs; every property quantifies over all keys or
//! reads key-free events, so it holds of a state exactly when it holds of the renamed one.

use super::{
    ActionState, Checkpoint, Phase, State, StateKey, MAX_ACTIONS, MAX_CALLS, MAX_CONCURRENT,
    MAX_INPUTS, MAX_KEYS,
};

/// A renaming of keys: key `k` becomes `to[k]`.
pub type Renaming = [u8; MAX_KEYS];

const SLOTS_PER_KEY: usize = MAX_INPUTS * MAX_ACTIONS;
const SIGNATURE: usize =
    8 + 3 * (MAX_CONCURRENT + 1) + 4 + 3 + 10 * SLOTS_PER_KEY + SLOTS_PER_KEY * MAX_CALLS;

/// A phase as bytes that order like the phase's parts.
fn phase_bytes(p: Phase) -> [u8; 2] {
    match p {
        Phase::Idle => [0, 0],
        Phase::AtCall(i) => [1, i],
        Phase::HaveResult(i) => [2, i],
        Phase::AwaitPut(i) => [3, i],
        Phase::AwaitCompletion => [4, 0],
    }
}

/// An optional action state as bytes (presence first; the held calls as bits, which
/// order lists in call order by length).
fn state_bytes(st: Option<ActionState>) -> [u8; 3] {
    st.map_or([0; 3], |st| {
        let held = st.held().fold(0, |bits, c| bits | 1 << c);
        [1, held, st.completed() as u8]
    })
}

fn checkpoint_of(c: &Option<Checkpoint>, k: usize) -> [u8; 3] {
    c.map_or([0; 3], |c| [c.next_seq[k], c.finished[k], c.next_action[k]])
}

/// Everything the state holds about key `k`: equal signatures of two keys mean
/// swapping them changes nothing.
fn signature(s: &State, k: usize) -> [u8; SIGNATURE] {
    let mut sig = [0u8; SIGNATURE];
    let mut at = 0;
    let mut put = |b: u8| {
        sig[at] = b;
        at += 1;
    };
    let [phase, call] = phase_bytes(s.phase[k]);
    for b in [
        s.next_seq[k],
        s.finished[k],
        s.next_action[k],
        phase,
        call,
        s.key_boundary[k],
        s.committed_outputs[k],
        s.call_index_behind[k] as u8,
    ] {
        put(b);
    }
    for c in s.pending.iter().chain([&s.completed]) {
        for b in checkpoint_of(c, k) {
            put(b);
        }
    }
    // The key's in-flight put; of its state key only the key-relative part.
    let mine = s.puts[k];
    let relative = mine.map_or(0, |p| {
        1 + p.record.state_key.slot() as u8 % SLOTS_PER_KEY as u8
    });
    let [_, calls, completed] = state_bytes(mine.map(|p| p.record.state));
    let landed = mine.and_then(|p| p.offset).map_or(0, |o| o + 1);
    for b in [relative, calls, completed, landed] {
        put(b);
    }
    // The key's zombie send, if the zombie is of this key.
    let zombie = s.zombie.filter(|r| r.state_key.key as usize == k);
    let relative = zombie.map_or(0, |r| 1 + r.state_key.slot() as u8 % SLOTS_PER_KEY as u8);
    let [_, calls, completed] = state_bytes(zombie.map(|r| r.state));
    for b in [relative, calls, completed] {
        put(b);
    }
    let first = k * SLOTS_PER_KEY;
    for slot in first..first + SLOTS_PER_KEY {
        for b in state_bytes(s.cache.get(slot)) {
            put(b);
        }
        put(s.acked_offset.get(slot).map_or(0, |o| o + 1));
        let log = s.log.get(slot);
        for b in state_bytes(log.map(|r| r.latest)) {
            put(b);
        }
        put(log.map_or(0, |r| r.offset));
        let [hi, lo] = log.map_or(0, |r| r.landed.code()).to_be_bytes();
        put(hi);
        put(lo);
    }
    for slot in first..first + SLOTS_PER_KEY {
        for c in 0..MAX_CALLS as u8 {
            put(s.supplier_runs.get(StateKey::of_slot(slot), c));
        }
    }
    debug_assert_eq!(at, SIGNATURE);
    sig
}

/// The state with every key `k` renamed `to[k]` (a permutation of `0..MAX_KEYS`).
pub fn rename(s: &State, to: &Renaming) -> State {
    let mut t = s.clone();
    for (k, &n) in to.iter().enumerate() {
        let n = n as usize;
        t.next_seq[n] = s.next_seq[k];
        t.finished[n] = s.finished[k];
        t.next_action[n] = s.next_action[k];
        t.phase[n] = s.phase[k];
        t.call_index_behind[n] = s.call_index_behind[k];
        t.key_boundary[n] = s.key_boundary[k];
        t.committed_outputs[n] = s.committed_outputs[k];
        let pending = t.pending.iter_mut().zip(&s.pending);
        for (tc, sc) in pending.chain([(&mut t.completed, &s.completed)]) {
            if let (Some(tc), Some(sc)) = (tc.as_mut(), sc) {
                tc.next_seq[n] = sc.next_seq[k];
                tc.finished[n] = sc.finished[k];
                tc.next_action[n] = sc.next_action[k];
            }
        }
        for i in 0..SLOTS_PER_KEY {
            let (from, into) = (k * SLOTS_PER_KEY + i, n * SLOTS_PER_KEY + i);
            t.cache.set(into, s.cache.get(from));
            t.acked_offset.set(into, s.acked_offset.get(from));
            t.log.set(into, s.log.get(from));
            let (from, into) = (StateKey::of_slot(from), StateKey::of_slot(into));
            for c in 0..MAX_CALLS as u8 {
                t.supplier_runs.set(into, c, s.supplier_runs.get(from, c));
            }
        }
    }
    for (k, &n) in to.iter().enumerate() {
        t.puts[n as usize] = s.puts[k].map(|mut put| {
            put.record.state_key.key = n;
            put
        });
    }
    t.zombie = s.zombie.map(|mut r| {
        r.state_key.key = to[r.state_key.key as usize];
        r
    });
    t
}

/// The renaming that sorts the first `keys` keys by signature within each partition
/// class (`partitions` classes); keys from `keys` on stay put.
pub fn sorting_renaming(s: &State, keys: usize, partitions: usize) -> Renaming {
    let mut to: Renaming = std::array::from_fn(|k| k as u8);
    let sigs: [[u8; SIGNATURE]; MAX_KEYS] = std::array::from_fn(|k| signature(s, k));
    for p in 0..partitions {
        let mut members = [0usize; MAX_KEYS];
        let mut n = 0;
        for k in (p..keys).step_by(partitions) {
            members[n] = k;
            n += 1;
        }
        let mut sorted = members;
        sorted[..n].sort_by(|a, b| sigs[*a].cmp(&sigs[*b]));
        // The key with the i-th smallest signature takes the i-th name of the class.
        for i in 0..n {
            to[sorted[i]] = members[i] as u8;
        }
    }
    to
}

/// The representative of a state's class for `KEYS` keys over `PARTITIONS` partitions.
pub fn representative<const KEYS: usize, const PARTITIONS: usize>(s: &State) -> State {
    rename(s, &sorting_renaming(s, KEYS, PARTITIONS))
}

#[cfg(test)]
mod tests {
    //! Key symmetry: the representative is a canonical form of the renaming classes, the
    //! model commutes with renamings, and a symmetric DFS keeps every verdict.
    use std::collections::{BTreeSet, HashSet, VecDeque};

    use stateright::{Checker, Model};

    use super::super::*;
    use super::{rename, Renaming};

    fn model(design: Design, overrides: &[(&str, &str)]) -> Durable {
        Durable::build(design.name(), &Settings::parse(PARAMS, overrides).unwrap()).unwrap()
    }

    /// Every reachable state, by plain breadth-first search.
    fn reachable(m: &Durable) -> Vec<State> {
        let mut seen: HashSet<State> = HashSet::new();
        let mut queue: VecDeque<State> = m.init_states().into();
        let mut all = Vec::new();
        while let Some(s) = queue.pop_front() {
            if !seen.insert(s.clone()) {
                continue;
            }
            let mut actions = Vec::new();
            m.actions(&s, &mut actions);
            for a in actions {
                if let Some(next) = m.next_state(&s, a) {
                    queue.push_back(next);
                }
            }
            all.push(s);
        }
        all
    }

    /// Renamings of the first `keys` keys that keep every key in its partition.
    fn renamings(keys: usize, partitions: usize) -> Vec<Renaming> {
        let perms: [[u8; 3]; 6] = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        perms
            .into_iter()
            .filter(|to| {
                (0..MAX_KEYS).all(|k| {
                    let n = to[k] as usize;
                    if k >= keys {
                        n == k
                    } else {
                        n < keys && n % partitions == k % partitions
                    }
                })
            })
            .collect()
    }

    fn successors(m: &Durable, s: &State) -> HashSet<State> {
        let mut actions = Vec::new();
        m.actions(s, &mut actions);
        actions
            .into_iter()
            .filter_map(|a| m.next_state(s, a))
            .collect()
    }

    #[test]
    fn renamings_commute_with_the_model_and_the_representative_is_canonical() {
        // Failed sends (before and after landing) with two keys; three keys without; two
        // keys with two checkpoints pending at once; every key's put in flight at once; a
        // send that outlives its crash.
        for (keys, partitions, failures, checkpoints, concurrent, puts, zombie) in [
            ("3", "1", "0", "1", "1", "false", "false"),
            ("3", "2", "0", "1", "1", "false", "false"),
            ("2", "1", "1", "1", "1", "false", "false"),
            ("2", "1", "0", "2", "2", "false", "false"),
            ("3", "1", "0", "1", "1", "true", "false"),
            ("2", "1", "1", "1", "1", "true", "false"),
            ("3", "1", "0", "1", "1", "false", "true"),
        ] {
            for design in DESIGNS {
                let m = model(
                    design,
                    &[
                        ("keys", keys),
                        ("partitions", partitions),
                        ("inputs", "1"),
                        ("calls", "1"),
                        ("checkpoints", checkpoints),
                        ("concurrent-checkpoints", concurrent),
                        ("send-failures", failures),
                        ("fail-after-landing", "true"),
                        ("concurrent-puts", puts),
                        ("zombie-sends", zombie),
                    ],
                );
                if zombie == "true" {
                    // The zombie is renamed: some reachable state has one.
                    assert!(reachable(&m).iter().any(|s| s.zombie.is_some()));
                }
                if puts == "true" {
                    // The puts are renamed: some reachable state has several.
                    assert!(reachable(&m).iter().any(|s| s.puts_in_flight().count() > 1));
                }
                if concurrent == "2" {
                    // The pending slots are renamed: some reachable state has two.
                    assert!(reachable(&m).iter().any(|s| s.pending_count() == 2));
                }
                let rep = m.representative().expect("symmetric bounds");
                let group = renamings(m.bounds.keys as usize, m.bounds.partitions as usize);
                assert_eq!(
                    group.len(),
                    if (keys, partitions) == ("3", "1") {
                        6
                    } else {
                        2
                    }
                );
                let properties = m.properties();
                let states = reachable(&m);
                let mut classes = HashSet::new();
                for s in &states {
                    let r = rep(s);
                    assert_eq!(rep(&r), r, "idempotent");
                    classes.insert(r.clone());
                    let next: HashSet<State> = successors(&m, s);
                    for to in &group {
                        let t = rename(s, to);
                        assert_eq!(rep(&t), r, "one representative per class: {to:?} of {s:?}");
                        for p in &properties {
                            assert_eq!(
                                (p.condition)(&m, &t),
                                (p.condition)(&m, s),
                                "{} under {to:?}",
                                p.name
                            );
                        }
                        let renamed: HashSet<State> = next.iter().map(|n| rename(n, to)).collect();
                        assert_eq!(successors(&m, &t), renamed, "{to:?} of {s:?}");
                    }
                }
                assert!(
                    classes.len() < states.len(),
                    "{keys} keys, {partitions} partitions, {}",
                    design.name()
                );
            }
        }
    }

    #[test]
    fn one_key_per_partition_has_no_symmetry() {
        assert!(model(Design::Fixed, &[("keys", "1")])
            .representative()
            .is_none());
        let two = model(Design::Fixed, &[("partitions", "2")]);
        assert!(two.representative().is_none());
    }

    /// Unique states and discovered properties of an exhaustive DFS.
    fn dfs(m: &Durable, symmetric: bool) -> (usize, BTreeSet<&'static str>) {
        let builder = m.clone().checker();
        let builder = match (symmetric, m.representative()) {
            (true, Some(f)) => builder.symmetry_fn(f),
            _ => builder,
        };
        let run = builder.spawn_dfs().join();
        (
            run.unique_state_count(),
            run.discoveries().into_keys().collect(),
        )
    }

    /// Setting overrides and, per design, unique states without and with symmetry.
    type Case = (
        &'static [(&'static str, &'static str)],
        [(usize, usize); DESIGNS.len()],
    );

    #[test]
    fn symmetric_dfs_keeps_every_verdict_with_fewer_states() {
        let cases: [Case; 5] = [
            (&[("inputs", "1")], PIN_ONE_INPUT),
            (
                &[("inputs", "1"), ("concurrent-puts", "true")],
                PIN_CONCURRENT_PUTS,
            ),
            (
                &[
                    ("inputs", "1"),
                    ("concurrent-checkpoints", "2"),
                    ("checkpoints", "3"),
                ],
                PIN_CONCURRENT,
            ),
            (
                &[
                    ("keys", "3"),
                    ("inputs", "1"),
                    ("calls", "1"),
                    ("checkpoints", "1"),
                ],
                PIN_THREE_KEYS_ONE_PARTITION,
            ),
            (
                &[
                    ("keys", "3"),
                    ("partitions", "2"),
                    ("inputs", "1"),
                    ("calls", "1"),
                    ("checkpoints", "1"),
                ],
                PIN_THREE_KEYS,
            ),
        ];
        for (overrides, pins) in cases {
            for (design, pin) in DESIGNS.into_iter().zip(pins) {
                let m = model(design, overrides);
                let (full, found) = dfs(&m, false);
                let (reduced, found_reduced) = dfs(&m, true);
                println!("{overrides:?} {}: {full} -> {reduced}", design.name());
                assert_eq!(found_reduced, found, "{overrides:?} {}", design.name());
                assert_eq!((full, reduced), pin, "{overrides:?} {}", design.name());
            }
        }
    }

    #[test]
    fn symmetric_dfs_at_default_bounds() {
        let m = Durable::new(Design::Fixed);
        let (full, found) = dfs(&m, false);
        let (reduced, found_reduced) = dfs(&m, true);
        println!("default fixed: {full} -> {reduced}");
        assert_eq!(found_reduced, found);
        // Every reachability property is reached, no safety property fails.
        assert_eq!(found.len(), property::REACHABILITY.len());
        assert_eq!((full, reduced), PIN_DEFAULT_FIXED);
    }

    /// Unique states of `fixed` at default bounds (two keys, one partition), DFS without
    /// and with symmetry.
    const PIN_DEFAULT_FIXED: (usize, usize) = (1_647_487, 823_821);

    /// (unique states without, with symmetry) per design, in [`DESIGNS`] order.
    const PIN_ONE_INPUT: [(usize, usize); DESIGNS.len()] = [
        (40_455, 20_261),
        (21_095, 10_581),
        (21_191, 10_629),
        (21_095, 10_581),
        (22_105, 11_086),
    ];
    /// The `concurrent-puts` scenario: every key's put in flight at once.
    const PIN_CONCURRENT_PUTS: [(usize, usize); DESIGNS.len()] = [
        (57_576, 28_830),
        (34_630, 17_357),
        (34_748, 17_416),
        (34_630, 17_357),
        (35_794, 17_939),
    ];
    /// The `concurrent-checkpoints` scenario: two pending at once, three in all.
    const PIN_CONCURRENT: [(usize, usize); DESIGNS.len()] = [
        (158_217, 79_179),
        (71_185, 35_663),
        (71_633, 35_887),
        (71_185, 35_663),
        (76_797, 38_469),
    ];
    const PIN_THREE_KEYS_ONE_PARTITION: [(usize, usize); DESIGNS.len()] = [
        (84_881, 14_429),
        (56_288, 9_617),
        (56_288, 9_617),
        (56_288, 9_617),
        (56_288, 9_617),
    ];
    const PIN_THREE_KEYS: [(usize, usize); DESIGNS.len()] = [
        (51_937, 26_241),
        (29_456, 14_954),
        (29_456, 14_954),
        (29_456, 14_954),
        (29_456, 14_954),
    ];
}
