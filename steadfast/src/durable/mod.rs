//! Durable actions: saved call results that survive checkpoint and restore.
//!
//! This is the production side of flink-agents issue 1158 ("Reuse saved Kafka action
//! results after recovery"). An action's external calls are made through durable
//! calls whose results are saved to a log; a restored job must reuse a saved result
//! instead of calling again. The pieces here are sans-IO:
//! - [`Partition`], [`Offset`], [`LogRecord`], [`LogError`]: the vocabulary of the
//!   partitioned, offset-addressed log the store writes to (what a Kafka topic offers);
//! - [`ActionStateStore`]: the action state store, a plain value (cache, acknowledged
//!   offsets, prune, [`RecoveryMarker`], [`Rebuild`] from records handed to it);
//! - [`encode_record`], [`decode_record`], [`fence_record`]: the store's record format:
//!   action states and fences, each with the epoch of the incarnation that wrote it
//!   (strict decode);
//! - [`Operator`]: the sans-IO action execution operator (events in, effects out; a put
//!   is an append and a flush, its acknowledgement an event).
//!
//! The log itself (the `Log` trait, the in-memory, file and Kafka logs) and the blocking
//! driver that executes the operator's effects on one are in the `steadfast-log` and
//! `steadfast-kafka` crates.

mod defect;
mod error;
mod log;
mod operator;
mod record;
mod store;

use serde::{Deserialize, Serialize};

#[cfg(feature = "defects")]
pub use defect::Defect;
pub use log::{LogError, LogRecord, Offset, Partition};
pub use operator::{
    ActionBody, ActionDef, ActionStep, CallChain, Checkpoint, Effect, Event, KeyActivity, KeyState,
    Limits, Operator, OperatorError, PendingInput, PutId, QueuedAction, Restoring, Scheduling,
};
pub use record::{
    decode_entry, decode_record, encode_record, fence_record, Entry, PutRecord, RECORD_FORMAT,
};
pub use store::{
    merge_recovery_markers, ActionStateStore, MergeError, Ownership, PruneReport, Rebuild,
    RebuildReport, RecoveryMarker, StoreError,
};

/// Values flowing through actions: inputs, call arguments, call results, outputs.
pub type Datum = serde_json::Value;

/// The incarnation of an operator that wrote a record: the first incarnation is epoch 1,
/// and each restore starts the next (so the epoch is the number of crashes plus one).
/// Epoch 0 is a record of the old format, written before records carried an epoch.
///
/// Epochs fence zombie sends: a restore first appends a fence record of its new epoch to
/// every partition, and a later replay skips every action state record whose epoch is
/// below the latest fence before it (a send of a crashed incarnation that landed after a
/// newer one took over). This works on any log, with no broker transactions.
pub type Epoch = u64;

/// Identity of one action state: the input's key, the input's sequence number for
/// that key, and the action's name. One log record per put carries the whole state.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StateKey {
    /// The input's key.
    pub key: String,
    /// Sequence number of the input for that key (0, 1, 2, ...).
    pub seq: u64,
    /// Name of the action.
    pub action: String,
}

impl StateKey {
    /// The state key of input `seq` of `key` for `action`, from borrowed parts.
    pub(crate) fn of(key: &str, seq: u64, action: &str) -> StateKey {
        StateKey {
            key: key.to_string(),
            seq,
            action: action.to_string(),
        }
    }
}

/// Identity of one durable call: a state key plus the call's index in the action.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CallRef {
    /// The input's key.
    pub key: String,
    /// Sequence number of the input for that key.
    pub seq: u64,
    /// Name of the action.
    pub action: String,
    /// Index of the durable call inside the action (0 for the first call).
    pub index: u32,
}

impl CallRef {
    /// The state key this call's result is saved under.
    pub fn state_key(&self) -> StateKey {
        StateKey {
            key: self.key.clone(),
            seq: self.seq,
            action: self.action.clone(),
        }
    }
}

/// What an external call returned: a value or an error (both are saved and reused).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallOutcome {
    /// The call returned a value.
    Value(Datum),
    /// The call failed with this message.
    Error(String),
}

/// One saved call result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallResult {
    /// Identifier of the called function.
    pub function: String,
    /// Digest of the call's arguments ([`args_digest`]).
    pub args_digest: u64,
    /// What the call returned.
    pub outcome: CallOutcome,
}

/// The whole state of one action for one input, written as one log record per put.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionState {
    /// Saved call results in call order (cleared when the action completes).
    pub call_results: Vec<CallResult>,
    /// Whether the action finished.
    pub completed: bool,
    /// The action's output, set when it completes.
    pub output: Option<Datum>,
}

/// Partition of a key: all states of one key go to one partition, in order.
/// FNV-1a over the key's bytes, so the mapping is stable across runs and builds.
pub fn partition_for(key: &str, partitions: u32) -> Partition {
    (fnv1a(key.as_bytes()) % u64::from(partitions.max(1))) as Partition
}

/// Digest of a call's arguments: FNV-1a over their compact JSON text (serde_json
/// writes object fields in sorted order, so equal arguments give equal digests). The
/// text is hashed as serde_json writes it, without building it.
pub fn args_digest(args: &Datum) -> u64 {
    let mut hash = Fnv1a(FNV_OFFSET);
    // Writing a `Value` to an infallible writer cannot fail (its map keys are strings).
    let _ = serde_json::to_writer(&mut hash, args);
    // The text is all in once flushed (the sink buffers nothing, so this costs nothing).
    let _ = std::io::Write::flush(&mut hash);
    hash.0
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a as a byte sink.
struct Fnv1a(u64);

impl std::io::Write for Fnv1a {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash = Fnv1a(FNV_OFFSET);
    let _ = std::io::Write::write(&mut hash, bytes);
    hash.0
}
