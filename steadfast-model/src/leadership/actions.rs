//! The steps of the leadership model: which are enabled, component by component
//! ([`Leadership::actions`](stateright::Model::actions) asks each in turn), and what each
//! does, one function per action ([`Leadership::next_state`](stateright::Model::next_state)
//! dispatches to them), with the helpers they share.

use super::{
    Action, ChainOp, Cleanup, DispatcherState, JobResultEntry, Leadership, OldRunner, Ordering,
    Outcome, Process, ProcessState, RunnerState, State, Status, CHAIN_CAPACITY,
};

/// Guards: the enabled steps of each component, in the order the checker explores them.
impl Leadership {
    /// Leader election: notifications reach a running runner only.
    pub(super) fn election_steps(&self, s: &State, actions: &mut Vec<Action>) {
        let runner_running = Self::notified(s);
        if runner_running && s.issued == 0 && s.sessions < self.grants {
            actions.push(Action::GrantLeadership(s.sessions + 1));
        }
        if runner_running && s.issued != 0 {
            actions.push(Action::RevokeLeadership(s.issued));
        }
    }

    /// The runner's sequential chain runs its head operation.
    pub(super) fn chain_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(super) fn scheduler_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(super) fn jobmaster_failure_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(super) fn signal_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(super) fn process_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(super) fn dispatcher_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(super) fn old_jobmanager_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(super) fn crash_steps(&self, s: &State, actions: &mut Vec<Action>) {
        if self.jobmaster_crash && s.dispatcher != DispatcherState::Crashed && s.epoch < self.epochs
        {
            actions.push(Action::CrashJobManager);
        }
    }
}

/// Helpers the guards and the transitions share.
impl Leadership {
    /// Whether the election's notifications reach this epoch's runner: only a running
    /// one takes grants and revokes into its chain.
    fn notified(state: &State) -> bool {
        state.has_runner && state.runner == RunnerState::Running
    }

    /// The runner's current process, if it has one.
    pub(super) fn current_process(state: &State) -> Option<&Process> {
        (state.current != 0).then(|| Self::process(state, state.current))
    }

    /// A close may start now (ordering A forbids it while the signal is in flight).
    fn close_allowed(&self, state: &State) -> bool {
        self.ordering != Ordering::A || state.signal == 0
    }

    /// The chain waits for the previous process to terminate and, with the runner fix,
    /// for its forward callback to settle.
    fn chain_blocked(&self, state: &State) -> bool {
        match Self::current_process(state) {
            None => false,
            Some(p) => {
                p.state == ProcessState::Closing
                    || (self.design.runner_fix()
                        && p.state == ProcessState::Terminated
                        && p.forward_pending)
            }
        }
    }

    /// Whether a runner is done with its process `p`: terminated and (runner fix) its
    /// forward callback settled.
    fn settled(&self, p: &Process) -> bool {
        p.state == ProcessState::Terminated && !(self.design.runner_fix() && p.forward_pending)
    }

    /// The result a closed runner completes with (runner fix): its cached terminal
    /// status, or SUSPENDED.
    fn result_at_close(pending_terminal: Option<Status>) -> Outcome {
        pending_terminal.map_or(Outcome::Suspended, Outcome::Terminal)
    }

    /// The JobResultStore entry a runner result of `epoch`'s runner asks for, with the
    /// decision it records: a terminal status is one; a submitted job whose JobMaster
    /// cannot start (its runner is epoch 1's) is FAILED for good but records no
    /// decision (`Some(None)`); any other result asks for no entry (`None`).
    fn entry_for(result: Outcome, epoch: u8) -> Option<Option<Status>> {
        match result {
            Outcome::Terminal(status) => Some(Some(status)),
            Outcome::InitFailed if epoch == 1 => Some(None),
            _ => None,
        }
    }

    /// Writes the dirty entry of `epoch`'s dispatcher if the store holds none (when it
    /// holds one, the first writer's entry stays). `decision` is the decided
    /// status the entry records, `None` for a submitted job's initialisation failure
    /// (FAILED, but no scheduler's decision: after a decision it records a later run's
    /// failure instead, whatever the names, which keeps the statuses interchangeable).
    fn record_entry(state: &mut State, epoch: u8, decision: Option<Status>) {
        if state.job_result == JobResultEntry::Absent {
            state.job_result = JobResultEntry::Dirty;
            state.entry_epoch = epoch;
            if state.decided.is_some() && state.decided != decision {
                state.entry_not_first = true;
            }
        }
    }

    /// The cleanup a dispatcher starts from what its recovery read found: an entry
    /// with the JobGraph still stored needs the JobGraph removed, a dirty one without it
    /// needs marking clean.
    fn cleanup_from_stores(state: &State) -> Cleanup {
        match (state.job_result, state.job_graph) {
            (JobResultEntry::Absent, _) | (JobResultEntry::Clean, false) => Cleanup::Idle,
            (_, true) => Cleanup::RemovingJobGraph,
            (JobResultEntry::Dirty, false) => Cleanup::MarkingClean,
        }
    }

    /// Whether [`Action::RecoverJob`] at `state` leaves the old JobManager stopping
    /// beside the next leader: on another host (`dispatcher-overlap`) the old
    /// dispatcher goes on stopping while its runner's close, its result handling or its
    /// cleanup are still to come (Flink's dispatcher stops once its jobs' termination
    /// futures, cleanup included, completed).
    pub fn leaves_old_stopping(&self, state: &State) -> bool {
        self.dispatcher_overlap
            && state.dispatcher == DispatcherState::Stopping
            && state.has_runner
            && !(state.result_handled && state.runner_terminated && state.cleanup == Cleanup::Idle)
    }

    /// Whether the runner's close may complete.
    fn close_can_complete(&self, state: &State) -> bool {
        Self::current_process(state).is_none_or(|p| self.settled(p))
    }

    /// Whether process `id` belongs to the old runner (a stopping epoch's).
    pub(super) fn of_old_runner(state: &State, id: u8) -> bool {
        state.old.is_some() && Self::process(state, id).epoch + 1 == state.epoch
    }

    /// Whether the old runner's close may complete: its process terminated and (runner
    /// fix) its forward settled.
    fn old_close_can_complete(&self, state: &State) -> bool {
        let Some(o) = state.old else { return false };
        if o.terminated {
            return false;
        }
        o.current == 0 || self.settled(Self::process(state, o.current))
    }

    /// The old runner is done once it terminated and its dispatcher handled its result:
    /// that dispatcher's stop completes and nothing of its epoch acts any more.
    fn retire_old(state: &mut State) {
        if state
            .old
            .is_some_and(|o| o.terminated && o.result_handled && o.cleanup == Cleanup::Idle)
        {
            state.old = None;
        }
    }

    /// The JobManager process of the current epoch dies: a crash, or the process exit a
    /// fatal error causes. Its dispatcher, runner, processes and scheduler vanish
    /// without a close, a result or a store write.
    pub(super) fn crash(&self, next: &mut State) {
        Self::kill_jobmanager(next, next.epoch);
        next.dispatcher = DispatcherState::Crashed;
        // Its cleanup requests die with it; the next leader's recovery starts over.
        next.cleanup = Cleanup::Idle;
        next.issued = 0;
        // The runner is gone with nothing to hand over: no result to handle, no close
        // to wait for. `has_runner` still says whether this epoch started one.
        next.runner = RunnerState::Stopped;
        next.runner_result = Outcome::Unset;
        next.result_handled = false;
        next.runner_terminated = true;
        next.runner_killed = true;
        next.chain = [ChainOp::Empty; CHAIN_CAPACITY];
        next.chain_len = 0;
        next.current = 0;
        next.current_leader = 0;
        next.pending_terminal = None;
    }

    /// Appends an operation to the runner's chain.
    fn push(state: &mut State, op: ChainOp) {
        state.chain[state.chain_len as usize] = op;
        state.chain_len += 1;
    }

    /// Removes the chain's head, the operation that just ran.
    fn pop(state: &mut State) {
        let len = state.chain_len as usize;
        state.chain.copy_within(1..len, 0);
        state.chain[len - 1] = ChainOp::Empty;
        state.chain_len -= 1;
    }

    /// Process close: Closing, and without part 1 of the fix an eager NotFinished.
    fn close_process(&self, state: &mut State, id: u8) {
        let process_fix = self.design.process_fix();
        let p = Self::process_mut(state, id);
        if p.state != ProcessState::Running {
            return;
        }
        p.state = ProcessState::Closing;
        if !process_fix && p.result == Outcome::Unset {
            p.result = Outcome::NotFinished;
            p.forward_pending = true;
        }
    }

    /// Runner close: Stopped, pending chain operations become no-ops, the current
    /// process is closed; without part 2 of the fix an eager SUSPENDED.
    fn start_runner_close(&self, state: &mut State) {
        if state.runner == RunnerState::Stopped {
            return;
        }
        state.runner = RunnerState::Stopped;
        state.chain = [ChainOp::Empty; CHAIN_CAPACITY];
        state.chain_len = 0;
        if !self.design.runner_fix() && state.runner_result == Outcome::Unset {
            state.runner_result = Outcome::Suspended;
        }
        let current = state.current;
        if current != 0 {
            self.close_process(state, current);
        }
    }
}

/// Transitions: one function per action, each from the state before the step to the
/// state after it.
impl Leadership {
    /// [`Action::GrantLeadership`]: the election issues the session and notifies the
    /// runner's chain.
    pub(super) fn grant_leadership(&self, s: &State, session: u8) -> Option<State> {
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
    pub(super) fn revoke_leadership(&self, s: &State) -> Option<State> {
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
    pub(super) fn run_grant(&self, s: &State, session: u8) -> Option<State> {
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
    pub(super) fn run_revoke(&self, s: &State) -> Option<State> {
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
    pub(super) fn decide_terminal(&self, s: &State, status: Status) -> Option<State> {
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
    pub(super) fn deliver_terminal_signal(&self, s: &State, id: u8) -> Option<State> {
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
    pub(super) fn check_leadership_in_old_forward(&self, s: &State, id: u8) -> Option<State> {
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
    pub(super) fn check_leadership_in_forward(&self, s: &State, id: u8) -> Option<State> {
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
    pub(super) fn terminate_service(&self, s: &State, id: u8) -> Option<State> {
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
    pub(super) fn dispatcher_failover(&self, s: &State) -> Option<State> {
        let mut next = *s;
        next.dispatcher = DispatcherState::Stopping;
        if next.has_runner {
            self.start_runner_close(&mut next);
        }
        Some(next)
    }

    /// [`Action::CloseRunner`]: the runner's close completes; the fixed runner completes
    /// with its cached terminal status or SUSPENDED.
    pub(super) fn close_runner(&self, s: &State) -> Option<State> {
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
    pub(super) fn handle_runner_result(&self, s: &State) -> Option<State> {
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
    pub(super) fn remove_job_graph(&self, s: &State) -> Option<State> {
        let mut next = *s;
        next.job_graph = false;
        next.cleanup = Cleanup::MarkingClean;
        Some(next)
    }

    /// [`Action::MarkResultClean`]: global cleanup, second half.
    pub(super) fn mark_result_clean(&self, s: &State) -> Option<State> {
        let mut next = *s;
        debug_assert_ne!(next.job_result, JobResultEntry::Absent);
        next.job_result = JobResultEntry::Clean;
        next.cleanup = Cleanup::Idle;
        Some(next)
    }

    /// [`Action::OldRemoveJobGraph`]: the old dispatcher's global cleanup, first half.
    pub(super) fn old_remove_job_graph(&self, s: &State) -> Option<State> {
        let mut next = *s;
        next.job_graph = false;
        next.old.as_mut().expect("guarded").cleanup = Cleanup::MarkingClean;
        Some(next)
    }

    /// [`Action::OldMarkResultClean`]: the old dispatcher's global cleanup, second half.
    pub(super) fn old_mark_result_clean(&self, s: &State) -> Option<State> {
        let mut next = *s;
        debug_assert_ne!(next.job_result, JobResultEntry::Absent);
        next.job_result = JobResultEntry::Clean;
        next.old.as_mut().expect("guarded").cleanup = Cleanup::Idle;
        Self::retire_old(&mut next);
        Some(next)
    }

    /// [`Action::FailInitialization`] and [`Action::FailJobMaster`]: the current
    /// process's result completes with the failure `result`.
    pub(super) fn fail_job_master(&self, s: &State, result: Outcome) -> Option<State> {
        let mut next = *s;
        let p = Self::process_mut(&mut next, s.current);
        p.result = result;
        p.forward_pending = true;
        Some(next)
    }

    /// [`Action::CloseOldRunner`]: the old runner's close completes; the fixed runner
    /// completes with its cached terminal status or SUSPENDED.
    pub(super) fn close_old_runner(&self, s: &State) -> Option<State> {
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
    pub(super) fn old_dispatcher_handles_result(&self, s: &State) -> Option<State> {
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
    fn kill_jobmanager(next: &mut State, epoch: u8) {
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
    pub(super) fn crash_job_manager(&self, s: &State) -> Option<State> {
        let mut next = *s;
        self.crash(&mut next);
        Some(next)
    }

    /// [`Action::RecoverJob`]: the next dispatcher leader starts (the old one, on another
    /// host, may go on stopping beside it), reads the stores and recovers a JobGraph
    /// without an entry into a new runner.
    pub(super) fn recover_job(&self, s: &State) -> Option<State> {
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
