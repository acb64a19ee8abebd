//! The action state store's record format: how one put's state key and whole action
//! state become a log record's key and value, and back, and the fence record a restore
//! appends to every partition before it reads the log.
//!
//! A format of ours, compact and binary (see [`encode_record`]), written once per put
//! (flink-agents issue 1158: every put carries the whole state). Every record carries
//! the epoch of the incarnation that wrote it ([`super::Epoch`]), so that a replay can
//! tell a zombie's late send from the newer incarnation's records. Records of format 1,
//! written before records had an epoch, still decode, as action states of epoch 0.
//! Decoding is strict: a damaged record is an error naming the part and the problem,
//! never a panic and never a silently different state. The store ([`super::store`]) and
//! the driver's restore ([`fence_record`]) are the only writers; the format's own tests
//! are `steadfast/tests/durable_records.rs`.

use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::log::{LogRecord, Partition};
use super::{ActionState, CallOutcome, CallResult, Datum, Epoch, StateKey};

/// First byte of every key and value this store writes: the record format's version.
/// (Records of the earlier JSON format start with `{` and are refused by name.)
pub const RECORD_FORMAT: u8 = 2;

/// The format before records carried an epoch and a kind: still read, as epoch 0.
const FORMAT_1: u8 = 1;
/// Key byte after the format: an action state record.
const KIND_STATE: u8 = 0;
/// Key byte after the format: a fence record.
const KIND_FENCE: u8 = 1;

/// The record a put appends: where, and its bytes (this format).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutRecord {
    /// Partition of the state's input key.
    pub partition: Partition,
    /// Record key bytes.
    pub key: Vec<u8>,
    /// Record value bytes.
    pub value: Vec<u8>,
}

/// What one record of the log holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// The whole state of one action for one input, as a put saved it.
    State {
        /// Which state.
        key: StateKey,
        /// The state.
        state: ActionState,
        /// Epoch of the incarnation that wrote it (0 for a record of format 1).
        epoch: Epoch,
    },
    /// A restore's fence: from here on, states of lower epochs are a zombie's.
    Fence {
        /// Epoch of the restoring incarnation that appended it.
        epoch: Epoch,
    },
}

/// Encode one action state record written by incarnation `epoch` into `key_buf` and
/// `value_buf` (both cleared first; reused so that a put allocates nothing once they
/// have grown).
///
/// Little-endian, lengths as `u32` before their bytes:
/// - key: format byte (2), kind byte (0: action state), input key, `seq` (`u64`),
///   action name;
/// - value: format byte (2), epoch (`u64`), flags (bit 0: completed, bit 1: an output
///   follows), the number of call results (`u32`), each as function id, argument
///   digest (`u64`), outcome tag (0: value, 1: error) and the value's JSON text or the
///   error message; then the output's JSON text if flagged.
///
/// A fence record ([`fence_record`]) is key: format byte, kind byte 1; value: format
/// byte, epoch. Format 1, still read, had neither kind nor epoch: key and value start
/// with byte 1 and go on with the state's fields as above.
///
/// Values ([`super::Datum`]) are JSON text, so a value decodes to what serde_json
/// makes of it, as before. Fails only for a field longer than `u32::MAX` bytes.
pub fn encode_record(
    key: &StateKey,
    state: &ActionState,
    epoch: Epoch,
    key_buf: &mut Vec<u8>,
    value_buf: &mut Vec<u8>,
) -> Result<(), String> {
    encode_parts(
        &key.key,
        key.seq,
        &key.action,
        state,
        epoch,
        key_buf,
        value_buf,
    )
}

/// [`encode_record`] for the state key's parts, borrowed: the store's puts need not
/// own a [`StateKey`].
pub(crate) fn encode_parts(
    key: &str,
    seq: u64,
    action: &str,
    state: &ActionState,
    epoch: Epoch,
    key_buf: &mut Vec<u8>,
    value_buf: &mut Vec<u8>,
) -> Result<(), String> {
    key_buf.clear();
    key_buf.extend_from_slice(&[RECORD_FORMAT, KIND_STATE]);
    put_bytes(key_buf, key.as_bytes())?;
    key_buf.extend_from_slice(&seq.to_le_bytes());
    put_bytes(key_buf, action.as_bytes())?;

    value_buf.clear();
    value_buf.push(RECORD_FORMAT);
    value_buf.extend_from_slice(&epoch.to_le_bytes());
    value_buf.push(u8::from(state.completed) | u8::from(state.output.is_some()) << 1);
    put_len(value_buf, state.call_results.len())?;
    for r in &state.call_results {
        put_bytes(value_buf, r.function.as_bytes())?;
        value_buf.extend_from_slice(&r.args_digest.to_le_bytes());
        match &r.outcome {
            CallOutcome::Value(v) => {
                value_buf.push(0);
                put_datum(value_buf, v)?;
            }
            CallOutcome::Error(m) => {
                value_buf.push(1);
                put_bytes(value_buf, m.as_bytes())?;
            }
        }
    }
    if let Some(output) = &state.output {
        put_datum(value_buf, output)?;
    }
    Ok(())
}

/// The fence record incarnation `epoch` appends to `partition` before its restore reads
/// the log (format in [`encode_record`]).
pub fn fence_record(partition: Partition, epoch: Epoch) -> PutRecord {
    let mut value = Vec::with_capacity(9);
    value.push(RECORD_FORMAT);
    value.extend_from_slice(&epoch.to_le_bytes());
    PutRecord {
        partition,
        key: vec![RECORD_FORMAT, KIND_FENCE],
        value,
    }
}

fn put_len(buf: &mut Vec<u8>, len: usize) -> Result<(), String> {
    let len = u32::try_from(len).map_err(|_| format!("a field of {len} bytes is too long"))?;
    buf.extend_from_slice(&len.to_le_bytes());
    Ok(())
}

fn put_bytes(buf: &mut Vec<u8>, bytes: &[u8]) -> Result<(), String> {
    put_len(buf, bytes.len())?;
    buf.extend_from_slice(bytes);
    Ok(())
}

/// A value's JSON text behind its length, written in place (no temporary string).
fn put_datum(buf: &mut Vec<u8>, value: &Datum) -> Result<(), String> {
    let at = buf.len();
    buf.extend_from_slice(&[0; 4]);
    // Writing a `Value` to a `Vec` cannot fail (its map keys are strings).
    let _ = serde_json::to_writer(&mut *buf, value);
    let len = buf.len() - at - 4;
    let len = u32::try_from(len).map_err(|_| format!("a value of {len} bytes is too long"))?;
    buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
    Ok(())
}

/// A cursor over one record part; every read checks what is left.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if self.rest.len() < n {
            return Err(format!(
                "truncated: {what} needs {n} bytes, {} left",
                self.rest.len()
            ));
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    fn byte(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn len(&mut self, what: &str) -> Result<usize, String> {
        Ok(u32::from_le_bytes(self.array(what)?) as usize)
    }

    fn bytes(&mut self, what: &str) -> Result<&'a [u8], String> {
        let n = self.len(what)?;
        self.take(n, what)
    }

    fn string(&mut self, what: &str) -> Result<String, String> {
        let bytes = self.bytes(what)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|e| format!("{what} is not UTF-8: {e}"))
    }

    fn datum(&mut self, what: &str) -> Result<Datum, String> {
        serde_json::from_slice(self.bytes(what)?).map_err(|e| format!("{what}: {e}"))
    }

    fn format(&mut self) -> Result<u8, String> {
        match self.byte("format")? {
            format @ (FORMAT_1 | RECORD_FORMAT) => Ok(format),
            other => Err(format!("unknown record format {other}")),
        }
    }

    fn end(self) -> Result<(), String> {
        match self.rest.len() {
            0 => Ok(()),
            n => Err(format!("{n} bytes after the end")),
        }
    }
}

/// What a record's key says: its format, and the state key (`None` for a fence).
fn decode_key(bytes: &[u8]) -> Result<(u8, Option<StateKey>), String> {
    let mut r = Reader { rest: bytes };
    let format = r.format()?;
    let kind = match format {
        FORMAT_1 => KIND_STATE,
        _ => r.byte("kind")?,
    };
    let key = match kind {
        KIND_STATE => Some(state_key(&mut r)?),
        KIND_FENCE => None,
        other => return Err(format!("unknown record kind {other}")),
    };
    r.end()?;
    Ok((format, key))
}

fn state_key(r: &mut Reader<'_>) -> Result<StateKey, String> {
    let key = r.string("input key")?;
    let seq = r.u64("sequence number")?;
    let action = r.string("action name")?;
    Ok(StateKey { key, seq, action })
}

/// A record's value behind a key of `format`: its epoch, and the state unless the key
/// is a fence's.
fn decode_value(
    bytes: &[u8],
    format: u8,
    fence: bool,
) -> Result<(Epoch, Option<ActionState>), String> {
    let mut r = Reader { rest: bytes };
    let found = r.format()?;
    if found != format {
        return Err(format!(
            "record format {found} behind a key of format {format}"
        ));
    }
    let epoch = match format {
        FORMAT_1 => 0,
        _ => r.u64("epoch")?,
    };
    let state = match fence {
        true => None,
        false => Some(state_body(&mut r)?),
    };
    r.end()?;
    Ok((epoch, state))
}

fn state_body(r: &mut Reader<'_>) -> Result<ActionState, String> {
    let flags = r.byte("flags")?;
    if flags > 0b11 {
        return Err(format!("unknown flags {flags:#04b}"));
    }
    let count = r.len("call result count")?;
    // Grown as results decode: a damaged count must not reserve memory.
    let mut call_results = Vec::new();
    for _ in 0..count {
        let function = r.string("function id")?;
        let args_digest = r.u64("argument digest")?;
        let outcome = match r.byte("outcome tag")? {
            0 => CallOutcome::Value(r.datum("call value")?),
            1 => CallOutcome::Error(r.string("call error")?),
            tag => return Err(format!("unknown outcome tag {tag}")),
        };
        call_results.push(CallResult {
            function,
            args_digest,
            outcome,
        });
    }
    let output = match flags & 0b10 {
        0 => None,
        _ => Some(r.datum("output")?),
    };
    Ok(ActionState {
        call_results,
        completed: flags & 1 == 1,
        output,
    })
}

/// Decode one record of the log: an action state with its epoch, or a fence (the
/// format of [`encode_record`]; a record of format 1 is a state of epoch 0). A damaged
/// record gives [`StoreError::Decode`] naming the part and what is wrong.
pub fn decode_entry(record: &LogRecord) -> Result<Entry, StoreError> {
    let decode = |part: &str, reason: String| StoreError::Decode {
        partition: record.partition,
        offset: record.offset,
        reason: format!("{part}: {reason}"),
    };
    let (format, key) = decode_key(&record.key).map_err(|e| decode("key", e))?;
    let (epoch, state) =
        decode_value(&record.value, format, key.is_none()).map_err(|e| decode("value", e))?;
    Ok(match (key, state) {
        (Some(key), Some(state)) => Entry::State { key, state, epoch },
        _ => Entry::Fence { epoch },
    })
}

/// The action state a record holds, for readers of the log that look for states:
/// `None` for a fence record. Errors as [`decode_entry`].
pub fn decode_record(record: &LogRecord) -> Result<Option<(StateKey, ActionState)>, StoreError> {
    Ok(match decode_entry(record)? {
        Entry::State { key, state, .. } => Some((key, state)),
        Entry::Fence { .. } => None,
    })
}
