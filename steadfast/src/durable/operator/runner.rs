//! The action runner: how a key's work goes on. A resume drives the restored keys; a
//! step starts the queue's head action (or the next input) or sends a finished action's
//! completion put; running an action replays its body over the saved results, reusing
//! each that matches its call, up to the first call it must make or its finish.

use std::sync::Arc;

use super::waits::{AfterPut, Running, Wait};
use super::{ActionBody, ActionStep, Effect, Operator, OperatorError, QueuedAction, Scheduling};
use crate::durable::{args_digest, ActionState, CallOutcome, CallRef, CallResult, Datum};

/// Where running an action left it ([`Operator::run_action`]).
pub(super) enum Progress {
    /// Waiting for a call's outcome or a put's answer.
    Waiting,
    /// The action's state is completed in the store (saved before a restore).
    Completed,
    /// The body finished; the completion put is the key's next step (stepwise).
    Finishing,
}

/// The first step of an action's body that its saved results do not answer.
enum Unanswered {
    /// A call to make, with its arguments' digest.
    Call {
        function: String,
        args: Datum,
        digest: u64,
    },
    /// The body finished with this output.
    Finish(Datum),
}

impl Operator {
    /// [`super::Event::Resume`]: eager scheduling drives every restored key, in key order;
    /// stepwise scheduling leaves each to its [`super::Event::Continue`].
    pub(super) fn on_resume(&mut self, effects: &mut Vec<Effect>) -> Result<(), OperatorError> {
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

    /// Drives the keys a resume has yet to drive, one after the other, until one waits
    /// for a put: restored keys run as a synchronous executor would run them, so a put
    /// that fails stops the resume before a later key starts.
    pub(super) fn resume(&mut self, effects: &mut Vec<Effect>) -> Result<(), OperatorError> {
        while let Some(key) = self.resuming.front().cloned() {
            if matches!(self.waits.get(&key), Wait::Put(_)) {
                return Ok(());
            }
            Arc::make_mut(&mut self.resuming).pop_front();
            self.drive(&key, 0, effects)?;
            if matches!(self.waits.get(&key), Wait::Put(_)) {
                // Resumed once its put is answered.
                Arc::make_mut(&mut self.resuming).push_front(key);
                return Ok(());
            }
        }
        Ok(())
    }

    /// [`super::Event::Continue`]: the key's next step (eager scheduling: all its work
    /// up to its next wait).
    pub(super) fn on_continue(
        &mut self,
        key: String,
        effects: &mut Vec<Effect>,
    ) -> Result<(), OperatorError> {
        if !self.is_ready(&key) {
            return Err(OperatorError::NothingToContinue(key));
        }
        match self.scheduling {
            Scheduling::Eager => self.drive(&key, 0, effects),
            Scheduling::Stepwise => self.step(&key, 0, effects).map(|_| ()),
        }
    }

    /// Run the key's work until it waits on a call or a put, or has nothing left.
    /// The head action's first `verified` saved results are known to match its calls
    /// (see [`Operator::run_action`]).
    pub(super) fn drive(
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
    pub(super) fn step(
        &mut self,
        key: &str,
        verified: usize,
        effects: &mut Vec<Effect>,
    ) -> Result<bool, OperatorError> {
        // The shared maps are copied only where this step changes them.
        if matches!(self.waits.get(key), Wait::Completion { .. }) {
            let Wait::Completion { seq, action, state } = self.waits.take(key) else {
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
            return self.start_next_input(key, effects);
        };
        let progress = self.run_action(key, head, verified, effects);
        drop(keys);
        match progress? {
            Progress::Waiting => Ok(false),
            Progress::Finishing => Ok(true),
            Progress::Completed => Ok(self.action_done(key, effects)),
        }
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
        // The room is handed back once the body has run.
        let mut outcomes = std::mem::take(&mut self.outcomes);
        outcomes.extend(results.iter().take(verified).map(|r| r.outcome.clone()));
        let next = replay_saved(&*action.body, key, head, results, &mut outcomes);
        let index = outcomes.len();
        outcomes.clear();
        self.outcomes = outcomes;
        match next {
            Unanswered::Call {
                function,
                args,
                digest,
            } => {
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
                let running = Running {
                    seq: head.seq,
                    action: position,
                    index: index as u32,
                    function,
                    digest,
                    state,
                };
                self.request_call(key, &head.action, running, args, effects);
                Ok(Progress::Waiting)
            }
            Unanswered::Finish(output) => {
                self.finish_action(key, head.seq, position, output, effects)
            }
        }
    }

    /// Asks for the call `running` waits for, made by `key`'s action `action`; the key
    /// waits for its outcome.
    fn request_call(
        &mut self,
        key: &str,
        action: &str,
        running: Running,
        args: Datum,
        effects: &mut Vec<Effect>,
    ) {
        tracing::debug!(
            component = "durable.operator",
            event = "call_requested",
            key,
            seq = running.seq,
            action = %action,
            index = running.index,
            function = %running.function,
        );
        effects.push(Effect::Call {
            call: CallRef {
                key: key.to_string(),
                seq: running.seq,
                action: action.to_string(),
                index: running.index,
            },
            function: running.function.clone(),
            args,
        });
        self.waits.set(key, Wait::Call(running));
    }

    /// The body of `key`'s action at position `position` finished input `seq` with
    /// `output`: eager scheduling sends its completion put at once; stepwise scheduling
    /// leaves it to the key's completion step.
    fn finish_action(
        &mut self,
        key: &str,
        seq: u64,
        position: usize,
        output: Datum,
        effects: &mut Vec<Effect>,
    ) -> Result<Progress, OperatorError> {
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
                seq,
                position,
                state,
                AfterPut::Completed,
                effects,
            )?;
            return Ok(Progress::Waiting);
        }
        self.waits.set(
            key,
            Wait::Completion {
                seq,
                action: position,
                state,
            },
        );
        Ok(Progress::Finishing)
    }
}

/// Runs `body` for `key`'s action `head` after the call `outcomes` it has (the
/// verified ones), reusing each saved result in `results` whose function and argument
/// digest match the call the body asks for at its index. Returns the first step no
/// saved result answers; `outcomes` then holds one outcome per call before it.
fn replay_saved(
    body: &dyn ActionBody,
    key: &str,
    head: &QueuedAction,
    results: &[CallResult],
    outcomes: &mut Vec<CallOutcome>,
) -> Unanswered {
    loop {
        let (function, args) = match body.step(&head.input, outcomes) {
            ActionStep::Call { function, args } => (function, args),
            ActionStep::Finish { output } => return Unanswered::Finish(output),
        };
        let index = outcomes.len();
        let digest = args_digest(&args);
        let Some(earlier) = results.get(index) else {
            return Unanswered::Call {
                function,
                args,
                digest,
            };
        };
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
        return Unanswered::Call {
            function,
            args,
            digest,
        };
    }
}
