//! The action execution operator as a sans-IO state machine (flink-agents
//! `ActionExecutionOperator`, with the fix for flink-agents issue 1158).
//!
//! Inputs arrive per key and get sequence numbers 0, 1, 2, ...; each input queues
//! every configured action; one input per key runs at a time. An action's body is
//! deterministic code that, given the input and the results of its earlier calls,
//! asks for the next durable call or finishes. A durable call first looks for a
//! matching saved result at its index (same function id and argument digest); if
//! there is none the operator returns an [`Effect::Call`] and waits for the
//! driver's [`Event::CallReturned`], then saves the result with a put before the
//! action continues. A mismatched saved result truncates the saved list there.
//!
//! The operator owns an [`ActionStateStore`] over an injected [`Log`]; external
//! calls and outputs are effects. A snapshot captures the keyed state and the
//! recovery marker built from the same keyed state's completed-sequence
//! boundaries; restore rebuilds the store from that marker.
//!
//! [`Scheduling`] says how much work one event does. `Eager` runs a key's work
//! until it waits on a call (a restored job resumes at once). `Stepwise` is the
//! continuation executor's mailbox: starting an action and an action's completion
//! put are each their own step, taken on [`Event::Continue`], so a checkpoint
//! barrier or another key's work can come in between (the window in which a
//! checkpoint sees an action queued after its first call was saved).
//!
//! The configured actions and every map of the operator's state sit behind `Arc`s and
//! are copied on write: [`Operator::fork`] shares them until one side changes one, so a
//! fork that then refuses an event has copied nothing.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::log::{Cancellation, Log};
use super::store::{ActionStateStore, PruneReport, RebuildReport, RecoveryMarker, StoreError};
use super::{args_digest, ActionState, CallOutcome, CallRef, CallResult, Datum, StateKey};

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
    /// An action is in progress: waiting for a call's outcome, or finished and
    /// awaiting its completion put.
    pub in_progress: bool,
    /// The key has a step to take on [`Event::Continue`].
    pub ready: bool,
    /// The index of the call the key waits for.
    pub awaiting: Option<u32>,
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
    /// The completed-sequence boundaries this checkpoint captured.
    pub fn last_completed(&self) -> BTreeMap<String, u64> {
        boundaries(&self.keys)
    }
}

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
    /// Start running the actions a restore brought back (eager scheduling; with
    /// stepwise scheduling each key goes on with [`Event::Continue`]).
    Resume,
    /// Take the key's next step (stepwise scheduling; see [`Operator::ready_keys`]).
    Continue {
        /// The key.
        key: String,
    },
}

/// Effects the operator asks its driver to carry out.
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

/// Errors of the operator.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OperatorError {
    /// A put or a store operation failed; the operator is failed.
    #[error("store: {0}")]
    Store(StoreError),
    /// A put's acknowledgement wait was cancelled; the operator is failed and its
    /// cancellation signal stays set.
    #[error("cancelled while saving a call result")]
    Cancelled,
    /// A call outcome arrived for a call the operator is not waiting for.
    #[error("unexpected call outcome for {0:?}")]
    UnexpectedCall(CallRef),
    /// A checkpoint names an action this operator does not have, or is otherwise
    /// inconsistent.
    #[error("invalid checkpoint: {0}")]
    InvalidCheckpoint(String),
    /// The operator failed earlier and accepts nothing more; restore it.
    #[error("operator failed earlier: {0}")]
    Failed(String),
    /// Two actions share one name.
    #[error("duplicate action name {0:?}")]
    DuplicateAction(String),
    /// [`Event::Continue`] for a key with no step to take (idle, or waiting for a
    /// call's outcome); the operator is unchanged.
    #[error("key {0:?} has no step to continue")]
    NothingToContinue(String),
}

impl From<StoreError> for OperatorError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Cancelled => OperatorError::Cancelled,
            other => OperatorError::Store(other),
        }
    }
}

/// An outstanding durable call of a key (not checkpointed). The key is the map's and
/// the action's name the configured action's: the call is [`Running::call`] of them.
#[derive(Clone)]
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

enum Progress {
    /// Waiting for a call's outcome.
    Waiting,
    /// The action's state is completed in the store: saved before, or saved just now
    /// by its completion put (eager scheduling).
    Completed,
    /// The body finished; the completion put is the key's next step.
    Finishing,
}

/// The operator's per-key maps.
type KeyMap<V> = HashMap<String, V, ahash::RandomState>;

/// The action execution operator.
pub struct Operator<L: Log> {
    actions: Arc<[ActionDef]>,
    store: ActionStateStore<L>,
    /// Per key, its keyed state. Looked up at every event, so hashed (aHash, randomly
    /// keyed: keys come from outside); a checkpoint holds it ordered.
    keys: Arc<KeyMap<KeyState>>,
    /// Per key, the call it waits for. Looked up at every event, so hashed (aHash,
    /// randomly keyed: keys come from outside) rather than ordered.
    running: Arc<KeyMap<Running>>,
    /// Per key, a finished action's completed state awaiting its put (stepwise).
    completing: Arc<KeyMap<(StateKey, ActionState)>>,
    scheduling: Scheduling,
    pending_checkpoints: Arc<BTreeMap<u64, BTreeMap<String, u64>>>,
    cancel: Cancellation,
    failed: Option<String>,
    /// Room for the outcomes an action's body is run from, kept from run to run (empty
    /// between runs).
    outcomes: Vec<CallOutcome>,
}

impl<L: Log> std::fmt::Debug for Operator<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator")
            .field("actions", &self.actions)
            // In key order, so that the text is the same from run to run.
            .field("keys", &self.keys.iter().collect::<BTreeMap<_, _>>())
            .field("store", &self.store)
            .field("failed", &self.failed)
            .finish()
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

impl<L: Log> Operator<L> {
    /// A fresh operator (no checkpoint to restore) running `actions` for every
    /// input, saving call results to `log`.
    pub fn new(actions: Vec<ActionDef>, log: L) -> Result<Self, OperatorError> {
        Self::new_with_cancellation(actions, log, Cancellation::new())
    }

    /// [`Operator::new`] with the task's cancellation signal supplied.
    pub fn new_with_cancellation(
        actions: Vec<ActionDef>,
        log: L,
        cancel: Cancellation,
    ) -> Result<Self, OperatorError> {
        check_actions(&actions)?;
        let store = ActionStateStore::with_cancellation(log, cancel.clone());
        tracing::info!(
            component = "durable.operator",
            event = "start",
            restored = false
        );
        Ok(Operator {
            actions: actions.into(),
            store,
            keys: Arc::default(),
            running: Arc::default(),
            completing: Arc::default(),
            scheduling: Scheduling::default(),
            pending_checkpoints: Arc::default(),
            cancel,
            failed: None,
            outcomes: Vec::new(),
        })
    }

    /// An operator restored from `checkpoint`: keyed state from the checkpoint, the
    /// store rebuilt by replaying `log` from the checkpoint's marker. Restored
    /// actions start running on [`Event::Resume`].
    pub fn restore(
        actions: Vec<ActionDef>,
        log: L,
        checkpoint: &Checkpoint,
    ) -> Result<(Self, RebuildReport), OperatorError> {
        Self::restore_with_cancellation(actions, log, checkpoint, Cancellation::new())
    }

    /// [`Operator::restore`] with the task's cancellation signal supplied.
    pub fn restore_with_cancellation(
        actions: Vec<ActionDef>,
        log: L,
        checkpoint: &Checkpoint,
        cancel: Cancellation,
    ) -> Result<(Self, RebuildReport), OperatorError> {
        check_actions(&actions)?;
        for (key, ks) in &checkpoint.keys {
            for q in &ks.queue {
                if !actions.iter().any(|a| a.name == q.action) {
                    return Err(OperatorError::InvalidCheckpoint(format!(
                        "key {key:?} queues unknown action {:?}",
                        q.action
                    )));
                }
                if q.seq >= ks.next_seq {
                    return Err(OperatorError::InvalidCheckpoint(format!(
                        "key {key:?} queues sequence {} but next sequence is {}",
                        q.seq, ks.next_seq
                    )));
                }
            }
        }
        let mut store = ActionStateStore::with_cancellation(log, cancel.clone());
        let report = store.rebuild(&checkpoint.marker, &checkpoint.last_completed())?;
        tracing::info!(
            component = "durable.operator",
            event = "start",
            restored = true,
            checkpoint = checkpoint.id,
            keys = checkpoint.keys.len(),
            records_scanned = report.records_scanned,
            states_loaded = report.states_loaded,
        );
        Ok((
            Operator {
                actions: actions.into(),
                store,
                keys: Arc::new(
                    checkpoint
                        .keys
                        .iter()
                        .map(|(k, ks)| (k.clone(), ks.clone()))
                        .collect(),
                ),
                running: Arc::default(),
                completing: Arc::default(),
                scheduling: Scheduling::default(),
                pending_checkpoints: Arc::default(),
                cancel,
                failed: None,
                outcomes: Vec::new(),
            },
            report,
        ))
    }

    /// Handle one event, returning the effects it caused.
    pub fn handle(&mut self, event: Event) -> Result<Vec<Effect>, OperatorError> {
        if let Some(reason) = &self.failed {
            return Err(OperatorError::Failed(reason.clone()));
        }
        // Nearly every event has an effect (a call or an output).
        let mut effects = Vec::with_capacity(1);
        let result = match event {
            Event::Input { key, value } => self.on_input(key, value, &mut effects),
            Event::CallReturned { call, outcome } => self.on_call(call, outcome, &mut effects),
            Event::Resume => {
                tracing::info!(component = "durable.operator", event = "resume");
                match self.scheduling {
                    Scheduling::Eager => {
                        // In key order, as the checkpoint holds them.
                        let mut keys: Vec<String> = self.keys.keys().cloned().collect();
                        keys.sort_unstable();
                        keys.into_iter()
                            .try_for_each(|k| self.drive(&k, 0, &mut effects))
                    }
                    Scheduling::Stepwise => Ok(()),
                }
            }
            Event::Continue { key } => self.on_continue(key, &mut effects),
        };
        match result {
            Ok(()) => Ok(effects),
            Err(err) => {
                if !matches!(
                    err,
                    OperatorError::UnexpectedCall(_) | OperatorError::NothingToContinue(_)
                ) {
                    tracing::error!(component = "durable.operator", event = "failed", error = %err);
                    self.failed = Some(err.to_string());
                }
                Err(err)
            }
        }
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

    /// Whether the key has a step to take without outside input.
    fn is_ready(&self, key: &str) -> bool {
        !self.running.contains_key(key) && self.ready_unless_running(key)
    }

    /// [`Operator::is_ready`] for a key known not to wait for a call: a finished action's
    /// completion put, or queued work.
    fn ready_unless_running(&self, key: &str) -> bool {
        self.completing.contains_key(key)
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
        let ks = Arc::make_mut(&mut self.keys)
            .entry(key.clone())
            .or_default();
        let seq = ks.next_seq;
        ks.next_seq += 1;
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
        match self.running.get(&call.key) {
            Some(r) if r.awaits(&call, &self.actions) => {}
            _ => return Err(OperatorError::UnexpectedCall(call)),
        }
        let Some(mut running) = Arc::make_mut(&mut self.running).remove(&call.key) else {
            return Err(OperatorError::UnexpectedCall(call));
        };
        running.state.call_results.push(CallResult {
            function: running.function,
            args_digest: running.digest,
            outcome,
        });
        let CallRef {
            key,
            seq,
            action,
            index,
        } = call;
        // The event's action name becomes the cache's, if the put makes a new entry.
        self.store
            .put_at(&key, seq, Cow::Owned(action), running.state)?;
        tracing::debug!(
            component = "durable.operator",
            event = "call_saved",
            key = %key,
            seq,
            action = %self.actions[running.action].name,
            index,
        );
        match self.scheduling {
            // The action goes on from the result just saved: every saved result
            // before it answered a call this operator made, so none needs checking.
            Scheduling::Eager => self.drive(&key, index as usize + 1, effects),
            // ... to its next call, or to its completion step.
            Scheduling::Stepwise => self.step(&key, index as usize + 1, effects).map(|_| ()),
        }
    }

    /// Run the key's work until it waits on a call or has nothing left.
    /// The head action's first `verified` saved results are known to match its calls
    /// (see [`Operator::run_action`]).
    fn drive(
        &mut self,
        key: &str,
        verified: usize,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        // A step that leaves the key waiting on a call says so (it returns false), so
        // only the entry needs the lookup.
        if self.running.contains_key(key) {
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
        let completing = if self.completing.contains_key(key) {
            Arc::make_mut(&mut self.completing).remove(key)
        } else {
            None
        };
        if let Some((sk, state)) = completing {
            self.store.put(&sk, state)?;
            return Ok(self.action_done(key, effects));
        }
        // A second handle on the keyed state lets the action read its queue entry in
        // place (running an action does not change the keyed state). It is dropped
        // before the keyed state changes: while it lives, a change would copy the map.
        let keys = Arc::clone(&self.keys);
        let Some(ks) = keys.get(key) else {
            return Ok(false);
        };
        let Some(head) = ks.queue.front() else {
            if ks.pending_inputs.is_empty() {
                return Ok(false);
            }
            drop(keys);
            let Some(ks) = Arc::make_mut(&mut self.keys).get_mut(key) else {
                return Ok(false);
            };
            let Some(next) = ks.pending_inputs.pop_front() else {
                return Ok(false);
            };
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
        let Some(ks) = Arc::make_mut(&mut self.keys).get_mut(key) else {
            return false;
        };
        let Some(head) = ks.queue.pop_front() else {
            return false;
        };
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
        let Some((position, action)) = self
            .actions
            .iter()
            .enumerate()
            .find(|(_, a)| a.name == head.action)
        else {
            return Err(OperatorError::InvalidCheckpoint(format!(
                "queued action {:?} is not configured",
                head.action
            )));
        };
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
                    Arc::make_mut(&mut self.running).insert(
                        key.to_string(),
                        Running {
                            seq: head.seq,
                            action: position,
                            index,
                            function,
                            digest,
                            state,
                        },
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
                        // The completion put is the very next step: take it now rather
                        // than park the state for a step that would take it at once.
                        self.store
                            .put_at(key, head.seq, Cow::Borrowed(&head.action), state)?;
                        return Ok(Progress::Completed);
                    }
                    let sk = StateKey {
                        key: key.to_string(),
                        seq: head.seq,
                        action: head.action.clone(),
                    };
                    Arc::make_mut(&mut self.completing).insert(key.to_string(), (sk, state));
                    return Ok(Progress::Finishing);
                }
            }
        }
    }

    /// Capture a checkpoint: the keyed state and the recovery marker built from the
    /// same keyed state's completed-sequence boundaries.
    pub fn snapshot(&mut self, id: u64) -> Result<Checkpoint, OperatorError> {
        if let Some(reason) = &self.failed {
            return Err(OperatorError::Failed(reason.clone()));
        }
        let bounds = boundaries(self.keys.iter());
        let marker = self.store.recovery_marker(&bounds)?;
        tracing::info!(
            component = "durable.operator",
            event = "snapshot",
            checkpoint = id,
            marker = ?marker.offsets,
            keys = self.keys.len(),
        );
        Arc::make_mut(&mut self.pending_checkpoints).insert(id, bounds);
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

    /// What `key` is doing: its entries in [`Operator::keys_in_progress`],
    /// [`Operator::ready_keys`] and [`Operator::outstanding_calls`], looked up without
    /// building those lists.
    pub fn activity(&self, key: &str) -> KeyActivity {
        // Each map is looked up once: a key waiting for a call is in progress and not
        // ready whatever else holds.
        match self.running.get(key) {
            Some(r) => KeyActivity {
                in_progress: true,
                ready: false,
                awaiting: Some(r.index),
            },
            None => KeyActivity {
                in_progress: self.completing.contains_key(key),
                ready: self.ready_unless_running(key),
                awaiting: None,
            },
        }
    }

    /// Keys with a step to take on [`Event::Continue`] (stepwise scheduling).
    pub fn ready_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.keys.keys().cloned().collect();
        keys.extend(self.completing.keys().cloned());
        keys.sort();
        keys.dedup();
        keys.retain(|k| self.is_ready(k));
        keys
    }

    /// Keys with an action in progress: waiting for a call's outcome, or finished
    /// and awaiting its completion put.
    pub fn keys_in_progress(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .running
            .keys()
            .chain(self.completing.keys())
            .cloned()
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// An independent copy of this operator over `log`, which should hold the same
    /// records (a copy of the log: with a shared log the two would write into each
    /// other's partitions). The copy's cancellation signal is its own, set if this
    /// one's is.
    pub fn fork<M: Log>(&self, log: M) -> Operator<M> {
        let cancel = Cancellation::new();
        if self.cancel.is_cancelled() {
            cancel.cancel();
        }
        Operator {
            actions: Arc::clone(&self.actions),
            store: self.store.fork(log, cancel.clone()),
            keys: Arc::clone(&self.keys),
            running: Arc::clone(&self.running),
            completing: Arc::clone(&self.completing),
            scheduling: self.scheduling,
            pending_checkpoints: Arc::clone(&self.pending_checkpoints),
            cancel,
            failed: self.failed.clone(),
            outcomes: Vec::new(),
        }
    }

    /// The keyed state, by key (in no particular order; [`Operator::snapshot`] gives it
    /// ordered).
    pub fn keys(&self) -> &HashMap<String, KeyState, impl BuildHasher + Clone> {
        &*self.keys
    }

    /// The store.
    pub fn store(&self) -> &ActionStateStore<L> {
        &self.store
    }

    /// The store, mutably (for inspection and fault set-up).
    pub fn store_mut(&mut self) -> &mut ActionStateStore<L> {
        &mut self.store
    }

    /// The calls the operator waits for, one per key at most.
    pub fn outstanding_calls(&self) -> Vec<CallRef> {
        self.running
            .iter()
            .map(|(key, r)| r.call(key, &self.actions))
            .collect()
    }

    /// The task's cancellation signal (shared with the store's puts).
    pub fn cancellation(&self) -> Cancellation {
        self.cancel.clone()
    }

    /// Whether the task was cancelled. Stays true once set.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Why the operator failed, if it did.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}
