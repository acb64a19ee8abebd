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

mod action;
mod checkpoint;
mod events;
mod keyed;
mod restore;
mod runner;
#[cfg(test)]
mod tests;
mod waits;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::Arc;

pub use action::{ActionBody, ActionDef, ActionStep, CallChain};
pub use checkpoint::Checkpoint;
pub use events::{Effect, Event, KeyActivity, Limits, OperatorError, PutId, Scheduling};
pub use keyed::{KeyState, PendingInput, QueuedAction};
pub use restore::Restoring;

use super::defect::Defects;
use super::store::ActionStateStore;
use super::{CallOutcome, CallRef, Epoch};
use checkpoint::PendingCheckpoints;
use keyed::KeyMap;
use restore::check_actions;
use waits::{Wait, Waits};

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
    waits: Waits,
    scheduling: Scheduling,
    limits: Limits,
    /// Checkpoints taken whose completion or abort it has not heard of.
    pending_checkpoints: PendingCheckpoints,
    /// Keys a [`Event::Resume`] has yet to drive (eager scheduling), in key order: the
    /// resume goes on with them once the key it drives last no longer waits for a put.
    resuming: Arc<VecDeque<String>>,
    next_put: u64,
    failed: Option<Box<OperatorError>>,
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
        // `Arc`'s equality compares addresses first (the elements are `Eq`), as does that
        // of the waits.
        *actions == other.actions
            && *store == other.store
            && *keys == other.keys
            && *waits == other.waits
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
        let mut d = f.debug_struct("Operator");
        d.field("actions", &self.actions)
            // In key order, so that the text is the same from run to run.
            .field("keys", &self.keys.iter().collect::<BTreeMap<_, _>>())
            .field("puts_in_flight", &self.waits.puts_in_flight())
            .field("store", &self.store)
            .field("failed", &self.failed);
        if self.defects != Defects::default() {
            d.field("defects", &self.defects);
        }
        d.finish()
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
        copy.waits = self.waits.unshared();
        copy.pending_checkpoints = self.pending_checkpoints.unshared();
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
    /// checkpoint instead, see `steadfast_log::restart_without_checkpoint`).
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
            waits: Waits::default(),
            scheduling: Scheduling::default(),
            limits: Limits::default(),
            pending_checkpoints: PendingCheckpoints::default(),
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
            Event::Resume => self.on_resume(effects),
            Event::Continue { key } => self.on_continue(key, effects),
        };
        self.check_invariants();
        match result {
            Ok(()) => Ok(()),
            Err(err) => {
                effects.truncate(before);
                if !err.leaves_unchanged() {
                    tracing::error!(component = "durable.operator", event = "failed", error = %err);
                    self.failed = Some(Box::new(err.clone()));
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
        match self.waits.get(key) {
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
        self.waits
            .puts_in_flight()
            .into_iter()
            .map(|(k, put)| (k.clone(), put))
            .collect()
    }

    /// Why the operator failed, if it did.
    pub fn failure(&self) -> Option<&OperatorError> {
        self.failed.as_deref()
    }
}
