//! The guards: each component's enabled steps, collected in turn by
//! [`Leadership::actions`](stateright::Model::actions). They only read a state, so they
//! live apart from the transitions that build the next one.

use crate::leadership::{
    Action, ChainOp, Cleanup, DispatcherState, Leadership, Ordering, Outcome, Process,
    ProcessState, RunnerState, State, Status,
};

/// Guards: the enabled steps of each component, in the order the checker explores them.
impl Leadership {
    /// Every enabled step, component by component: only enabled actions are emitted, so
    /// `next_state` always returns a state. The model's `actions` unless it is reduced.
    pub fn enabled_steps(&self, s: &State, actions: &mut Vec<Action>) {
        self.election_steps(s, actions);
        self.chain_steps(s, actions);
        self.scheduler_steps(s, actions);
        self.jobmaster_failure_steps(s, actions);
        self.signal_steps(s, actions);
        self.process_steps(s, actions);
        self.dispatcher_steps(s, actions);
        self.old_jobmanager_steps(s, actions);
        self.crash_steps(s, actions);
    }

    /// Leader election: notifications reach a running runner only.
    pub(in crate::leadership) fn election_steps(&self, s: &State, actions: &mut Vec<Action>) {
        let runner_running = Self::notified(s);
        if runner_running && s.issued == 0 && s.sessions < self.grants {
            actions.push(Action::GrantLeadership(s.sessions + 1));
        }
        if runner_running && s.issued != 0 {
            actions.push(Action::RevokeLeadership(s.issued));
        }
    }

    /// The runner's sequential chain runs its head operation.
    pub(in crate::leadership) fn chain_steps(&self, s: &State, actions: &mut Vec<Action>) {
        if s.chain_len == 0 || self.chain_blocked(s) {
            return;
        }
        match s.chain[0] {
            ChainOp::Grant(session) => actions.push(Action::RunGrant(session)),
            ChainOp::Revoke => {
                let closes_signalled = Self::current_process(s)
                    .is_some_and(|p| p.state == ProcessState::Running)
                    && s.runner == RunnerState::Running
                    && !self.close_allowed(s);
                if !closes_signalled {
                    actions.push(Action::RunRevoke);
                }
            }
            ChainOp::Empty => {}
        }
    }

    /// The scheduler of the current process decides, once; with `rerun-decides` every
    /// run's scheduler does, one signal in flight at a time, and otherwise only the
    /// first run's.
    pub(in crate::leadership) fn scheduler_steps(&self, s: &State, actions: &mut Vec<Action>) {
        let Some(p) = Self::current_process(s) else {
            return;
        };
        let may_decide = if self.rerun_decides {
            p.decision.is_none() && s.signal == 0
        } else {
            s.decided.is_none()
        };
        if may_decide && self.scheduler_runs(p) {
            for status in Status::ALL.iter().take(self.statuses as usize) {
                actions.push(Action::DecideTerminal(*status));
            }
        }
    }

    /// Whether `p`'s scheduler still runs: its JobMaster service runs (and, with
    /// `decide-while-closing`, drains during the close), whatever the process's result
    /// future holds. In Flink the scheduler never reads that future: the unpatched
    /// close completes it with `JobNotFinishedException` and only then closes the
    /// service, and `jobMasterFailed` completes it while the JobMaster goes on.
    fn scheduler_runs(&self, p: &Process) -> bool {
        let service_runs = p.state == ProcessState::Running
            || (self.decide_while_closing && p.state == ProcessState::Closing);
        let result_allows = match p.result {
            Outcome::Unset => true,
            // No service was ever created.
            Outcome::InitFailed => false,
            Outcome::JobMasterFailed => !self.failures_before_decision,
            // NotFinished from the unpatched close (a running process never holds one).
            _ => p.state == ProcessState::Closing,
        };
        service_runs && result_allows
    }

    /// The current process's JobMaster may fail to initialise before its scheduler
    /// exists (so before it decides), and may fail at any time its process's result is
    /// still open, closing or not, decided or not: Flink's
    /// `DefaultJobMasterServiceProcess.jobMasterFailed` completes the result future
    /// with no check of a decision, and the terminal signal, queued on the JobMaster's
    /// executor, loses the race when the failure comes first.
    pub(in crate::leadership) fn jobmaster_failure_steps(
        &self,
        s: &State,
        actions: &mut Vec<Action>,
    ) {
        if !self.jobmaster_failures {
            return;
        }
        let Some(p) = Self::current_process(s) else {
            return;
        };
        if p.result != Outcome::Unset {
            return;
        }
        if p.state == ProcessState::Running && s.decider != s.current {
            actions.push(Action::FailInitialization);
        }
        let open = if self.failures_before_decision {
            p.state == ProcessState::Running && s.decider != s.current
        } else {
            matches!(p.state, ProcessState::Running | ProcessState::Closing)
        };
        if open {
            actions.push(Action::FailJobMaster);
        }
    }

    /// The scheduler's terminal signal in flight reaches its process, as the ordering
    /// allows.
    pub(in crate::leadership) fn signal_steps(&self, s: &State, actions: &mut Vec<Action>) {
        if s.signal == 0 {
            return;
        }
        let enabled = match Self::process(s, s.signal).state {
            ProcessState::Running => self.ordering != Ordering::B,
            ProcessState::Closing => true,
            ProcessState::Terminated => self.late_signal,
            // A crash drops the signal with the scheduler that sent it.
            ProcessState::Killed => false,
        };
        if enabled {
            actions.push(Action::DeliverTerminalSignal(s.signal));
        }
    }

    /// Forward callbacks and service terminations, by process id.
    pub(in crate::leadership) fn process_steps(&self, s: &State, actions: &mut Vec<Action>) {
        for id in 1..=s.process_count {
            let p = Self::process(s, id);
            if p.forward_pending {
                actions.push(Action::CheckLeadershipInForward(id));
            }
            if p.state == ProcessState::Closing && (self.late_signal || s.signal != id) {
                actions.push(Action::TerminateService(id));
            }
        }
    }

    /// Runner close, then the dispatcher: result handling, cleanup, failover and the
    /// next leader's start.
    pub(in crate::leadership) fn dispatcher_steps(&self, s: &State, actions: &mut Vec<Action>) {
        if s.has_runner
            && s.runner == RunnerState::Stopped
            && !s.runner_terminated
            && self.close_can_complete(s)
        {
            actions.push(Action::CloseRunner);
        }
        if s.has_runner
            && s.runner_result.is_set()
            && !s.result_handled
            && (s.runner == RunnerState::Stopped || self.close_allowed(s))
        {
            actions.push(Action::HandleRunnerResult);
        }
        match s.cleanup {
            Cleanup::Idle => {}
            Cleanup::RemovingJobGraph => actions.push(Action::RemoveJobGraph),
            Cleanup::MarkingClean => actions.push(Action::MarkResultClean),
        }
        if s.dispatcher == DispatcherState::Leading
            && s.epoch < self.epochs
            && (!s.has_runner || s.runner == RunnerState::Stopped || self.close_allowed(s))
        {
            actions.push(Action::DispatcherFailover);
        }
        // At most two dispatchers overlap: a third leader waits for the oldest's stop.
        if self.old_dispatcher_done(s) && s.old.is_none() {
            actions.push(Action::RecoverJob);
        }
    }

    /// Whether the next dispatcher leader may start as far as the current one is
    /// concerned.
    fn old_dispatcher_done(&self, s: &State) -> bool {
        match s.dispatcher {
            DispatcherState::Leading => false,
            // On another host the next leader does not wait for the old one's stop.
            DispatcherState::Stopping => {
                self.dispatcher_overlap
                    || !s.has_runner
                    || (s.result_handled && (s.runner_terminated || !self.old_runner_first))
            }
            // Nothing of the dead JobManager is left to wait for; a fatal error may
            // stop the last epoch's, after which no leader is left to start.
            DispatcherState::Crashed => s.epoch < self.epochs,
        }
    }

    /// The old JobManager still stopping beside the next leader: its runner's close,
    /// its dispatcher's result handling and cleanup.
    pub(in crate::leadership) fn old_jobmanager_steps(&self, s: &State, actions: &mut Vec<Action>) {
        if self.old_close_can_complete(s) {
            actions.push(Action::CloseOldRunner);
        }
        if s.old
            .is_some_and(|o| o.result.is_set() && !o.result_handled)
        {
            actions.push(Action::OldDispatcherHandlesResult);
        }
        match s.old.map(|o| o.cleanup) {
            None | Some(Cleanup::Idle) => {}
            Some(Cleanup::RemovingJobGraph) => actions.push(Action::OldRemoveJobGraph),
            Some(Cleanup::MarkingClean) => actions.push(Action::OldMarkResultClean),
        }
    }

    /// A JobManager crash (`jobmaster-crash`).
    pub(in crate::leadership) fn crash_steps(&self, s: &State, actions: &mut Vec<Action>) {
        if self.jobmaster_crash && s.dispatcher != DispatcherState::Crashed && s.epoch < self.epochs
        {
            actions.push(Action::CrashJobManager);
        }
    }
}
