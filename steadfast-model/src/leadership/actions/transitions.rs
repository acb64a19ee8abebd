//! The transitions: one function per action, from the state before the step to the
//! state after it, dispatched to by
//! [`Leadership::next_state`](stateright::Model::next_state). The bulk of the steps' code,
//! apart from the guards that decide which steps are enabled.

use crate::leadership::{
    ChainOp, Cleanup, DispatcherState, JobResultEntry, Leadership, OldRunner, Outcome, Process,
    ProcessState, RunnerState, State, Status, CHAIN_CAPACITY,
};

// Named in the doc links only.
#[cfg(doc)]
use crate::leadership::Action;

/// Transitions: one function per action, each from the state before the step to the
/// state after it.
impl Leadership {
    /// [`Action::GrantLeadership`]: the election issues the session and notifies the
    /// runner's chain.
    pub(in crate::leadership) fn grant_leadership(&self, s: &State, session: u8) -> Option<State> {
        let mut next = *s;
        next.sessions = session;
        next.issued = session;
        // One job's runner may be stopped while another's runs (`jobs`).
        if Self::notified(s) {
            Self::push(&mut next, ChainOp::Grant(session));
        }
        Some(next)
    }

    /// [`Action::RevokeLeadership`]: the election revokes the issued session and
    /// notifies the runner's chain.
    pub(in crate::leadership) fn revoke_leadership(&self, s: &State) -> Option<State> {
        let mut next = *s;
        next.issued = 0;
        if Self::notified(s) {
            Self::push(&mut next, ChainOp::Revoke);
        }
        Some(next)
    }

    /// [`Action::RunGrant`]: a grant still valid flushes a cached terminal result (runner
    /// fix), completes "already done" when the JobResultStore has an entry, or creates a
    /// process.
    pub(in crate::leadership) fn run_grant(&self, s: &State, session: u8) -> Option<State> {
        let mut next = *s;
        Self::pop(&mut next);
        let valid_leader = next.runner == RunnerState::Running && next.issued == session;
        if !valid_leader {
            return Some(next);
        }
        let cached = next.pending_terminal.filter(|_| self.design.runner_fix());
        // The grant asks the JobResultStore first: an entry there wins over a cached
        // result (the runtime's order; it matters only when a rerun decided too).
        match cached {
            // The runner completes with "already done" and, as after any result it
            // completed, takes no further grant.
            _ if next.job_result != JobResultEntry::Absent => {
                if next.runner_result == Outcome::Unset {
                    next.runner_result = Outcome::AlreadyDone;
                }
                next.runner = RunnerState::JobCompleted;
            }
            Some(status) => {
                // Flush instead of creating a process.
                if next.runner_result == Outcome::Unset {
                    next.runner_result = Outcome::Terminal(status);
                }
                next.runner = RunnerState::JobCompleted;
            }
            None => {
                next.process_count += 1;
                let id = next.process_count;
                *Self::process_mut(&mut next, id) = Process {
                    state: ProcessState::Running,
                    session,
                    epoch: next.epoch,
                    result: Outcome::Unset,
                    forward_pending: false,
                    decision: None,
                };
                next.current = id;
                if self.design.runner_fix() {
                    next.current_leader = session;
                }
            }
        }
        Some(next)
    }

    /// [`Action::RunRevoke`]: a running runner closes its current process (the mutant
    /// also forgets its leader).
    pub(in crate::leadership) fn run_revoke(&self, s: &State) -> Option<State> {
        let mut next = *s;
        Self::pop(&mut next);
        let current = next.current;
        if next.runner == RunnerState::Running && self.design.revoke_clears_leader() {
            next.current_leader = 0;
        }
        if next.runner == RunnerState::Running && current != 0 {
            self.close_process(&mut next, current);
        }
        Some(next)
    }

    /// [`Action::DecideTerminal`]: the current process's scheduler decides; its signal
    /// is in flight.
    pub(in crate::leadership) fn decide_terminal(
        &self,
        s: &State,
        status: Status,
    ) -> Option<State> {
        let mut next = *s;
        let current = next.current;
        Self::process_mut(&mut next, current).decision = Some(status);
        if next.decided.is_none() {
            next.decided = Some(status);
            next.decider = current;
        }
        next.signal = current;
        Some(next)
    }

    /// [`Action::DeliverTerminalSignal`]: the decided status becomes the process's
    /// result, unless it already has one (then the terminal value may be lost).
    pub(in crate::leadership) fn deliver_terminal_signal(
        &self,
        s: &State,
        id: u8,
    ) -> Option<State> {
        let mut next = *s;
        next.signal = 0;
        let status = Self::process(&next, id)
            .decision
            .expect("a signal follows its scheduler's decision");
        let runner_unset = if Self::process(&next, id).epoch == next.epoch {
            next.runner_result == Outcome::Unset
        } else {
            Self::of_old_runner(&next, id) && next.old.is_some_and(|o| o.result == Outcome::Unset)
        };
        let p = Self::process_mut(&mut next, id);
        if p.result == Outcome::Unset {
            p.result = Outcome::Terminal(status);
            p.forward_pending = true;
        } else if runner_unset {
            // The process result is already NotFinished: the terminal value is a no-op
            // while nobody has told the dispatcher anything yet.
            next.lost_terminal = true;
        }
        Some(next)
    }

    /// [`Action::CheckLeadershipInForward`] for a process of the old runner: the old
    /// runner is closed, its leadership check fails, and only the fixed runner's cache
    /// can keep a terminal result.
    pub(in crate::leadership) fn check_leadership_in_old_forward(
        &self,
        s: &State,
        id: u8,
    ) -> Option<State> {
        let mut next = *s;
        let p = *Self::process(&next, id);
        Self::process_mut(&mut next, id).forward_pending = false;
        let runner_fix = self.design.runner_fix();
        let o = next.old.as_mut().expect("of_old_runner");
        let terminal = p.result.terminal();
        if terminal.is_some() && o.result == Outcome::Unset {
            if runner_fix && p.session == o.current_leader {
                o.pending_terminal = terminal;
            } else {
                next.lost_terminal = true;
            }
        }
        Some(next)
    }

    /// [`Action::CheckLeadershipInForward`]: the runner completes with the process's
    /// result while its session is valid; otherwise the fixed runner caches a terminal
    /// result of its current process leader, and any other is dropped.
    pub(in crate::leadership) fn check_leadership_in_forward(
        &self,
        s: &State,
        id: u8,
    ) -> Option<State> {
        let mut next = *s;
        let p = *Self::process(&next, id);
        Self::process_mut(&mut next, id).forward_pending = false;
        let terminal = p.result.terminal();
        let mut kept = false;
        if self.design.runner_fix()
            && terminal.is_some()
            && next.runner_result == Outcome::Unset
            && p.session == next.current_leader
        {
            next.pending_terminal = terminal;
            kept = true;
        }
        if next.runner == RunnerState::Running && next.issued == p.session {
            if next.runner_result == Outcome::Unset {
                next.runner_result = p.result;
            }
            next.runner = RunnerState::JobCompleted;
            kept = true;
        }
        if terminal.is_some() && !kept && next.runner_result == Outcome::Unset {
            next.lost_terminal = true;
        }
        Some(next)
    }

    /// [`Action::TerminateService`]: the process terminates; with part 1 of the fix its
    /// NotFinished comes only now.
    pub(in crate::leadership) fn terminate_service(&self, s: &State, id: u8) -> Option<State> {
        let mut next = *s;
        let process_fix = self.design.process_fix();
        let p = Self::process_mut(&mut next, id);
        p.state = ProcessState::Terminated;
        if process_fix && p.result == Outcome::Unset {
            p.result = Outcome::NotFinished;
            p.forward_pending = true;
        }
        Some(next)
    }

    /// [`Action::DispatcherFailover`]: the dispatcher stops and closes its runner.
    pub(in crate::leadership) fn dispatcher_failover(&self, s: &State) -> Option<State> {
        let mut next = *s;
        next.dispatcher = DispatcherState::Stopping;
        if next.has_runner {
            self.start_runner_close(&mut next);
        }
        Some(next)
    }

    /// [`Action::CloseRunner`]: the runner's close completes; the fixed runner completes
    /// with its cached terminal status or SUSPENDED.
    pub(in crate::leadership) fn close_runner(&self, s: &State) -> Option<State> {
        let mut next = *s;
        next.runner_terminated = true;
        if self.design.runner_fix() && next.runner_result == Outcome::Unset {
            next.runner_result = Self::result_at_close(next.pending_terminal);
        }
        Some(next)
    }

    /// [`Action::HandleRunnerResult`]: a terminal result is recorded in the JobResultStore
    /// and starts the global cleanup; a JobMaster failure may end the JobManager; the
    /// dispatcher then closes the runner.
    pub(in crate::leadership) fn handle_runner_result(&self, s: &State) -> Option<State> {
        let mut next = *s;
        next.result_handled = true;
        let entry = Self::entry_for(next.runner_result, s.epoch);
        match next.runner_result {
            // The entry is written if missing (Flink's
            // `createDirtyJobResultEntryIfMissingAsync`: the first writer's stays) and
            // the global cleanup follows either way, unless one is under way. Someone
            // else's entry ("already done") is cleaned up after the same way.
            _ if entry.is_some() || next.runner_result == Outcome::AlreadyDone => {
                if let Some(decision) = entry {
                    Self::record_entry(&mut next, s.epoch, decision);
                }
                if next.cleanup == Cleanup::Idle {
                    next.cleanup = Cleanup::RemovingJobGraph;
                }
            }
            // A recovered job that cannot start, or a failed JobMaster: a fatal error
            // (Flink's `Dispatcher.runJob`), the JobManager process exits.
            Outcome::InitFailed | Outcome::JobMasterFailed => {
                next.fatal_exit = true;
                self.crash(&mut next);
                return Some(next);
            }
            // SUSPENDED: local cleanup only; the JobGraph stays for recovery.
            // NotFinished (an exceptional runner result) would take the fatal error
            // path; no runner result takes that value in this model.
            _ => {}
        }
        // The dispatcher removes the job and closes its runner.
        self.start_runner_close(&mut next);
        Some(next)
    }

    /// [`Action::RemoveJobGraph`]: global cleanup, first half.
    pub(in crate::leadership) fn remove_job_graph(&self, s: &State) -> Option<State> {
        let mut next = *s;
        next.job_graph = false;
        next.cleanup = Cleanup::MarkingClean;
        Some(next)
    }

    /// [`Action::MarkResultClean`]: global cleanup, second half.
    pub(in crate::leadership) fn mark_result_clean(&self, s: &State) -> Option<State> {
        let mut next = *s;
        debug_assert_ne!(next.job_result, JobResultEntry::Absent);
        next.job_result = JobResultEntry::Clean;
        next.cleanup = Cleanup::Idle;
        Some(next)
    }

    /// [`Action::OldRemoveJobGraph`]: the old dispatcher's global cleanup, first half.
    pub(in crate::leadership) fn old_remove_job_graph(&self, s: &State) -> Option<State> {
        let mut next = *s;
        next.job_graph = false;
        next.old.as_mut().expect("guarded").cleanup = Cleanup::MarkingClean;
        Some(next)
    }

    /// [`Action::OldMarkResultClean`]: the old dispatcher's global cleanup, second half.
    pub(in crate::leadership) fn old_mark_result_clean(&self, s: &State) -> Option<State> {
        let mut next = *s;
        debug_assert_ne!(next.job_result, JobResultEntry::Absent);
        next.job_result = JobResultEntry::Clean;
        next.old.as_mut().expect("guarded").cleanup = Cleanup::Idle;
        Self::retire_old(&mut next);
        Some(next)
    }

    /// [`Action::FailInitialization`] and [`Action::FailJobMaster`]: the current
    /// process's result completes with the failure `result`.
    pub(in crate::leadership) fn fail_job_master(
        &self,
        s: &State,
        result: Outcome,
    ) -> Option<State> {
        let mut next = *s;
        let p = Self::process_mut(&mut next, s.current);
        p.result = result;
        p.forward_pending = true;
        Some(next)
    }

    /// [`Action::CloseOldRunner`]: the old runner's close completes; the fixed runner
    /// completes with its cached terminal status or SUSPENDED.
    pub(in crate::leadership) fn close_old_runner(&self, s: &State) -> Option<State> {
        let mut next = *s;
        let runner_fix = self.design.runner_fix();
        let o = next.old.as_mut().expect("guarded");
        o.terminated = true;
        if runner_fix && o.result == Outcome::Unset {
            o.result = Self::result_at_close(o.pending_terminal);
        }
        Self::retire_old(&mut next);
        Some(next)
    }

    /// [`Action::OldDispatcherHandlesResult`]: the old dispatcher records a terminal
    /// result, or cleans up after an "already done", unless fenced stores refuse it.
    pub(in crate::leadership) fn old_dispatcher_handles_result(&self, s: &State) -> Option<State> {
        let mut next = *s;
        let mut o = next.old.expect("guarded");
        o.result_handled = true;
        // The old dispatcher is no longer leader: fenced stores refuse its requests, so
        // it starts no cleanup.
        let open = !self.fenced_result_store;
        let old_epoch = s.epoch - 1;
        let entry = Self::entry_for(o.result, old_epoch);
        let cleans = match o.result {
            // As the leader's: the entry if missing, then the cleanup unless under way.
            _ if entry.is_some() || o.result == Outcome::AlreadyDone => {
                open && {
                    if let Some(decision) = entry {
                        Self::record_entry(&mut next, old_epoch, decision);
                    }
                    o.cleanup == Cleanup::Idle
                }
            }
            // Any other failure is a fatal error: the old JobManager process exits.
            Outcome::InitFailed | Outcome::JobMasterFailed => {
                Self::old_jobmanager_exits(&mut next);
                return Some(next);
            }
            _ => false,
        };
        if cleans {
            o.cleanup = Cleanup::RemovingJobGraph;
        }
        next.old = Some(o);
        Self::retire_old(&mut next);
        Some(next)
    }

    /// The JobManager process of `epoch` dies: its processes are Killed (results kept,
    /// forwards dropped), a signal to one of them is dropped with the scheduler that
    /// sent it, and a decision no JobResultStore entry recorded dies with it.
    pub(super) fn kill_jobmanager(next: &mut State, epoch: u8) {
        if next.decided.is_some() && next.job_result == JobResultEntry::Absent {
            next.crash_lost = true;
        }
        for p in next.processes[..usize::from(next.process_count)].iter_mut() {
            if p.epoch == epoch {
                p.state = ProcessState::Killed;
                p.forward_pending = false;
            }
        }
        if next.signal != 0 && Self::process(next, next.signal).epoch == epoch {
            next.signal = 0;
        }
    }

    /// The old JobManager's fatal error ends its process: its dispatcher, runner and
    /// processes vanish beside the leader, which goes on (it runs on another host).
    fn old_jobmanager_exits(next: &mut State) {
        Self::kill_jobmanager(next, next.epoch - 1);
        next.old = None;
        // When the leader started no runner, the old one was the latest: none is left.
        if !next.has_runner {
            next.runner_killed = true;
        }
        next.fatal_exit = true;
    }

    /// [`Action::CrashJobManager`]: the current epoch's JobManager process dies.
    pub(in crate::leadership) fn crash_job_manager(&self, s: &State) -> Option<State> {
        let mut next = *s;
        self.crash(&mut next);
        Some(next)
    }

    /// [`Action::RecoverJob`]: the next dispatcher leader starts (the old one, on another
    /// host, may go on stopping beside it), reads the stores and recovers a JobGraph
    /// without an entry into a new runner.
    pub(in crate::leadership) fn recover_job(&self, s: &State) -> Option<State> {
        let mut next = *s;
        let stopping = self.leaves_old_stopping(&next);
        if stopping {
            next.old = Some(self.old_runner(&next));
            // Fenced, an old dispatcher that had only a cleanup left is done.
            Self::retire_old(&mut next);
        }
        // A dispatcher that goes on leading keeps the cleanup under way; a new one (on
        // another host, or after a crash) starts from its read.
        if stopping || next.cleanup == Cleanup::Idle {
            next.cleanup = Self::cleanup_from_stores(&next);
        }
        let epoch = next.epoch;
        next.epoch += 1;
        next.dispatcher = DispatcherState::Leading;
        next.issued = 0;
        for p in next.processes.iter_mut() {
            // A runner that is gone changes nothing with its late callbacks.
            if !(stopping && p.epoch == epoch) {
                p.forward_pending = false;
            }
        }
        let recover = next.job_graph && next.job_result == JobResultEntry::Absent;
        next.has_runner = recover;
        next.result_handled = false;
        next.runner = if recover {
            RunnerState::Running
        } else {
            RunnerState::Stopped
        };
        next.runner_result = Outcome::Unset;
        next.chain = [ChainOp::Empty; CHAIN_CAPACITY];
        next.chain_len = 0;
        next.current = 0;
        next.current_leader = 0;
        next.pending_terminal = None;
        next.runner_terminated = !recover;
        if recover {
            next.runner_killed = false;
            next.runner_epoch = next.epoch;
        }
        Some(next)
    }

    /// The runner of `state`'s epoch as the old runner, still stopping beside the next
    /// leader.
    fn old_runner(&self, state: &State) -> OldRunner {
        OldRunner {
            result: state.runner_result,
            pending_terminal: state.pending_terminal,
            current: state.current,
            current_leader: state.current_leader,
            terminated: state.runner_terminated,
            result_handled: state.result_handled,
            // The next leader's epoch fences the stores: they refuse the old
            // dispatcher's outstanding requests.
            cleanup: if self.fenced_result_store {
                Cleanup::Idle
            } else {
                state.cleanup
            },
        }
    }
}
