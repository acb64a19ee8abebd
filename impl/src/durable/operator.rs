//! The action execution operator as a sans-IO state machine (flink-agents
//! `ActionExecutionOperator`, with the fix for flink-agents issue 1158).
//!
//! Inputs arrive per key and get sequence numbers 0, 1, 2, ...; each input queues
//! every configured action; one input per key runs at a time. An action's body is
//! deterministic code that, given the input and the results of its earlier calls,
//! asks for the next durable call or finishes. A durable call first looks for a
//! matching saved result at its index (same function id and argument digest); if
//! there is none the operator returns an [`Effect::Call`] and waits for the
//! driver's [`Event::CallReturned`]. A mismatched saved result truncates the saved list
//! there.
//!
//! Nothing here does IO. A put (saving a call's result, or marking an action completed)
//! is the effects [`Effect::Append`] then [`Effect::Flush`]; the key then waits for the
//! put's answer, [`Event::PutAcked`] with the offset the log gave the record, or
//! [`Event::PutFailed`]. Only the acknowledgement caches the state and tracks its offset
//! (the fix's order: send, flush, await the acknowledgement, then cache); a failed put
//! caches nothing and fails the operator, as the action's error would fail the task.
//! Every put carries a [`PutId`], so an answer is matched to its put whatever else
//! arrived in between; puts of different keys may be in flight at once.
//!
//! A snapshot is refused while any put is in flight ([`OperatorError::PutInFlight`]):
//! the model of issue 1158 shows that every design repeats calls when a checkpoint can
//! fall between a put's send and its acknowledgement (`asynchronous-puts`,
//! `specs/durable-actions.md`). A driver defers the snapshot until the answers are in.
//! Restore is sans-IO too: [`Operator::restore`] validates the checkpoint and gives a
//! [`Restoring`] that takes the log's records from the checkpoint's marker on.
//!
//! [`Scheduling`] says how much work one event does. `Eager` runs a key's work
//! until it waits on a call or a put (a restored job resumes at once). `Stepwise` is the
//! continuation executor's mailbox: starting an action and an action's completion
//! put are each their own step, taken on [`Event::Continue`], so a checkpoint
//! barrier or another key's work can come in between (the window in which a
//! checkpoint sees an action queued after its first call was saved).
//!
//! The operator is a plain value: [`Clone`] copies it (its maps are shared behind
//! `Arc`s and copied on write, so a copy that then refuses an event has copied nothing).
//! Every queue is bounded ([`Limits`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::defect::Defects;
use super::log::{LogError, LogRecord, Offset};
use super::store::{
    merge_recovery_markers, ActionStateStore, MergeError, Ownership, PruneReport, PutRecord,
    Rebuild, RebuildReport, RecoveryMarker, StoreError,
};
use super::{args_digest, ActionState, CallOutcome, CallRef, CallResult, Datum, Epoch, StateKey};

/// What an action body asks for next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActionStep {
    /// Make a durable call to `function` with `args`.
    Call {
        /// Function identifier (saved with the result and compared on reuse).
        function: String,
        /// Call arguments (their digest is saved and compared on reuse).
        args: Datum,
    },
    /// The action is done with this output.
    Finish {
        /// The action's output.
        output: Datum,
    },
}

/// User code of an action: deterministic given the input and earlier call results.
pub trait ActionBody: Send + Sync {
    /// The next step after the calls whose outcomes are in `results` (call order).
    fn step(&self, input: &Datum, results: &[CallOutcome]) -> ActionStep;
}

/// A named action.
#[derive(Clone)]
pub struct ActionDef {
    /// Action name (part of every state key).
    pub name: String,
    /// The action's code.
    pub body: Arc<dyn ActionBody>,
}

/// The same name and the same body (the same code object, by address: bodies are code,
/// not values).
impl PartialEq for ActionDef {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.body, &other.body)
    }
}

impl Eq for ActionDef {}

impl std::fmt::Debug for ActionDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionDef")
            .field("name", &self.name)
            .finish()
    }
}

impl ActionDef {
    /// An action named `name` running `body`.
    pub fn new(name: impl Into<String>, body: impl ActionBody + 'static) -> Self {
        ActionDef {
            name: name.into(),
            body: Arc::new(body),
        }
    }
}

/// A body that calls each function of a fixed list in turn. Call `i` gets the
/// arguments `[input, i]`; the output is the last call's value (an error outcome
/// becomes `{"error": message}`), or the input when the list is empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallChain {
    /// Functions called, in order.
    pub functions: Vec<String>,
}

impl CallChain {
    /// A chain over `functions`.
    pub fn new<S: Into<String>>(functions: impl IntoIterator<Item = S>) -> Self {
        CallChain {
            functions: functions.into_iter().map(Into::into).collect(),
        }
    }
}

impl ActionBody for CallChain {
    fn step(&self, input: &Datum, results: &[CallOutcome]) -> ActionStep {
        match self.functions.get(results.len()) {
            Some(function) => ActionStep::Call {
                function: function.clone(),
                args: serde_json::json!([input, results.len()]),
            },
            None => ActionStep::Finish {
                output: match results.last() {
                    None => input.clone(),
                    Some(CallOutcome::Value(v)) => v.clone(),
                    Some(CallOutcome::Error(m)) => serde_json::json!({ "error": m }),
                },
            },
        }
    }
}

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

/// What one key of the operator is doing ([`Operator::activity`]).
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

/// One queued action of a key's current input (checkpointed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedAction {
    /// Sequence number of the input.
    pub seq: u64,
    /// Action name.
    pub action: String,
    /// The input value.
    pub input: Datum,
}

/// An input waiting for the key's current input to finish (checkpointed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingInput {
    /// Sequence number assigned to the input.
    pub seq: u64,
    /// The input value.
    pub input: Datum,
}

/// Keyed operator state of one key (checkpointed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyState {
    /// Sequence number the next input of this key gets.
    pub next_seq: u64,
    /// Actions of the current input not yet completed, head first.
    pub queue: VecDeque<QueuedAction>,
    /// Later inputs waiting for the current one.
    pub pending_inputs: VecDeque<PendingInput>,
    /// Sequence number of the last finished input, if any.
    pub last_completed: Option<u64>,
}

/// The operator's checkpoint value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Checkpoint id given to [`Operator::snapshot`].
    pub id: u64,
    /// Keyed state per key.
    pub keys: BTreeMap<String, KeyState>,
    /// Where a restore replays the log from.
    pub marker: RecoveryMarker,
}

impl Checkpoint {
    /// One checkpoint of the parts several operator subtasks took of checkpoint `id`:
    /// the keyed state of every part (each subtask's keys are its own, so a key in two
    /// parts is refused) and the union minimum of their markers
    /// ([`merge_recovery_markers`]). Each restored subtask then keeps what it owns
    /// ([`Operator::restore_owned`]).
    pub fn merge(parts: &[&Checkpoint]) -> Result<Checkpoint, MergeError> {
        let first = parts.first().ok_or(MergeError::Empty)?;
        let mut keys = BTreeMap::new();
        for (index, part) in parts.iter().enumerate() {
            if part.id != first.id {
                return Err(MergeError::CheckpointId {
                    index,
                    expected: first.id,
                    found: part.id,
                });
            }
            for (key, ks) in &part.keys {
                if keys.insert(key.clone(), ks.clone()).is_some() {
                    return Err(MergeError::KeyInTwoParts(key.clone()));
                }
            }
        }
        let markers: Vec<&RecoveryMarker> = parts.iter().map(|p| &p.marker).collect();
        let marker = merge_recovery_markers(&markers)?;
        debug_assert!(
            parts.iter().all(|p| p
                .marker
                .offsets
                .iter()
                .zip(&marker.offsets)
                .all(|(own, merged)| merged <= own)),
            "the merged marker is at or before every part's"
        );
        Ok(Checkpoint {
            id: first.id,
            keys,
            marker,
        })
    }
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
    /// Take the key's next step (stepwise scheduling; see [`Operator::ready_keys`]).
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
    /// A put failed, or a state could not be encoded; the operator is failed.
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
    /// The operator failed earlier and accepts nothing more; restore it (unchanged).
    #[error("operator failed earlier: {0}")]
    Failed(String),
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
        !matches!(self, OperatorError::Store(_))
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

/// An outstanding durable call of a key (not checkpointed). The key is the map's and
/// the action's name the configured action's: the call is [`Running::call`] of them.
#[derive(Clone, PartialEq, Eq)]
struct Running {
    seq: u64,
    /// The action's position among the configured actions.
    action: usize,
    index: u32,
    function: String,
    digest: u64,
    state: ActionState,
}

impl Running {
    /// The call this entry waits for, made for `key` by one of `actions`.
    fn call(&self, key: &str, actions: &[ActionDef]) -> CallRef {
        CallRef {
            key: key.to_string(),
            seq: self.seq,
            action: actions[self.action].name.clone(),
            index: self.index,
        }
    }

    /// Whether `call`, made for the key of this entry by one of `actions`, is the one it
    /// waits for.
    fn awaits(&self, call: &CallRef, actions: &[ActionDef]) -> bool {
        self.seq == call.seq && self.index == call.index && actions[self.action].name == call.action
    }
}

/// What a key does once its put is acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AfterPut {
    /// The put saved call `index`'s result: the action goes on after it.
    CallSaved { index: u32 },
    /// The put marked the action completed.
    Completed,
}

/// A put in flight of a key (not checkpointed).
#[derive(Clone, PartialEq, Eq)]
struct Saving {
    put: PutId,
    seq: u64,
    /// The action's position among the configured actions.
    action: usize,
    state: ActionState,
    then: AfterPut,
}

/// What a key waits for (not checkpointed). One thing at most: the model of issue 1158
/// proves it of the fixed design, and this type makes it so. A key's entry stays once
/// made (as its keyed state does), so a key going from one wait to the next copies no
/// key and allocates nothing.
#[derive(Clone, PartialEq, Eq)]
enum Wait {
    /// Nothing: the key is idle or has queued work.
    Nothing,
    /// The outcome of the call it asked for.
    Call(Running),
    /// The answer to its put in flight.
    Put(Saving),
    /// Its completion step (stepwise): the finished action's completed state, of input
    /// `seq` and the action at position `action`, awaiting its put.
    Completion {
        seq: u64,
        action: usize,
        state: ActionState,
    },
}

/// A key without an entry waits for nothing.
const NOTHING: &Wait = &Wait::Nothing;

/// Whether two wait maps say the same of every key: an entry waiting for nothing is the
/// same as no entry (a restored operator has none; a running one keeps them).
fn same_waits(a: &KeyMap<Wait>, b: &KeyMap<Wait>) -> bool {
    let waiting = |m: &KeyMap<Wait>| m.values().filter(|w| **w != Wait::Nothing).count();
    waiting(a) == waiting(b)
        && a.iter()
            .all(|(key, w)| *w == Wait::Nothing || b.get(key) == Some(w))
}

enum Progress {
    /// Waiting for a call's outcome or a put's answer.
    Waiting,
    /// The action's state is completed in the store (saved before a restore).
    Completed,
    /// The body finished; the completion put is the key's next step (stepwise).
    Finishing,
}

/// The operator's per-key maps.
type KeyMap<V> = HashMap<String, V, ahash::RandomState>;

/// The action execution operator.
#[derive(Clone)]
pub struct Operator {
    actions: Arc<[ActionDef]>,
    store: ActionStateStore,
    /// Per key, its keyed state. Looked up at every event, so hashed (aHash, randomly
    /// keyed: keys come from outside); a checkpoint holds it ordered.
    keys: Arc<KeyMap<KeyState>>,
    /// Per key, what it waits for: a call's outcome, a put's answer, or its completion
    /// step.
    waits: Arc<KeyMap<Wait>>,
    scheduling: Scheduling,
    limits: Limits,
    pending_checkpoints: Arc<BTreeMap<u64, BTreeMap<String, u64>>>,
    /// Keys a [`Event::Resume`] has yet to drive (eager scheduling), in key order: the
    /// resume goes on with them once the key it drives last no longer waits for a put.
    resuming: Arc<VecDeque<String>>,
    next_put: u64,
    failed: Option<String>,
    /// Room for the outcomes an action's body is run from, kept from run to run (empty
    /// between runs).
    outcomes: Vec<CallOutcome>,
    /// Room a put's record is encoded in, kept from put to put.
    record_buf: (Vec<u8>, Vec<u8>),
    /// Seed bugs put back (feature `defects`); none in production.
    defects: Defects,
}

/// Two operators are equal when they run the same actions and hold the same state:
/// keyed state, waits (a key waiting for nothing counts as one without an entry), store,
/// pending checkpoints, resume, put numbering, failure,
/// scheduling, limits and defects (their scratch buffers, empty between events, are not
/// state). A copy compares its shared maps by address until one side changes them, so
/// checking that a refused event left a copy unchanged costs next to nothing.
impl PartialEq for Operator {
    fn eq(&self, other: &Self) -> bool {
        // Every field but the scratch buffers, named so that a new field is not missed.
        let Operator {
            actions,
            store,
            keys,
            waits,
            scheduling,
            limits,
            pending_checkpoints,
            resuming,
            next_put,
            failed,
            outcomes: _,
            record_buf: _,
            defects,
        } = self;
        // `Arc`'s equality compares addresses first (the elements are `Eq`).
        *actions == other.actions
            && *store == other.store
            && *keys == other.keys
            && (Arc::ptr_eq(waits, &other.waits) || same_waits(waits, &other.waits))
            && *scheduling == other.scheduling
            && *limits == other.limits
            && *pending_checkpoints == other.pending_checkpoints
            && *resuming == other.resuming
            && *next_put == other.next_put
            && *failed == other.failed
            && *defects == other.defects
    }
}

impl Eq for Operator {}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut saving: Vec<(&String, PutId)> = self
            .waits
            .iter()
            .filter_map(|(k, w)| match w {
                Wait::Put(s) => Some((k, s.put)),
                _ => None,
            })
            .collect();
        saving.sort();
        let mut d = f.debug_struct("Operator");
        d.field("actions", &self.actions)
            // In key order, so that the text is the same from run to run.
            .field("keys", &self.keys.iter().collect::<BTreeMap<_, _>>())
            .field("puts_in_flight", &saving)
            .field("store", &self.store)
            .field("failed", &self.failed);
        if self.defects != Defects::default() {
            d.field("defects", &self.defects);
        }
        d.finish()
    }
}

fn boundaries<'a>(
    keys: impl IntoIterator<Item = (&'a String, &'a KeyState)>,
) -> BTreeMap<String, u64> {
    keys.into_iter()
        .filter_map(|(k, s)| s.last_completed.map(|seq| (k.clone(), seq)))
        .collect()
}

fn check_actions(actions: &[ActionDef]) -> Result<(), OperatorError> {
    for (i, a) in actions.iter().enumerate() {
        if actions[..i].iter().any(|b| b.name == a.name) {
            return Err(OperatorError::DuplicateAction(a.name.clone()));
        }
    }
    Ok(())
}

/// Refuses a checkpoint whose keyed state no operator could have written: an unknown
/// action, sequence numbers out of order or at the counter's end, a queue that is not
/// the remaining actions of the input after the last completed one.
fn check_checkpoint(actions: &[ActionDef], checkpoint: &Checkpoint) -> Result<(), OperatorError> {
    let invalid = |key: &str, what: String| {
        Err(OperatorError::InvalidCheckpoint(format!(
            "key {key:?}: {what}"
        )))
    };
    let marker = &checkpoint.marker;
    if marker.offsets.is_empty() {
        return Err(OperatorError::InvalidCheckpoint(
            "the recovery marker names no partition".into(),
        ));
    }
    if !marker.levels.is_empty() && marker.levels.len() != marker.offsets.len() {
        return Err(OperatorError::InvalidCheckpoint(format!(
            "the recovery marker names {} fence levels for {} partitions",
            marker.levels.len(),
            marker.offsets.len()
        )));
    }
    for (key, ks) in &checkpoint.keys {
        // The counter's last value is never handed out: the next input would wrap it.
        if ks.next_seq == u64::MAX {
            return invalid(key, "next sequence number is at the counter's end".into());
        }
        if let Some(done) = ks.last_completed {
            if done >= ks.next_seq {
                return invalid(
                    key,
                    format!(
                        "last completed sequence {done} is not below the next, {}",
                        ks.next_seq
                    ),
                );
            }
        }
        let current = ks.last_completed.map_or(0, |d| d + 1);
        if ks.queue.len() > actions.len() {
            return invalid(
                key,
                format!(
                    "{} actions queued, {} configured",
                    ks.queue.len(),
                    actions.len()
                ),
            );
        }
        let first = actions.len() - ks.queue.len();
        for (i, q) in ks.queue.iter().enumerate() {
            if q.seq != current {
                return invalid(
                    key,
                    format!(
                        "queues sequence {} while the current input is {current}",
                        q.seq
                    ),
                );
            }
            match actions.get(first + i) {
                Some(a) if a.name == q.action => {}
                _ if !actions.iter().any(|a| a.name == q.action) => {
                    return invalid(key, format!("queues unknown action {:?}", q.action));
                }
                _ => {
                    return invalid(
                        key,
                        format!("queues action {:?} out of the configured order", q.action),
                    );
                }
            }
        }
        let mut expected = if ks.queue.is_empty() {
            current
        } else {
            current + 1
        };
        for p in &ks.pending_inputs {
            if p.seq != expected || p.seq >= ks.next_seq {
                return invalid(
                    key,
                    format!(
                        "pending input has sequence {} where {expected} was expected",
                        p.seq
                    ),
                );
            }
            expected += 1;
        }
        if expected != ks.next_seq {
            return invalid(
                key,
                format!(
                    "inputs up to sequence {expected} are accounted for, the next is {}",
                    ks.next_seq
                ),
            );
        }
    }
    Ok(())
}

/// A restore in progress ([`Operator::restore`]): the checkpoint was checked; the log's
/// records from its marker to the end are fed in, partition by partition, then
/// [`Restoring::finish`] gives the operator. A copy goes on on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restoring {
    actions: Vec<ActionDef>,
    /// The checkpoint restored; `None` for a restart's own empty one.
    checkpoint_id: Option<u64>,
    epoch: Epoch,
    keys: KeyMap<KeyState>,
    rebuild: Rebuild,
}

impl Restoring {
    /// Where the replay starts, indexed by partition: read each partition from here
    /// to its end.
    pub fn marker(&self) -> &[Offset] {
        self.rebuild.marker()
    }

    /// Take the next record of its partition (records of one partition in offset order,
    /// from the marker on).
    pub fn feed(&mut self, record: &LogRecord) -> Result<(), OperatorError> {
        Ok(self.rebuild.feed(record)?)
    }

    /// The restored operator, once every partition was read up to `log_ends` (the log's
    /// end offsets). Restored actions start running on [`Event::Resume`].
    pub fn finish(self, log_ends: &[Offset]) -> Result<(Operator, RebuildReport), OperatorError> {
        let (store, report) = self.rebuild.finish(log_ends)?;
        tracing::info!(
            component = "durable.operator",
            event = "start",
            restored = self.checkpoint_id.is_some(),
            checkpoint = self.checkpoint_id,
            epoch = self.epoch,
            keys = self.keys.len(),
            records_scanned = report.records_scanned,
            states_loaded = report.states_loaded,
        );
        let mut op = Operator::fresh(self.actions, store);
        op.keys = Arc::new(self.keys);
        Ok((op, report))
    }
}

impl Operator {
    /// A copy that shares none of its maps with this operator (nor its store's): equal
    /// to it, but compared entry by entry, not by address. For harnesses that test the
    /// equality itself.
    #[cfg(any(test, feature = "testkit"))]
    pub fn unshared(&self) -> Operator {
        let mut copy = self.clone();
        copy.actions = self.actions.iter().cloned().collect();
        copy.store = self.store.unshared();
        copy.keys = Arc::new((*self.keys).clone());
        copy.waits = Arc::new((*self.waits).clone());
        copy.pending_checkpoints = Arc::new((*self.pending_checkpoints).clone());
        copy.resuming = Arc::new((*self.resuming).clone());
        copy
    }

    /// A fresh operator of the first incarnation (epoch 1; no checkpoint to restore)
    /// running `actions` for every input, saving call results to a log of `partitions`
    /// partitions.
    pub fn new(actions: Vec<ActionDef>, partitions: u32) -> Result<Self, OperatorError> {
        Operator::new_at(actions, partitions, 1)
    }

    /// [`Operator::new`] for incarnation `epoch`: a restart with no checkpoint to
    /// restore and no fence written (a restart that fences restores from its own empty
    /// checkpoint instead, see [`super::driver::restart_without_checkpoint`]).
    pub fn new_at(
        actions: Vec<ActionDef>,
        partitions: u32,
        epoch: Epoch,
    ) -> Result<Self, OperatorError> {
        check_actions(&actions)?;
        tracing::info!(
            component = "durable.operator",
            event = "start",
            restored = false,
            epoch,
        );
        Ok(Operator::fresh(
            actions,
            ActionStateStore::new_at(partitions, epoch),
        ))
    }

    fn fresh(actions: Vec<ActionDef>, store: ActionStateStore) -> Operator {
        Operator {
            actions: actions.into(),
            store,
            keys: Arc::default(),
            waits: Arc::default(),
            scheduling: Scheduling::default(),
            limits: Limits::default(),
            pending_checkpoints: Arc::default(),
            resuming: Arc::default(),
            next_put: 0,
            failed: None,
            outcomes: Vec::new(),
            record_buf: (Vec::new(), Vec::new()),
            defects: Defects::default(),
        }
    }

    /// Puts seed bugs of issue 1158 back into this operator (feature `defects`, for the
    /// simulation's validation to catch them). A restored operator starts without them:
    /// set them again after [`Restoring::finish`].
    #[cfg(feature = "defects")]
    pub fn set_defects(&mut self, defects: &[super::defect::Defect]) {
        self.defects = Defects::of(defects);
    }

    /// Start restoring from `checkpoint` as incarnation `epoch`: its keyed state is
    /// checked (unknown actions, impossible sequence numbers and queues are refused), as
    /// is an epoch not above every fence level of its marker, and the store's rebuild
    /// waits for the log's records from the checkpoint's marker on ([`Restoring`]).
    pub fn restore(
        actions: Vec<ActionDef>,
        checkpoint: &Checkpoint,
        epoch: Epoch,
    ) -> Result<Restoring, OperatorError> {
        Operator::restore_owned(actions, checkpoint, Ownership::All, epoch)
    }

    /// [`Operator::restore`] as one of several subtasks sharing the log: it takes the
    /// keyed state of the keys it owns and replays only their records, from the
    /// checkpoint's marker (for a checkpoint of several parts, their merge,
    /// [`Checkpoint::merge`]).
    pub fn restore_owned(
        actions: Vec<ActionDef>,
        checkpoint: &Checkpoint,
        owned: Ownership,
        epoch: Epoch,
    ) -> Result<Restoring, OperatorError> {
        let marker = &checkpoint.marker;
        let stale = (0..marker.offsets.len()).find(|&p| marker.level(p) >= epoch);
        if let Some(partition) = stale {
            let level = marker.level(partition);
            return Err(OperatorError::StaleEpoch {
                epoch,
                partition,
                level,
            });
        }
        Operator::replaying(actions, checkpoint, owned, epoch)
    }

    /// A restart's restore from its own empty checkpoint, whose marker is at the log's
    /// end after this incarnation's fences: its levels are `epoch` itself, which
    /// [`Operator::restore`] refuses for a checkpoint of an earlier incarnation.
    pub(crate) fn restore_after_own_fences(
        actions: Vec<ActionDef>,
        checkpoint: &Checkpoint,
        epoch: Epoch,
    ) -> Result<Restoring, OperatorError> {
        let mut restoring = Operator::replaying(actions, checkpoint, Ownership::All, epoch)?;
        restoring.checkpoint_id = None;
        Ok(restoring)
    }

    fn replaying(
        actions: Vec<ActionDef>,
        checkpoint: &Checkpoint,
        owned: Ownership,
        epoch: Epoch,
    ) -> Result<Restoring, OperatorError> {
        check_actions(&actions)?;
        check_checkpoint(&actions, checkpoint)?;
        let keys: KeyMap<KeyState> = checkpoint
            .keys
            .iter()
            .filter(|(k, _)| owned.owns(k))
            .map(|(k, ks)| (k.clone(), ks.clone()))
            .collect();
        // The store's partitions are the marker's, so the marker fits them.
        let rebuild = Rebuild::new(&checkpoint.marker, boundaries(&keys), owned, epoch)?;
        Ok(Restoring {
            actions,
            checkpoint_id: Some(checkpoint.id),
            epoch,
            keys,
            rebuild,
        })
    }

    /// Epoch of this incarnation: every put carries it.
    pub fn epoch(&self) -> Epoch {
        self.store.epoch()
    }

    /// Handle one event, returning the effects it caused.
    pub fn handle(&mut self, event: Event) -> Result<Vec<Effect>, OperatorError> {
        // Nearly every event has an effect (a call, a put or an output).
        let mut effects = Vec::with_capacity(2);
        self.handle_into(event, &mut effects)?;
        Ok(effects)
    }

    /// [`Operator::handle`], appending the effects to `effects`: a driver that keeps one
    /// buffer from event to event allocates none for them. A refused event appends
    /// nothing (what it had appended is taken back).
    pub fn handle_into(
        &mut self,
        event: Event,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        if let Some(reason) = &self.failed {
            return Err(OperatorError::Failed(reason.clone()));
        }
        let before = effects.len();
        let result = match event {
            Event::Input { key, value } => self.on_input(key, value, effects),
            Event::CallReturned { call, outcome } => self.on_call(call, outcome, effects),
            Event::PutAcked { key, put, offset } => self.on_acked(key, put, offset, effects),
            Event::PutFailed { key, put, error } => self.on_failed(key, put, error, effects),
            Event::Resume => {
                tracing::info!(component = "durable.operator", event = "resume");
                match self.scheduling {
                    Scheduling::Eager => {
                        // In key order, as the checkpoint holds them.
                        let mut keys: Vec<String> = self.keys.keys().cloned().collect();
                        keys.sort_unstable();
                        self.resuming = Arc::new(keys.into());
                        self.resume(effects)
                    }
                    Scheduling::Stepwise => Ok(()),
                }
            }
            Event::Continue { key } => self.on_continue(key, effects),
        };
        self.check_invariants();
        match result {
            Ok(()) => Ok(()),
            Err(err) => {
                effects.truncate(before);
                if !err.leaves_unchanged() {
                    tracing::error!(component = "durable.operator", event = "failed", error = %err);
                    self.failed = Some(err.to_string());
                }
                Err(err)
            }
        }
    }

    /// What the model of issue 1158 proves of the fixed design, checked in debug builds
    /// (that a key waits for one thing at most, [`Wait`] makes so): a key that waits
    /// has keyed state and an action in its queue, and every put in flight was numbered
    /// before the next.
    fn check_invariants(&self) {
        #[cfg(debug_assertions)]
        for (key, wait) in self.waits.iter() {
            if matches!(wait, Wait::Nothing) {
                continue;
            }
            debug_assert!(
                self.keys.get(key).is_some_and(|ks| !ks.queue.is_empty()),
                "key {key:?} waits with no action queued"
            );
            if let Wait::Put(s) = wait {
                debug_assert!(s.put.0 < self.next_put, "put {:?} not numbered yet", s.put);
            }
        }
    }

    /// What `key` waits for.
    fn wait(&self, key: &str) -> &Wait {
        self.waits.get(key).unwrap_or(NOTHING)
    }

    /// Sets what `key` waits for (its entry, copied in the shared map only here).
    fn set_wait(&mut self, key: &str, wait: Wait) {
        let waits = Arc::make_mut(&mut self.waits);
        match waits.get_mut(key) {
            Some(slot) => *slot = wait,
            None => {
                waits.insert(key.to_string(), wait);
            }
        }
    }

    /// What `key` waited for; it now waits for nothing. Only called for a key that
    /// waits, so the shared map is copied only when it changes.
    fn take_wait(&mut self, key: &str) -> Wait {
        Arc::make_mut(&mut self.waits)
            .get_mut(key)
            .map_or(Wait::Nothing, |slot| std::mem::replace(slot, Wait::Nothing))
    }

    /// Drives the keys a resume has yet to drive, one after the other, until one waits
    /// for a put: restored keys run as a synchronous executor would run them, so a put
    /// that fails stops the resume before a later key starts.
    fn resume(&mut self, effects: &mut Vec<Effect>) -> Result<(), OperatorError> {
        while let Some(key) = self.resuming.front().cloned() {
            if matches!(self.wait(&key), Wait::Put(_)) {
                return Ok(());
            }
            Arc::make_mut(&mut self.resuming).pop_front();
            self.drive(&key, 0, effects)?;
            if matches!(self.wait(&key), Wait::Put(_)) {
                // Resumed once its put is answered.
                Arc::make_mut(&mut self.resuming).push_front(key);
                return Ok(());
            }
        }
        Ok(())
    }

    fn on_continue(&mut self, key: String, effects: &mut Vec<Effect>) -> Result<(), OperatorError> {
        if !self.is_ready(&key) {
            return Err(OperatorError::NothingToContinue(key));
        }
        match self.scheduling {
            Scheduling::Eager => self.drive(&key, 0, effects),
            Scheduling::Stepwise => self.step(&key, 0, effects).map(|_| ()),
        }
    }

    /// Whether the key is waiting for a call's outcome or a put's answer.
    fn waiting(&self, key: &str) -> bool {
        matches!(self.wait(key), Wait::Call(_) | Wait::Put(_))
    }

    /// Whether the key has a step to take without outside input.
    fn is_ready(&self, key: &str) -> bool {
        !self.waiting(key) && self.ready_unless_waiting(key)
    }

    /// [`Operator::is_ready`] for a key known to wait for nothing: a finished action's
    /// completion put, or queued work.
    fn ready_unless_waiting(&self, key: &str) -> bool {
        matches!(self.wait(key), Wait::Completion { .. })
            || self
                .keys
                .get(key)
                .is_some_and(|ks| !ks.queue.is_empty() || !ks.pending_inputs.is_empty())
    }

    fn on_input(
        &mut self,
        key: String,
        value: Datum,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        // Refusals first, so that a refused input changes nothing.
        if let Some(ks) = self.keys.get(&key) {
            // The counter stops one short of its end: a checkpoint holding `u64::MAX` as
            // the next sequence number is refused on restore.
            if ks.next_seq >= u64::MAX - 1 {
                return Err(OperatorError::SequenceExhausted(key));
            }
            if ks.pending_inputs.len() >= self.limits.pending_inputs_per_key {
                return Err(OperatorError::Full {
                    key,
                    what: "pending inputs",
                    limit: self.limits.pending_inputs_per_key,
                });
            }
        }
        let ks = Arc::make_mut(&mut self.keys)
            .entry(key.clone())
            .or_default();
        let seq = ks.next_seq;
        // Below `u64::MAX - 1`: refused above otherwise, and 0 for a new key.
        ks.next_seq = seq + 1;
        ks.pending_inputs
            .push_back(PendingInput { seq, input: value });
        tracing::debug!(component = "durable.operator", event = "input", key = %key, seq);
        match self.scheduling {
            Scheduling::Eager => self.drive(&key, 0, effects),
            Scheduling::Stepwise => Ok(()),
        }
    }

    fn on_call(
        &mut self,
        call: CallRef,
        outcome: CallOutcome,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        match self.wait(&call.key) {
            Wait::Call(r) if r.awaits(&call, &self.actions) => {}
            _ => return Err(OperatorError::UnexpectedCall(call)),
        }
        let Wait::Call(mut running) = self.take_wait(&call.key) else {
            unreachable!("the call was found waiting");
        };
        running.state.call_results.push(CallResult {
            function: running.function,
            args_digest: running.digest,
            outcome,
        });
        tracing::debug!(
            component = "durable.operator",
            event = "call_returned",
            key = %call.key,
            seq = call.seq,
            action = %call.action,
            index = call.index,
        );
        self.send_put(
            call.key,
            running.seq,
            running.action,
            running.state,
            AfterPut::CallSaved { index: call.index },
            effects,
        )
    }

    /// The put of `state` for `key`'s action at position `action` of input `seq`: its
    /// record appended and flushed; the key waits for its answer.
    fn send_put(
        &mut self,
        key: String,
        seq: u64,
        action: usize,
        state: ActionState,
        then: AfterPut,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        debug_assert!(!self.waiting(&key), "key {key:?} already waits");
        let record = self.store.encode_at(
            &key,
            seq,
            &self.actions[action].name,
            &state,
            &mut self.record_buf,
        )?;
        let put = PutId(self.next_put);
        self.next_put += 1;
        tracing::debug!(
            component = "durable.operator",
            event = "put_sent",
            key = %key,
            seq,
            action = %self.actions[action].name,
            put = put.0,
            partition = record.partition,
            completed = state.completed,
            results = state.call_results.len(),
        );
        if self.defects.cache_before_ack {
            // The old order caches at the send, before the record has an offset: it is
            // taken as one past the state's last (offsets of a state still grow).
            let name = self.actions[action].name.clone();
            let at = StateKey::of(&key, seq, &name);
            let offset = self.store.offset_of(&at).map_or(0, |(_, o)| o + 1);
            self.store.remember(
                &key,
                seq,
                Cow::Owned(name),
                state.clone(),
                record.partition,
                offset,
                // The old order counts the put done at the send.
                "acked",
            );
        }
        self.set_wait(
            &key,
            Wait::Put(Saving {
                put,
                seq,
                action,
                state,
                then,
            }),
        );
        effects.push(Effect::Append { key, put, record });
        effects.push(Effect::Flush);
        Ok(())
    }

    fn on_acked(
        &mut self,
        key: String,
        put: PutId,
        offset: Offset,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        if !matches!(self.wait(&key), Wait::Put(s) if s.put == put) {
            return Err(OperatorError::UnexpectedPut { key, put });
        }
        let Wait::Put(saving) = self.take_wait(&key) else {
            unreachable!("the put was found in flight");
        };
        let partition = self.store.partition_of(&key);
        let action = Cow::Borrowed(self.actions[saving.action].name.as_str());
        // Only now, with the record acknowledged, is the state cached (the fix's order).
        if !self.defects.cache_before_ack {
            self.store.remember(
                &key,
                saving.seq,
                action,
                saving.state,
                partition,
                offset,
                "acked",
            );
        }
        match saving.then {
            AfterPut::CallSaved { index } => {
                let verified = index as usize + 1;
                match self.scheduling {
                    // The action goes on from the result just saved: every saved result
                    // before it answered a call this operator made, so none needs
                    // checking.
                    Scheduling::Eager => self.drive(&key, verified, effects)?,
                    // ... to its next call, or to its completion step.
                    Scheduling::Stepwise => {
                        self.step(&key, verified, effects)?;
                    }
                }
            }
            AfterPut::Completed => {
                let more = self.action_done(&key, effects);
                if more && self.scheduling == Scheduling::Eager {
                    self.drive(&key, 0, effects)?;
                }
            }
        }
        if self.resuming.front() == Some(&key) {
            self.resume(effects)?;
        }
        Ok(())
    }

    fn on_failed(
        &mut self,
        key: String,
        put: PutId,
        error: LogError,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        if !matches!(self.wait(&key), Wait::Put(s) if s.put == put) {
            return Err(OperatorError::UnexpectedPut { key, put });
        }
        if self.defects.cache_before_ack {
            // The old order never looks at the send's outcome: the action goes on from
            // the state it cached at the send.
            return self.on_acked(key, put, 0, effects);
        }
        tracing::warn!(
            component = "durable.store",
            event = "put",
            key = %key,
            put = put.0,
            outcome = "failed",
            error = %error,
        );
        // The action's error fails the task: its put is over, nothing is cached.
        self.take_wait(&key);
        Err(OperatorError::Store(StoreError::Log(error)))
    }

    /// Run the key's work until it waits on a call or a put, or has nothing left.
    /// The head action's first `verified` saved results are known to match its calls
    /// (see [`Operator::run_action`]).
    fn drive(
        &mut self,
        key: &str,
        verified: usize,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        if self.waiting(key) {
            return Ok(());
        }
        if self.step(key, verified, effects)? {
            while self.step(key, 0, effects)? {}
        }
        Ok(())
    }

    /// One step of the key's work: a finished action's completion put, or the start
    /// of the queue's head (starting the next pending input if the queue is empty).
    /// Returns whether the key has more to do without outside input.
    /// `verified` as in [`Operator::drive`].
    fn step(
        &mut self,
        key: &str,
        verified: usize,
        effects: &mut Vec<Effect>,
    ) -> Result<bool, OperatorError> {
        // The shared maps are copied only where this step changes them.
        if matches!(self.wait(key), Wait::Completion { .. }) {
            let Wait::Completion { seq, action, state } = self.take_wait(key) else {
                unreachable!("the completion step was just seen");
            };
            self.send_put(
                key.to_string(),
                seq,
                action,
                state,
                AfterPut::Completed,
                effects,
            )?;
            return Ok(false);
        }
        // A second handle on the keyed state lets the action read its queue entry in
        // place (running an action does not change the keyed state). It is dropped
        // before the keyed state changes: while it lives, a change would copy the map.
        let keys = Arc::clone(&self.keys);
        // Every key a step is taken for has keyed state: its input made it, and keyed
        // state is never dropped.
        let ks = keys.get(key).expect("a key with work has keyed state");
        let Some(head) = ks.queue.front() else {
            if ks.pending_inputs.is_empty() {
                return Ok(false);
            }
            drop(keys);
            let ks = Arc::make_mut(&mut self.keys)
                .get_mut(key)
                .expect("its keyed state was just read");
            let next = ks
                .pending_inputs
                .pop_front()
                .expect("a pending input was just seen");
            for a in self.actions.iter() {
                ks.queue.push_back(QueuedAction {
                    seq: next.seq,
                    action: a.name.clone(),
                    input: next.input.clone(),
                });
            }
            tracing::debug!(
                component = "durable.operator",
                event = "input_started",
                key,
                seq = next.seq,
                actions = self.actions.len(),
            );
            if self.actions.is_empty() {
                ks.last_completed = Some(next.seq);
                self.emit(key, next.seq, effects);
                return Ok(true);
            }
            return self.step(key, 0, effects);
        };
        let progress = self.run_action(key, head, verified, effects);
        drop(keys);
        match progress? {
            Progress::Waiting => Ok(false),
            Progress::Finishing => Ok(true),
            Progress::Completed => Ok(self.action_done(key, effects)),
        }
    }

    /// The queue's head action completed: drop it; the input's last action
    /// finishes the input.
    /// Only called with the head in the queue, so the keyed state is changed (and,
    /// if shared, copied) only when it must be. Returns whether the key has more to do
    /// (a next action or a pending input), as [`Operator::step`] does.
    fn action_done(&mut self, key: &str, effects: &mut Vec<Effect>) -> bool {
        let ks = Arc::make_mut(&mut self.keys)
            .get_mut(key)
            .expect("the key's head action ran");
        let head = ks.queue.pop_front().expect("the head action is queued");
        tracing::debug!(
            component = "durable.operator",
            event = "action_completed",
            key,
            seq = head.seq,
            action = %head.action,
        );
        if !ks.queue.is_empty() {
            return true;
        }
        debug_assert!(
            !matches!(ks.last_completed, Some(done) if done >= head.seq),
            "inputs of key {key:?} finish in sequence order"
        );
        ks.last_completed = Some(head.seq);
        let more = !ks.pending_inputs.is_empty();
        self.emit(key, head.seq, effects);
        more
    }

    /// Input `seq` of `key` finished (its caller records that in the keyed state):
    /// emit its actions' outputs.
    fn emit(&self, key: &str, seq: u64, effects: &mut Vec<Effect>) {
        let outputs: Vec<Datum> = self
            .actions
            .iter()
            .map(|a| {
                self.store
                    .state_of(key, seq, &a.name)
                    .and_then(|s| s.output.clone())
                    .unwrap_or(Datum::Null)
            })
            .collect();
        tracing::debug!(component = "durable.operator", event = "emit", key, seq);
        effects.push(Effect::Emit {
            key: key.to_string(),
            seq,
            outputs,
        });
    }

    /// Runs the head action's body from its saved results: each call the body asks for
    /// reuses the saved result at its index when function and argument digest match,
    /// and the first call without one is requested. The first `verified` saved results
    /// answered calls this operator made for this very run (a call's return continues
    /// the run), so the body resumes after them without asking for them again, as a
    /// continuation would; after a restore nothing is verified and every saved result
    /// is checked.
    fn run_action(
        &mut self,
        key: &str,
        head: &QueuedAction,
        verified: usize,
        effects: &mut Vec<Effect>,
    ) -> Result<Progress, OperatorError> {
        // The saved state is read in place: only the results a call keeps are copied.
        let saved = self.store.state_of(key, head.seq, &head.action);
        if saved.is_some_and(|s| s.completed) {
            tracing::debug!(
                component = "durable.operator",
                event = "action_reused_completed",
                key,
                seq = head.seq,
                action = %head.action,
            );
            return Ok(Progress::Completed);
        }
        // Queued actions are configured ones: an input queues them, and a restore
        // refuses a checkpoint that queues any other.
        let (position, action) = self
            .actions
            .iter()
            .enumerate()
            .find(|(_, a)| a.name == head.action)
            .expect("a queued action is configured");
        let results = saved.map_or(&[][..], |s| s.call_results.as_slice());
        // The room is handed back at each return; an error drops it.
        let mut outcomes = std::mem::take(&mut self.outcomes);
        outcomes.extend(results.iter().take(verified).map(|r| r.outcome.clone()));
        loop {
            match action.body.step(&head.input, &outcomes) {
                ActionStep::Call { function, args } => {
                    let index = outcomes.len();
                    let digest = args_digest(&args);
                    if let Some(earlier) = results.get(index) {
                        if earlier.function == function && earlier.args_digest == digest {
                            tracing::debug!(
                                component = "durable.operator",
                                event = "call_reused",
                                key,
                                seq = head.seq,
                                action = %head.action,
                                index,
                            );
                            outcomes.push(earlier.outcome.clone());
                            continue;
                        }
                        tracing::warn!(
                            component = "durable.operator",
                            event = "call_mismatch",
                            key,
                            seq = head.seq,
                            action = %head.action,
                            index,
                            saved_function = %earlier.function,
                            function = %function,
                            dropped = results.len() - index,
                        );
                    }
                    // The saved results before this call stay; a mismatched rest is dropped.
                    let state = ActionState {
                        // Room for the result this call will add.
                        call_results: {
                            let mut kept = Vec::with_capacity(index + 1);
                            kept.extend(results.iter().take(index).cloned());
                            kept
                        },
                        completed: false,
                        output: saved.and_then(|s| s.output.clone()),
                    };
                    let index = index as u32;
                    tracing::debug!(
                        component = "durable.operator",
                        event = "call_requested",
                        key,
                        seq = head.seq,
                        action = %head.action,
                        index,
                        function = %function,
                    );
                    effects.push(Effect::Call {
                        call: CallRef {
                            key: key.to_string(),
                            seq: head.seq,
                            action: head.action.clone(),
                            index,
                        },
                        function: function.clone(),
                        args,
                    });
                    self.set_wait(
                        key,
                        Wait::Call(Running {
                            seq: head.seq,
                            action: position,
                            index,
                            function,
                            digest,
                            state,
                        }),
                    );
                    outcomes.clear();
                    self.outcomes = outcomes;
                    return Ok(Progress::Waiting);
                }
                ActionStep::Finish { output } => {
                    outcomes.clear();
                    self.outcomes = outcomes;
                    let state = ActionState {
                        call_results: Vec::new(),
                        completed: true,
                        output: Some(output),
                    };
                    if self.scheduling == Scheduling::Eager {
                        // The completion put is the very next step: send it now rather
                        // than park the state for a step that would send it at once.
                        self.send_put(
                            key.to_string(),
                            head.seq,
                            position,
                            state,
                            AfterPut::Completed,
                            effects,
                        )?;
                        return Ok(Progress::Waiting);
                    }
                    self.set_wait(
                        key,
                        Wait::Completion {
                            seq: head.seq,
                            action: position,
                            state,
                        },
                    );
                    return Ok(Progress::Finishing);
                }
            }
        }
    }

    /// Capture a checkpoint over a log whose end offsets are `log_ends` (indexed by
    /// partition): the keyed state and the recovery marker built from the same keyed
    /// state's completed-sequence boundaries. Refused while a put is in flight
    /// ([`OperatorError::PutInFlight`]); the operator is then unchanged.
    pub fn snapshot(&mut self, id: u64, log_ends: &[Offset]) -> Result<Checkpoint, OperatorError> {
        if let Some(reason) = &self.failed {
            return Err(OperatorError::Failed(reason.clone()));
        }
        let in_flight = self.waits.iter().filter(|(_, w)| matches!(w, Wait::Put(_)));
        if let Some((key, _)) = in_flight.min_by(|(a, _), (b, _)| a.cmp(b)) {
            return Err(OperatorError::PutInFlight { key: key.clone() });
        }
        let bounds = boundaries(self.keys.iter());
        let mut marker = self.store.recovery_marker(log_ends, &bounds)?;
        if self.defects.end_offset_marker {
            // Before the fix: replay starts where the log ends now.
            marker.offsets = log_ends.to_vec();
            marker.levels = self.store.levels_at(log_ends);
        }
        tracing::info!(
            component = "durable.operator",
            event = "snapshot",
            checkpoint = id,
            marker = ?marker.offsets,
            keys = self.keys.len(),
        );
        let pending = Arc::make_mut(&mut self.pending_checkpoints);
        // Flink does not guarantee that a completion or abort reaches the operator, so a
        // full list holds checkpoints the coordinator has finished with: the oldest goes.
        // If it was still pending, its completion prunes nothing; a later completion
        // prunes what it would have.
        while pending.len() >= self.limits.pending_checkpoints.max(1) {
            // At least one is kept, so the list is not empty here.
            let (evicted, _) = pending.pop_first().expect("a full list");
            tracing::info!(
                component = "durable.operator",
                event = "checkpoint_evicted",
                checkpoint = evicted,
                limit = self.limits.pending_checkpoints,
            );
        }
        pending.insert(id, bounds);
        debug_assert!(pending.len() <= self.limits.pending_checkpoints.max(1));
        Ok(Checkpoint {
            id,
            keys: self
                .keys
                .iter()
                .map(|(k, ks)| (k.clone(), ks.clone()))
                .collect(),
            marker,
        })
    }

    /// Checkpoint `id` completed: prune the states its boundaries mark finished.
    /// Earlier pending checkpoints are subsumed. Returns `None` for an unknown id.
    pub fn checkpoint_complete(&mut self, id: u64) -> Option<PruneReport> {
        if !self.pending_checkpoints.contains_key(&id) {
            return None;
        }
        let pending = Arc::make_mut(&mut self.pending_checkpoints);
        let bounds = pending.remove(&id)?;
        pending.retain(|&other, _| other > id);
        let report = self.store.prune(&bounds);
        tracing::info!(
            component = "durable.operator",
            event = "checkpoint_complete",
            checkpoint = id,
            states_pruned = report.states_pruned,
            keys_dropped = report.keys_dropped,
        );
        Some(report)
    }

    /// The checkpoints snapshotted whose completion or abort this operator has not been
    /// told of (and has not forgotten past [`Limits::pending_checkpoints`]), oldest first.
    pub fn pending_checkpoint_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.pending_checkpoints.keys().copied()
    }

    /// Checkpoint `id` was aborted: forget it. Returns whether it was pending.
    pub fn checkpoint_aborted(&mut self, id: u64) -> bool {
        let known = self.pending_checkpoints.contains_key(&id)
            && Arc::make_mut(&mut self.pending_checkpoints)
                .remove(&id)
                .is_some();
        tracing::info!(
            component = "durable.operator",
            event = "checkpoint_aborted",
            checkpoint = id,
            known,
        );
        known
    }

    /// Choose how much of a key's work one event does.
    pub fn set_scheduling(&mut self, scheduling: Scheduling) {
        self.scheduling = scheduling;
    }

    /// How much of a key's work one event does.
    pub fn scheduling(&self) -> Scheduling {
        self.scheduling
    }

    /// Set the bounds of the operator's queues.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// The bounds of the operator's queues.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// What `key` is doing: its entries in [`Operator::keys_in_progress`],
    /// [`Operator::ready_keys`], [`Operator::outstanding_calls`] and
    /// [`Operator::puts_in_flight`], looked up without building those lists.
    pub fn activity(&self, key: &str) -> KeyActivity {
        match self.wait(key) {
            Wait::Call(r) => KeyActivity {
                in_progress: true,
                ready: false,
                awaiting: Some(r.index),
                saving: None,
            },
            Wait::Put(s) => KeyActivity {
                in_progress: true,
                ready: false,
                awaiting: None,
                saving: Some(s.put),
            },
            Wait::Completion { .. } => KeyActivity {
                in_progress: true,
                ready: true,
                awaiting: None,
                saving: None,
            },
            Wait::Nothing => KeyActivity {
                in_progress: false,
                ready: self.ready_unless_waiting(key),
                awaiting: None,
                saving: None,
            },
        }
    }

    /// Keys with a step to take on [`Event::Continue`] (stepwise scheduling).
    pub fn ready_keys(&self) -> Vec<String> {
        // A key waiting for its completion step has keyed state too (checked in debug
        // builds by `check_invariants`).
        let mut keys: Vec<String> = self.keys.keys().cloned().collect();
        keys.sort();
        keys.retain(|k| self.is_ready(k));
        keys
    }

    /// Keys with an action in progress: waiting for a call's outcome or a put's answer,
    /// or finished and awaiting its completion put.
    pub fn keys_in_progress(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .waits
            .iter()
            .filter(|(_, w)| !matches!(w, Wait::Nothing))
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort();
        keys
    }

    /// The keyed state, by key (in no particular order; [`Operator::snapshot`] gives it
    /// ordered).
    pub fn keys(&self) -> &HashMap<String, KeyState, impl BuildHasher + Clone> {
        &*self.keys
    }

    /// The store.
    pub fn store(&self) -> &ActionStateStore {
        &self.store
    }

    /// The calls the operator waits for, one per key at most.
    pub fn outstanding_calls(&self) -> Vec<CallRef> {
        self.waits
            .iter()
            .filter_map(|(key, w)| match w {
                Wait::Call(r) => Some(r.call(key, &self.actions)),
                _ => None,
            })
            .collect()
    }

    /// The puts in flight, one per key at most, ordered by key.
    pub fn puts_in_flight(&self) -> Vec<(String, PutId)> {
        let mut puts: Vec<(String, PutId)> = self
            .waits
            .iter()
            .filter_map(|(k, w)| match w {
                Wait::Put(s) => Some((k.clone(), s.put)),
                _ => None,
            })
            .collect();
        puts.sort();
        puts
    }

    /// Why the operator failed, if it did.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(id: u64, keys: &[&str], marker: &[Offset]) -> Checkpoint {
        Checkpoint {
            id,
            keys: keys
                .iter()
                .map(|k| {
                    (
                        k.to_string(),
                        KeyState {
                            next_seq: 1,
                            last_completed: Some(0),
                            ..KeyState::default()
                        },
                    )
                })
                .collect(),
            marker: RecoveryMarker::unfenced(marker.to_vec()),
        }
    }

    fn actions() -> Vec<ActionDef> {
        vec![ActionDef::new("a", CallChain::new(["f"]))]
    }

    #[test]
    fn a_key_waiting_for_nothing_is_the_same_as_a_key_without_an_entry() {
        let running = Wait::Completion {
            seq: 0,
            action: 0,
            state: ActionState {
                call_results: Vec::new(),
                completed: true,
                output: None,
            },
        };
        let map = |entries: &[(&str, &Wait)]| -> KeyMap<Wait> {
            entries
                .iter()
                .map(|(k, w)| (k.to_string(), (*w).clone()))
                .collect()
        };
        let idle = map(&[("a", NOTHING), ("b", &running)]);
        let fresh = map(&[("b", &running)]);
        assert!(same_waits(&idle, &fresh) && same_waits(&fresh, &idle));
        let other = map(&[("a", &running)]);
        assert!(!same_waits(&idle, &other) && !same_waits(&other, &idle));
        let more = map(&[("a", &running), ("b", &running)]);
        assert!(!same_waits(&fresh, &more) && !same_waits(&more, &fresh));
    }

    #[test]
    fn a_copy_stays_equal_through_refused_events_and_differs_after_an_accepted_one() {
        let mut op = Operator::new(actions(), 2).unwrap();
        let copy = op.clone();
        assert!(op == copy);
        let unsent = Event::PutAcked {
            key: "k".into(),
            put: PutId(7),
            offset: 0,
        };
        assert!(op.handle(unsent).is_err());
        assert!(op == copy, "a refused event leaves the operator equal");
        let input = || Event::Input {
            key: "k".into(),
            value: Datum::Null,
        };
        op.handle(input()).unwrap();
        assert!(op != copy, "an accepted input changes it");
        // The same events on another copy reach an equal operator (equal by content,
        // not by shared maps).
        let mut other = copy.clone();
        other.handle(input()).unwrap();
        assert!(op == other);
        // Another body under the same name is another action.
        let renamed = Operator::new(actions(), 2).unwrap();
        assert!(renamed != copy);
        // The text names the put in flight by key and id.
        let mut saving = Operator::new(actions(), 2).unwrap();
        let effects = saving.handle(input()).unwrap();
        let Some(Effect::Call { call, .. }) = effects.into_iter().next() else {
            panic!("the action asks for its call");
        };
        let back = Event::CallReturned {
            call,
            outcome: CallOutcome::Value(Datum::Null),
        };
        saving.handle(back).unwrap();
        // A copy that shares no map is equal, entry by entry, and then changes alone.
        let mut unshared = saving.unshared();
        assert!(unshared == saving);
        unshared.handle(input()).unwrap();
        assert!(unshared != saving);
        let text = format!("{saving:?}");
        assert!(
            text.contains(r#"puts_in_flight: [("k", PutId(0))]"#),
            "{text}"
        );
        // Operators built apart from the same definitions are equal.
        let defs = actions();
        let (one, two) = (Operator::new(defs.clone(), 2), Operator::new(defs, 2));
        assert!(one.unwrap() == two.unwrap());
    }

    #[test]
    fn parts_merge_into_their_keys_and_the_minimum_marker() {
        let merged = Checkpoint::merge(&[&part(3, &["x"], &[4]), &part(3, &["y"], &[2])]).unwrap();
        assert_eq!(merged.keys.keys().collect::<Vec<_>>(), ["x", "y"]);
        assert_eq!(merged.marker.offsets, [2]);
        assert_eq!(merged.id, 3);
    }

    #[test]
    fn parts_that_do_not_make_one_checkpoint_are_refused() {
        let twice = Checkpoint::merge(&[&part(3, &["x"], &[4]), &part(3, &["x"], &[2])]);
        assert_eq!(twice.unwrap_err(), MergeError::KeyInTwoParts("x".into()));
        let ids = Checkpoint::merge(&[&part(3, &["x"], &[4]), &part(4, &["y"], &[2])]);
        assert!(matches!(
            ids.unwrap_err(),
            MergeError::CheckpointId {
                index: 1,
                expected: 3,
                found: 4
            }
        ));
        let partitions = Checkpoint::merge(&[&part(3, &["x"], &[4]), &part(3, &["y"], &[2, 0])]);
        assert!(matches!(
            partitions.unwrap_err(),
            MergeError::PartitionCount { .. }
        ));
        assert_eq!(Checkpoint::merge(&[]).unwrap_err(), MergeError::Empty);
    }

    #[test]
    fn an_owned_restore_takes_only_the_keyed_state_of_its_keys() {
        let merged = Checkpoint::merge(&[&part(1, &["x"], &[0]), &part(1, &["y"], &[0])]).unwrap();
        let owned = Ownership::Keys(["y".to_string()].into());
        let (op, _) = Operator::restore_owned(actions(), &merged, owned, 2)
            .unwrap()
            .finish(&[0])
            .unwrap();
        assert_eq!(op.keys().keys().collect::<Vec<_>>(), ["y"]);
        let (op, _) = Operator::restore(actions(), &merged, 2)
            .unwrap()
            .finish(&[0])
            .unwrap();
        let mut all: Vec<&String> = op.keys().keys().collect();
        all.sort();
        assert_eq!(all, ["x", "y"]);
    }
}
