//! What goes in and out of the operator: the events it consumes ([`Event`]), the effects
//! it asks for ([`Effect`]) with the puts they name ([`PutId`]), its errors
//! ([`OperatorError`]), its settings ([`Scheduling`], [`Limits`]) and what it reports of
//! a key ([`KeyActivity`]).

use serde::{Deserialize, Serialize};

use crate::durable::log::{LogError, Offset};
use crate::durable::store::{PutRecord, StoreError};
use crate::durable::{CallOutcome, CallRef, Datum, Epoch};

/// How much of a key's work one event does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scheduling {
    /// Run a key's work until it waits on a call or has nothing left.
    #[default]
    Eager,
    /// One step per [`Event::Continue`]: the start of the queue's head (reusing its
    /// saved results up to the first call it must make), or a finished action's
    /// completion put. An input only queues; a call's saved result only leads to
    /// the next call or to a finished action awaiting its completion step.
    Stepwise,
}

/// What one key of the operator is doing
/// ([`Operator::activity`](super::Operator::activity)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyActivity {
    /// An action is in progress: waiting for a call's outcome or a put's answer, or
    /// finished and awaiting its completion put.
    pub in_progress: bool,
    /// The key has a step to take on [`Event::Continue`].
    pub ready: bool,
    /// The index of the call the key waits for.
    pub awaiting: Option<u32>,
    /// The key's put in flight.
    pub saving: Option<PutId>,
}

/// Identity of one put: numbered by the operator from 0 in the order the puts are made,
/// never reused by that operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PutId(pub u64);

/// Events the operator consumes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// A new input for `key`.
    Input {
        /// The key.
        key: String,
        /// The input value.
        value: Datum,
    },
    /// The external call requested by an [`Effect::Call`] returned.
    CallReturned {
        /// Which call.
        call: CallRef,
        /// What it returned.
        outcome: CallOutcome,
    },
    /// The log acknowledged the record of put `put` (an [`Effect::Append`] for `key`) at
    /// `offset` of its partition.
    PutAcked {
        /// The input key the put saves a state of.
        key: String,
        /// Which put.
        put: PutId,
        /// Where the record is.
        offset: Offset,
    },
    /// The log failed put `put` (its send or the flush after it). The record may still
    /// have landed; nothing is cached, and the operator fails.
    PutFailed {
        /// The input key the put saves a state of.
        key: String,
        /// Which put.
        put: PutId,
        /// What the log said.
        error: LogError,
    },
    /// Start running the actions a restore brought back (eager scheduling; with
    /// stepwise scheduling each key goes on with [`Event::Continue`]).
    Resume,
    /// Take the key's next step (stepwise scheduling; see
    /// [`Operator::ready_keys`](super::Operator::ready_keys)).
    Continue {
        /// The key.
        key: String,
    },
}

/// Effects the operator asks its driver to carry out, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Effect {
    /// Run the external call (the supplier) and feed its outcome back as
    /// [`Event::CallReturned`].
    Call {
        /// Which call.
        call: CallRef,
        /// Function identifier.
        function: String,
        /// Arguments.
        args: Datum,
    },
    /// Send this record to the log (a put's first half). Its answer comes back as
    /// [`Event::PutAcked`] or [`Event::PutFailed`] with the same `key` and `put`, after
    /// the [`Effect::Flush`] that follows.
    Append {
        /// The input key the put saves a state of.
        key: String,
        /// Which put.
        put: PutId,
        /// The record: partition and bytes.
        record: PutRecord,
    },
    /// Push every record sent so far out to the log; only then await their
    /// acknowledgements (flink-agents issue 1158: an acknowledgement awaited before the
    /// flush waits out the producer's linger interval). A driver may merge the flushes of
    /// several events into one (group commit).
    Flush,
    /// Input `seq` of `key` finished; its actions' outputs in action order.
    Emit {
        /// The key.
        key: String,
        /// The input's sequence number.
        seq: u64,
        /// One output per configured action.
        outputs: Vec<Datum>,
    },
}

/// Errors of the operator. An error marked *unchanged* leaves the operator as it was
/// before the event; the others fail it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OperatorError {
    /// The log failed a put (its send or the flush after it); the operator is failed.
    /// The record may still have landed.
    #[error("put {put:?} of key {key:?} failed: {error}")]
    PutFailed {
        /// The key whose state the put saves.
        key: String,
        /// Which put.
        put: PutId,
        /// What the log said.
        error: LogError,
    },
    /// A state could not be encoded, or a restore's records do not fit the store; the
    /// operator is failed.
    #[error("store: {0}")]
    Store(StoreError),
    /// A call outcome arrived for a call the operator is not waiting for (unchanged).
    #[error("unexpected call outcome for {0:?}")]
    UnexpectedCall(CallRef),
    /// An answer arrived for a put of `key` the operator is not waiting for (unchanged).
    #[error("unexpected answer for put {put:?} of key {key:?}")]
    UnexpectedPut {
        /// The key named.
        key: String,
        /// The put named.
        put: PutId,
    },
    /// A snapshot was asked for while a put of `key` is in flight (unchanged): a
    /// checkpoint between a put's send and its acknowledgement can make a restored job
    /// repeat a call. Snapshot once the put is answered.
    #[error("snapshot refused: a put of key {key:?} is in flight")]
    PutInFlight {
        /// A key with a put in flight.
        key: String,
    },
    /// A checkpoint names an action this operator does not have, or is otherwise
    /// inconsistent (restore refused).
    #[error("invalid checkpoint: {0}")]
    InvalidCheckpoint(String),
    /// The key's sequence numbers are used up (unchanged).
    #[error("key {0:?} has used every sequence number")]
    SequenceExhausted(String),
    /// A bounded queue is full (unchanged): the driver must hold the event back.
    #[error("{what} of key {key:?} is full ({limit})")]
    Full {
        /// The key.
        key: String,
        /// Which queue.
        what: &'static str,
        /// Its bound.
        limit: usize,
    },
    /// The operator failed earlier, with this error, and accepts nothing more; restore
    /// it (unchanged).
    #[error("operator failed earlier: {0}")]
    Failed(Box<OperatorError>),
    /// Two actions share one name.
    #[error("duplicate action name {0:?}")]
    DuplicateAction(String),
    /// [`Event::Continue`] for a key with no step to take (idle, or waiting for a
    /// call's outcome or a put's answer); unchanged.
    #[error("key {0:?} has no step to continue")]
    NothingToContinue(String),
    /// A restore at an epoch not above a fence level of the checkpoint's marker: the
    /// epoch was used before, so the zombies of its earlier user would not be fenced.
    #[error(
        "restore at epoch {epoch} refused: the marker's fence level of partition \
         {partition} is {level} (a restore's epoch must be above every earlier one)"
    )]
    StaleEpoch {
        /// The restoring epoch.
        epoch: Epoch,
        /// The partition whose level is not below it.
        partition: usize,
        /// That partition's fence level at the marker.
        level: Epoch,
    },
}

impl OperatorError {
    /// Whether the operator refused the event and stayed as it was (the others fail it).
    pub fn leaves_unchanged(&self) -> bool {
        !matches!(
            self,
            OperatorError::Store(_) | OperatorError::PutFailed { .. }
        )
    }
}

impl From<StoreError> for OperatorError {
    fn from(err: StoreError) -> Self {
        OperatorError::Store(err)
    }
}

/// Bounds of the operator's queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Inputs of one key waiting behind its current one.
    pub pending_inputs_per_key: usize,
    /// Checkpoints snapshotted whose completion or abort the operator has not heard of
    /// (at least one is kept). A snapshot past it forgets the oldest: Flink may never
    /// deliver a checkpoint's notification, and refusing snapshots would stop
    /// checkpointing for good.
    pub pending_checkpoints: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            pending_inputs_per_key: 4096,
            pending_checkpoints: 64,
        }
    }
}
