//! The runner's sequential operation chain: grant, revoke and close run one at a time;
//! an operation that stops a process finishes only once the process terminated and its
//! result forwarding settled.

use super::{ChainOp, Effect, Forward, InFlight, Runner, Slot};
use crate::leadership::process::{Process, ProcessEffect, ProcessEvent};
use crate::leadership::types::{ProcessState, RunnerResult, RunnerState, Session};

impl Runner {
    /// Starts a JobMaster process for `session`; it becomes the current one.
    pub(super) fn start_process(&mut self, session: Session, effects: &mut Vec<Effect>) {
        self.slots.push(Slot {
            process: Process::with(session, self.defects),
            forward: Forward::Waiting,
        });
        self.current = Some(self.slots.len() - 1);
        self.current_process_leader = Some(session);
        effects.push(Effect::StartProcess { session });
    }

    /// Sets the runner result; only called while it is unset.
    pub(super) fn set_result(&mut self, value: RunnerResult, effects: &mut Vec<Effect>) {
        self.result = Some(value);
        self.pending_terminal = None;
        if self.state == RunnerState::Running {
            self.state = RunnerState::JobCompleted;
        }
        effects.push(Effect::CompleteResult { value });
    }

    /// Runs chain operations until one has to wait.
    pub(super) fn advance(&mut self, effects: &mut Vec<Effect>) {
        loop {
            match self.in_flight {
                Some(InFlight::Stopping { index, then_close }) => {
                    if !self.slots[index].settled() {
                        return;
                    }
                    self.in_flight = None;
                    if then_close {
                        self.finish_close(effects);
                    }
                }
                Some(_) => return,
                None => match self.chain.pop_front() {
                    None => return,
                    Some(op) => self.start(op, effects),
                },
            }
        }
    }

    /// Starts chain operation `op`: a grant asks the JobResultStore, a revoke stops the
    /// current process, a close stops it and then terminates the runner.
    fn start(&mut self, op: ChainOp, effects: &mut Vec<Effect>) {
        match op {
            ChainOp::Grant(session) => {
                if self.state != RunnerState::Running {
                    return;
                }
                // A cached terminal result is flushed in place of creating a process,
                // so under the same checks (see `on_confirmed`): a grant whose session
                // was revoked meanwhile must not complete the runner.
                self.in_flight = Some(InFlight::AwaitStore(session));
                effects.push(Effect::QueryJobResultStore);
            }
            ChainOp::Revoke => {
                if self.state != RunnerState::Running {
                    return;
                }
                // current_process_leader is deliberately kept (fix part 2).
                if self.defects.revoke_clears_leader {
                    self.current_process_leader = None;
                }
                self.stop_current(false, effects);
            }
            ChainOp::Close => {
                if !self.stop_current(true, effects) {
                    self.finish_close(effects);
                }
            }
        }
    }

    /// Closes the current process if it runs and waits for it; false if there is
    /// nothing to wait for.
    pub(super) fn stop_current(&mut self, then_close: bool, effects: &mut Vec<Effect>) -> bool {
        let Some(index) = self.current else {
            return false;
        };
        if self.slots[index].settled() {
            return false;
        }
        // An unsettled current process runs: one that closes is what an earlier stop
        // waits for, and the chain runs the next operation only once it settled.
        debug_assert_eq!(self.slots[index].process.state(), ProcessState::Running);
        // A running process accepts Close; were it closing already, nothing is to do.
        let closed = self.slots[index]
            .process
            .handle(ProcessEvent::Close)
            .unwrap_or_default();
        let session = self.slots[index].process.session();
        effects.push(Effect::CloseProcess { session });
        // Only an eager NotFinished (a seed bug) completes the result at close.
        for effect in closed {
            if let ProcessEffect::ResultCompleted(value) = effect {
                self.slots[index].forward = Forward::Scheduled(value);
                effects.push(Effect::ForwardScheduled { session });
            }
        }
        self.in_flight = Some(InFlight::Stopping { index, then_close });
        true
    }

    /// Ends a close: the result, if unset, is the cached terminal one or SUSPENDED.
    pub(super) fn finish_close(&mut self, effects: &mut Vec<Effect>) {
        if self.result.is_none() {
            let value = match self.pending_terminal {
                Some(status) => RunnerResult::Terminal(status),
                None => RunnerResult::Suspended,
            };
            self.set_result(value, effects);
        }
        self.terminated = true;
        effects.push(Effect::RunnerTerminated);
    }
}
