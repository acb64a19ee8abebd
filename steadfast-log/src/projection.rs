//! The observable projection of a durable-actions run, as the blocking driver
//! ([`crate::Driver::projection`]) reports it: a serde value for tests and tools that
//! inspect a run. Conformance compares it with the model: the `durable-driver` binding
//! (`steadfast_conformance::durable::driver`) maps it onto the model's view after every
//! event the driver takes.
//!
//! It holds per key the operator's keyed state and what the key is doing, the operator's
//! failure, the store's cache, the log's contents per partition, the checkpoints pending
//! and the latest completed one, the outputs, and how often the supplier ran per durable
//! call (and how many of those runs never had their result land). Maps are flattened into
//! sorted lists so the value serialises to JSON.

use serde::{Deserialize, Serialize};

use steadfast::durable::decode_record;
use steadfast::durable::{
    ActionState, CallRef, Checkpoint, Datum, KeyState, LogRecord, Offset, Operator, Partition,
    StateKey, StoreError,
};

/// Keyed state of one key, as projected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyProjection {
    /// The key.
    pub key: String,
    /// Sequence number the next input gets.
    pub next_seq: u64,
    /// Queued actions of the current input, head first: (sequence, action name).
    pub queue: Vec<(u64, String)>,
    /// Sequence numbers of inputs waiting behind the current one.
    pub pending_inputs: Vec<u64>,
    /// Last finished input, if any.
    pub last_completed: Option<u64>,
}

/// What one key of the running operator is doing ([`Operator::activity`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyActivityProjection {
    /// The key.
    pub key: String,
    /// An action of the key is in progress (waiting for a call, a put, or its
    /// completion).
    pub in_progress: bool,
    /// The index of the call whose outcome the key waits for.
    pub awaiting: Option<u32>,
    /// The key waits for its put's answer.
    pub saving: bool,
    /// The key has a step to take on `Event::Continue` (never, between the eager
    /// operator's events).
    pub ready: bool,
}

/// A checkpoint the driver took: its keyed state and recovery marker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointProjection {
    /// Checkpoint id.
    pub id: u64,
    /// Keyed state per key, sorted by key.
    pub keys: Vec<KeyProjection>,
    /// Per partition, the offset a restore replays from.
    pub marker: Vec<Offset>,
}

/// One cached action state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedState {
    /// Its state key.
    pub state_key: StateKey,
    /// The state.
    pub state: ActionState,
    /// Latest acknowledged (partition, offset) the store tracks for it.
    pub offset: Option<(Partition, Offset)>,
}

/// One record of the log, decoded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedState {
    /// Offset inside its partition.
    pub offset: Offset,
    /// The record's state key.
    pub state_key: StateKey,
    /// The state it carries.
    pub state: ActionState,
}

/// One emitted output: input `seq` of `key` finished with these action outputs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputRecord {
    /// The key.
    pub key: String,
    /// The input's sequence number.
    pub seq: u64,
    /// One output per action, in action order.
    pub outputs: Vec<Datum>,
}

/// How often the supplier of one durable call ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCount {
    /// The call.
    pub call: CallRef,
    /// Supplier runs.
    pub count: u32,
}

/// The whole projection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Projection {
    /// Whether an operator is running (false between a crash and a restore).
    pub running: bool,
    /// Why the running operator failed (a put's error reached an action); only a crash
    /// follows.
    pub failure: Option<String>,
    /// Keyed state per key, sorted by key (empty when not running).
    pub keys: Vec<KeyProjection>,
    /// What each key with keyed state or an action in progress is doing, sorted by key
    /// (empty when not running).
    pub activity: Vec<KeyActivityProjection>,
    /// The store's cache, sorted by state key (empty when not running).
    pub cache: Vec<CachedState>,
    /// Log contents, indexed by partition, in offset order.
    pub log: Vec<Vec<LoggedState>>,
    /// Checkpoints taken and neither completed, subsumed nor aborted, oldest first
    /// (a crash drops them).
    pub pending_checkpoints: Vec<CheckpointProjection>,
    /// The latest completed checkpoint, the one a restore starts from.
    pub completed_checkpoint: Option<CheckpointProjection>,
    /// Every output emitted, across crashes, in emission order.
    pub emitted: Vec<OutputRecord>,
    /// Outputs committed by completed checkpoints, in order.
    pub committed: Vec<OutputRecord>,
    /// Supplier runs per durable call, sorted by call.
    pub supplier_calls: Vec<CallCount>,
    /// Per durable call, the supplier runs whose result record never reached the log,
    /// sorted by call: the fix promises `runs <= 1 + unlanded runs`.
    pub unlanded_runs: Vec<CallCount>,
}

fn project_key(key: &str, ks: &KeyState) -> KeyProjection {
    KeyProjection {
        key: key.to_string(),
        next_seq: ks.next_seq,
        queue: ks.queue.iter().map(|q| (q.seq, q.action.clone())).collect(),
        pending_inputs: ks.pending_inputs.iter().map(|p| p.seq).collect(),
        last_completed: ks.last_completed,
    }
}

/// Project an operator's keyed state.
pub(crate) fn project_keys(op: &Operator) -> Vec<KeyProjection> {
    let mut keys: Vec<KeyProjection> = op
        .keys()
        .iter()
        .map(|(key, ks)| project_key(key, ks))
        .collect();
    keys.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    keys
}

/// Project what each key of an operator is doing: every key with keyed state or an
/// action in progress.
pub(crate) fn project_activity(op: &Operator) -> Vec<KeyActivityProjection> {
    let mut keys: Vec<String> = op.keys().keys().cloned().collect();
    keys.extend(op.keys_in_progress());
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|key| {
            let a = op.activity(&key);
            KeyActivityProjection {
                key,
                in_progress: a.in_progress,
                awaiting: a.awaiting,
                saving: a.saving.is_some(),
                ready: a.ready,
            }
        })
        .collect()
}

/// Project a checkpoint.
pub(crate) fn project_checkpoint(cp: &Checkpoint) -> CheckpointProjection {
    CheckpointProjection {
        id: cp.id,
        // A BTreeMap: already sorted by key.
        keys: cp
            .keys
            .iter()
            .map(|(key, ks)| project_key(key, ks))
            .collect(),
        marker: cp.marker.offsets.clone(),
    }
}

/// Project an operator's store cache.
pub(crate) fn project_cache(op: &Operator) -> Vec<CachedState> {
    let store = op.store();
    let offsets = store.latest_offsets();
    store
        .cache()
        .into_iter()
        .map(|(sk, state)| CachedState {
            offset: offsets.get(&sk).copied(),
            state_key: sk,
            state,
        })
        .collect()
}

/// Decode a partition's action state records (fence records hold no state: they are
/// left out, and the states keep their offsets).
pub(crate) fn project_log(records: &[LogRecord]) -> Result<Vec<LoggedState>, StoreError> {
    let mut states = Vec::with_capacity(records.len());
    for r in records {
        if let Some((state_key, state)) = decode_record(r)? {
            states.push(LoggedState {
                offset: r.offset,
                state_key,
                state,
            });
        }
    }
    Ok(states)
}
