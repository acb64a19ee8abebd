//! What each key waits for, the part of the operator a checkpoint does not hold: the
//! outcome of the durable call it asked for, the answer to its put in flight (the
//! pending acknowledgement), or its completion step ([`Wait`], kept per key in
//! [`Waits`]); and the operator's handling of calls and puts: a call's return sends the
//! put saving its result, and only the put's acknowledgement caches the state.

use std::borrow::Cow;
use std::sync::Arc;

use super::keyed::KeyMap;
use super::{ActionDef, Effect, Operator, OperatorError, PutId, Scheduling};
use crate::durable::log::{LogError, Offset};
use crate::durable::{ActionState, CallOutcome, CallRef, CallResult, StateKey};

/// An outstanding durable call of a key (not checkpointed). The key is the map's and
/// the action's name the configured action's: the call is [`Running::call`] of them.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Running {
    pub(super) seq: u64,
    /// The action's position among the configured actions.
    pub(super) action: usize,
    pub(super) index: u32,
    pub(super) function: String,
    pub(super) digest: u64,
    pub(super) state: ActionState,
}

impl Running {
    /// The call this entry waits for, made for `key` by one of `actions`.
    pub(super) fn call(&self, key: &str, actions: &[ActionDef]) -> CallRef {
        CallRef {
            key: key.to_string(),
            seq: self.seq,
            action: actions[self.action].name.clone(),
            index: self.index,
        }
    }

    /// Whether `call`, made for the key of this entry by one of `actions`, is the one it
    /// waits for.
    pub(super) fn awaits(&self, call: &CallRef, actions: &[ActionDef]) -> bool {
        self.seq == call.seq && self.index == call.index && actions[self.action].name == call.action
    }
}

/// What a key does once its put is acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AfterPut {
    /// The put saved call `index`'s result: the action goes on after it.
    CallSaved { index: u32 },
    /// The put marked the action completed.
    Completed,
}

/// A put in flight of a key (not checkpointed).
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Saving {
    pub(super) put: PutId,
    pub(super) seq: u64,
    /// The action's position among the configured actions.
    pub(super) action: usize,
    pub(super) state: ActionState,
    pub(super) then: AfterPut,
}

/// What a key waits for (not checkpointed). One thing at most: the model of issue 1158
/// proves it of the fixed design, and this type makes it so. A key's entry stays once
/// made (as its keyed state does), so a key going from one wait to the next copies no
/// key and allocates nothing.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Wait {
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
pub(super) const NOTHING: &Wait = &Wait::Nothing;

/// Whether two wait maps say the same of every key: an entry waiting for nothing is the
/// same as no entry (a restored operator has none; a running one keeps them).
pub(super) fn same_waits(a: &KeyMap<Wait>, b: &KeyMap<Wait>) -> bool {
    let waiting = |m: &KeyMap<Wait>| m.values().filter(|w| **w != Wait::Nothing).count();
    waiting(a) == waiting(b)
        && a.iter()
            .all(|(key, w)| *w == Wait::Nothing || b.get(key) == Some(w))
}

/// Per key, what it waits for; shared until changed, so that copying an operator copies
/// no map.
#[derive(Clone, Default)]
pub(super) struct Waits(Arc<KeyMap<Wait>>);

impl Waits {
    /// What `key` waits for.
    pub(super) fn get(&self, key: &str) -> &Wait {
        self.0.get(key).unwrap_or(NOTHING)
    }

    /// Sets what `key` waits for (its entry, copied in the shared map only here).
    pub(super) fn set(&mut self, key: &str, wait: Wait) {
        let waits = Arc::make_mut(&mut self.0);
        match waits.get_mut(key) {
            Some(slot) => *slot = wait,
            None => {
                waits.insert(key.to_string(), wait);
            }
        }
    }

    /// What `key` waited for; it now waits for nothing. Only called for a key that
    /// waits, so the shared map is copied only when it changes.
    pub(super) fn take(&mut self, key: &str) -> Wait {
        Arc::make_mut(&mut self.0)
            .get_mut(key)
            .map_or(Wait::Nothing, |slot| std::mem::replace(slot, Wait::Nothing))
    }

    /// Every key's entry, in no particular order (a key may wait for nothing).
    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &Wait)> {
        self.0.iter()
    }

    /// The puts in flight, one per key at most, ordered by key.
    pub(super) fn puts_in_flight(&self) -> Vec<(&String, PutId)> {
        let mut puts: Vec<(&String, PutId)> = self
            .0
            .iter()
            .filter_map(|(k, w)| match w {
                Wait::Put(s) => Some((k, s.put)),
                _ => None,
            })
            .collect();
        puts.sort();
        puts
    }

    /// A copy that shares no map with this one.
    #[cfg(any(test, feature = "testkit"))]
    pub(super) fn unshared(&self) -> Waits {
        Waits(Arc::new((*self.0).clone()))
    }
}

/// The same waits, by address or else key by key ([`same_waits`]).
impl PartialEq for Waits {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || same_waits(&self.0, &other.0)
    }
}

impl Eq for Waits {}

impl Operator {
    /// Whether the key is waiting for a call's outcome or a put's answer.
    pub(super) fn waiting(&self, key: &str) -> bool {
        matches!(self.waits.get(key), Wait::Call(_) | Wait::Put(_))
    }

    /// The outcome of `key`'s call: it joins the action's state, whose put is sent.
    pub(super) fn on_call(
        &mut self,
        call: CallRef,
        outcome: CallOutcome,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        match self.waits.get(&call.key) {
            Wait::Call(r) if r.awaits(&call, &self.actions) => {}
            _ => return Err(OperatorError::UnexpectedCall(call)),
        }
        let Wait::Call(mut running) = self.waits.take(&call.key) else {
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
    pub(super) fn send_put(
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
        self.waits.set(
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

    pub(super) fn on_acked(
        &mut self,
        key: String,
        put: PutId,
        offset: Offset,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        if !matches!(self.waits.get(&key), Wait::Put(s) if s.put == put) {
            return Err(OperatorError::UnexpectedPut { key, put });
        }
        let Wait::Put(saving) = self.waits.take(&key) else {
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

    pub(super) fn on_failed(
        &mut self,
        key: String,
        put: PutId,
        error: LogError,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        if !matches!(self.waits.get(&key), Wait::Put(s) if s.put == put) {
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
        self.waits.take(&key);
        Err(OperatorError::PutFailed { key, put, error })
    }
}
