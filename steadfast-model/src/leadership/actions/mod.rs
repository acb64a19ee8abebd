//! The steps of the leadership model: which are enabled, component by component
//! ([`Leadership::actions`](stateright::Model::actions) asks each in turn), and what each
//! does, one function per action ([`Leadership::next_state`](stateright::Model::next_state)
//! dispatches to them), with the helpers they share.
//!
//! This file holds the helpers the guards and the transitions share; the guards are in
//! `guards`, the transitions in `transitions`.

use super::{
    ChainOp, Cleanup, DispatcherState, JobResultEntry, Leadership, Ordering, Outcome, Process,
    ProcessState, RunnerState, State, Status, CHAIN_CAPACITY,
};

// Named in the doc links only.
#[cfg(doc)]
use super::Action;

mod guards;
mod transitions;

/// Helpers the guards and the transitions share.
impl Leadership {
    /// Whether the election's notifications reach this epoch's runner: only a running
    /// one takes grants and revokes into its chain.
    pub(super) fn notified(state: &State) -> bool {
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
    pub(super) fn chain_blocked(&self, state: &State) -> bool {
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
