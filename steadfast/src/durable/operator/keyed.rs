//! Keyed state, the part of the operator a checkpoint holds: per key, its input counter,
//! the actions of its current input still queued, the inputs waiting behind it, and the
//! last input it finished ([`KeyState`]); and the key's progress through them: an input
//! arriving, the next input starting, an action completing, an input's outputs emitted.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::waits::Wait;
use super::{Effect, Operator, OperatorError, Scheduling};
use crate::durable::Datum;

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

/// The operator's per-key maps.
pub(super) type KeyMap<V> = HashMap<String, V, ahash::RandomState>;

/// Per key, the sequence number of the last input it finished: what a checkpoint's
/// recovery marker and its pruning go by.
pub(super) fn boundaries<'a>(
    keys: impl IntoIterator<Item = (&'a String, &'a KeyState)>,
) -> BTreeMap<String, u64> {
    keys.into_iter()
        .filter_map(|(k, s)| s.last_completed.map(|seq| (k.clone(), seq)))
        .collect()
}

impl Operator {
    /// Whether the key has a step to take without outside input.
    pub(super) fn is_ready(&self, key: &str) -> bool {
        !self.waiting(key) && self.ready_unless_waiting(key)
    }

    /// [`Operator::is_ready`] for a key known to wait for nothing: a finished action's
    /// completion put, or queued work.
    pub(super) fn ready_unless_waiting(&self, key: &str) -> bool {
        matches!(self.waits.get(key), Wait::Completion { .. })
            || self
                .keys
                .get(key)
                .is_some_and(|ks| !ks.queue.is_empty() || !ks.pending_inputs.is_empty())
    }

    /// A new input of `key`: it gets the key's next sequence number and waits behind
    /// the key's current input (eager scheduling then drives the key).
    pub(super) fn on_input(
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

    /// The key's queue is empty and an input waits: queue every configured action of
    /// it (with no action configured, the input is finished at once). Returns whether
    /// the key has more to do, as [`Operator::step`] does.
    pub(super) fn start_next_input(
        &mut self,
        key: &str,
        effects: &mut Vec<Effect>,
    ) -> Result<bool, OperatorError> {
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
        self.step(key, 0, effects)
    }

    /// The queue's head action completed: drop it; the input's last action
    /// finishes the input.
    /// Only called with the head in the queue, so the keyed state is changed (and,
    /// if shared, copied) only when it must be. Returns whether the key has more to do
    /// (a next action or a pending input), as [`Operator::step`] does.
    pub(super) fn action_done(&mut self, key: &str, effects: &mut Vec<Effect>) -> bool {
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
    pub(super) fn emit(&self, key: &str, seq: u64, effects: &mut Vec<Effect>) {
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
}
