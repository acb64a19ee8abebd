//! The observable projection of a durable-actions run, as the blocking driver
//! ([`super::Driver::projection`]) reports it: a small serde value for tests and tools
//! that inspect a run. (Conformance compares the model with the operator through its own
//! projection, `steadfast_conformance::durable::View`, built from the same accessors.)
//!
//! It holds per key the operator's keyed state, the store's cache, the log's
//! contents per partition, the outputs, and how often the supplier ran per durable
//! call. Maps are flattened into sorted lists so the value serialises to JSON.

use serde::{Deserialize, Serialize};

use super::log::{LogRecord, Offset, Partition};
use super::operator::Operator;
use super::store::{decode_record, StoreError};
use super::{ActionState, CallRef, Datum, StateKey};

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
    /// Keyed state per key, sorted by key (empty when not running).
    pub keys: Vec<KeyProjection>,
    /// The store's cache, sorted by state key (empty when not running).
    pub cache: Vec<CachedState>,
    /// Log contents, indexed by partition, in offset order.
    pub log: Vec<Vec<LoggedState>>,
    /// Every output emitted, across crashes, in emission order.
    pub emitted: Vec<OutputRecord>,
    /// Outputs committed by completed checkpoints, in order.
    pub committed: Vec<OutputRecord>,
    /// Supplier runs per durable call, sorted by call.
    pub supplier_calls: Vec<CallCount>,
}

/// Project an operator's keyed state.
pub fn project_keys(op: &Operator) -> Vec<KeyProjection> {
    let mut keys: Vec<KeyProjection> = op
        .keys()
        .iter()
        .map(|(key, ks)| KeyProjection {
            key: key.clone(),
            next_seq: ks.next_seq,
            queue: ks.queue.iter().map(|q| (q.seq, q.action.clone())).collect(),
            pending_inputs: ks.pending_inputs.iter().map(|p| p.seq).collect(),
            last_completed: ks.last_completed,
        })
        .collect();
    keys.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    keys
}

/// Project an operator's store cache.
pub fn project_cache(op: &Operator) -> Vec<CachedState> {
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

/// Decode a partition's records.
pub fn project_log(records: &[LogRecord]) -> Result<Vec<LoggedState>, StoreError> {
    records
        .iter()
        .map(|r| {
            let (state_key, state) = decode_record(r)?;
            Ok(LoggedState {
                offset: r.offset,
                state_key,
                state,
            })
        })
        .collect()
}
