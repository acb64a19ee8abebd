//! The action state store's record format: how one put's state key and whole action
//! state become a log record's key and value, and back.
//!
//! A format of ours, compact and binary (see [`encode_record`]), written once per put
//! (flink-agents issue 1158: every put carries the whole state). Decoding is strict: a
//! damaged record is an error naming the part and the problem, never a panic and never
//! a silently different state. The store ([`super::store`]) is the only writer; the
//! format's own tests are `impl/tests/durable_records.rs`.

use super::log::LogRecord;
use super::store::StoreError;
use super::{ActionState, CallOutcome, CallResult, Datum, StateKey};

/// First byte of every key and value this store writes: the record format's version.
/// (Records of the earlier JSON format start with `{` and are refused by name.)
pub const RECORD_FORMAT: u8 = 1;

/// Encode one action state record into `key_buf` and `value_buf` (both cleared
/// first; reused so that a put allocates nothing once they have grown).
///
/// Little-endian, lengths as `u32` before their bytes:
/// - key: format byte, input key, `seq` (`u64`), action name;
/// - value: format byte, flags (bit 0: completed, bit 1: an output follows), the
///   number of call results (`u32`), each as function id, argument digest (`u64`),
///   outcome tag (0: value, 1: error) and the value's JSON text or the error
///   message; then the output's JSON text if flagged.
///
/// Values ([`super::Datum`]) are JSON text, so a value decodes to what serde_json
/// makes of it, as before. Fails only for a field longer than `u32::MAX` bytes.
pub fn encode_record(
    key: &StateKey,
    state: &ActionState,
    key_buf: &mut Vec<u8>,
    value_buf: &mut Vec<u8>,
) -> Result<(), String> {
    encode_parts(&key.key, key.seq, &key.action, state, key_buf, value_buf)
}

/// [`encode_record`] for the state key's parts, borrowed: the store's puts need not
/// own a [`StateKey`].
pub(crate) fn encode_parts(
    key: &str,
    seq: u64,
    action: &str,
    state: &ActionState,
    key_buf: &mut Vec<u8>,
    value_buf: &mut Vec<u8>,
) -> Result<(), String> {
    key_buf.clear();
    key_buf.push(RECORD_FORMAT);
    put_bytes(key_buf, key.as_bytes())?;
    key_buf.extend_from_slice(&seq.to_le_bytes());
    put_bytes(key_buf, action.as_bytes())?;

    value_buf.clear();
    value_buf.push(RECORD_FORMAT);
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

    fn format(&mut self) -> Result<(), String> {
        match self.byte("format")? {
            RECORD_FORMAT => Ok(()),
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

fn decode_key(bytes: &[u8]) -> Result<StateKey, String> {
    let mut r = Reader { rest: bytes };
    r.format()?;
    let key = r.string("input key")?;
    let seq = r.u64("sequence number")?;
    let action = r.string("action name")?;
    r.end()?;
    Ok(StateKey { key, seq, action })
}

fn decode_state(bytes: &[u8]) -> Result<ActionState, String> {
    let mut r = Reader { rest: bytes };
    r.format()?;
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
    r.end()?;
    Ok(ActionState {
        call_results,
        completed: flags & 1 == 1,
        output,
    })
}

/// Decode one action state record (key: the state key, value: the whole state; the
/// format of [`encode_record`]). A damaged record gives [`StoreError::Decode`] naming
/// the part and what is wrong.
pub fn decode_record(record: &LogRecord) -> Result<(StateKey, ActionState), StoreError> {
    let decode = |part: &str, reason: String| StoreError::Decode {
        partition: record.partition,
        offset: record.offset,
        reason: format!("{part}: {reason}"),
    };
    let sk = decode_key(&record.key).map_err(|e| decode("key", e))?;
    let state = decode_state(&record.value).map_err(|e| decode("value", e))?;
    Ok((sk, state))
}
