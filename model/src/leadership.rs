//! The job leadership lifecycle of FLINK-39704, as a stateright model.
//!
//! Source: Apache Flink's `JobMasterServiceLeadershipRunner` (the runner),
//! `DefaultJobMasterServiceProcess` (the process) and the Dispatcher with its JobGraph
//! store and JobResultStore, and the fix "Preserve globally terminal job result across
//! leadership revocation" (FLINK-39704, apache/flink PR 28201). A job that reached a
//! globally terminal state (FINISHED, FAILED, CANCELED) while leadership was revoked was
//! reported as SUSPENDED; the dispatcher kept the JobGraph and the job ran again.
//!
//! The model is written in the style of a TLA+ specification: a state of plain values,
//! named actions whose guards live in [`Model::actions`] (only enabled actions are
//! emitted, so `next_state` always returns `Some`), and properties over states, with a
//! few ghost fields that record what the properties need to know about the past
//! (the decided status, a lost completion attempt, a decision a crash killed).
//!
//! Components and the steps they take:
//! - the *leader election* issues numbered sessions and revokes them
//!   ([`Action::GrantLeadership`], [`Action::RevokeLeadership`]); both are appended to
//!   the runner's sequential operation chain;
//! - the *runner* runs its chain one operation at a time ([`Action::RunGrant`],
//!   [`Action::RunRevoke`]), forwards process results after a delay
//!   ([`Action::CheckLeadershipInForward`]) and finishes its close
//!   ([`Action::CloseRunner`]);
//! - one *process* per effective grant, whose JobMaster service terminates
//!   asynchronously after close ([`Action::TerminateService`]);
//! - the *scheduler* decides a globally terminal status ([`Action::DecideTerminal`]);
//!   the signal reaches the process later ([`Action::DeliverTerminalSignal`]);
//! - the *dispatcher* handles the runner result ([`Action::HandleRunnerResult`],
//!   [`Action::RemoveJobGraph`], [`Action::MarkResultClean`]), loses leadership ([`Action::DispatcherFailover`]) and,
//!   as the next leader, recovers JobGraphs without a JobResultStore entry
//!   ([`Action::RecoverJob`]).
//!
//! Faults, each a setting that is off by default: a JobManager crash
//! ([`Action::CrashJobManager`], `jobmaster-crash`), JobMaster failures
//! ([`Action::FailInitialization`], [`Action::FailJobMaster`], `jobmaster-failures`;
//! a fatal one ends the JobManager as a crash does), and overlapping dispatcher leaders
//! on different hosts (`dispatcher-overlap`: the old runner goes on beside the next
//! leader, [`Action::CloseOldRunner`], [`Action::OldDispatcherHandlesResult`], and the
//! old dispatcher's own cleanup, [`Action::OldRemoveJobGraph`],
//! [`Action::OldMarkResultClean`]; with `fenced-result-store` the stores refuse the old
//! dispatcher's requests).
//!
//! Environment assumptions, explicit here because the verdicts depend on them:
//! - the next dispatcher leader starts only after the old dispatcher handled the
//!   runner's result and (setting `old-runner-first`, on by default) after the old
//!   runner terminated (Flink's dispatcher stops only after its job termination futures
//!   completed, and a new leader in the same JVM waits for the old one's termination);
//!   a crash, or `dispatcher-overlap`, lifts this;
//! - unless `late-signal` is set, the scheduler's terminal signal reaches its process
//!   before the process's JobMaster service terminates;
//! - the scheduler decides at most once per run: a second decision could only follow a
//!   reanimation, which is already a violation.
//!
//! This file holds the designs, settings, actions and transitions; the rest is split by
//! concern: `state` (the typed state and its fingerprint), [`property`] (names and
//! predicates), `narrative` (phrases, step sentences, the orderings' shapes),
//! `expectations` (the verdict table) and `symmetry` (status relabelling).

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use crate::check;
use crate::settings::{Param, ParamKind, Settings, SettingsError};
use crate::{Expectation, Spec};

/// Most leadership grants a run may issue (the `grants` setting's limit); also the most
/// processes, since every process comes from one grant.
pub const MAX_GRANTS: usize = 10;

/// Most dispatcher epochs a run may have (the `epochs` setting's limit: three
/// failovers).
pub const MAX_EPOCHS: u8 = 4;

/// Capacity of the runner's operation chain: grants and revokes alternate, so a chain
/// never holds more than two operations per grant.
pub const CHAIN_CAPACITY: usize = 2 * MAX_GRANTS;

/// Most jobs under one dispatcher (the `jobs` setting's limit).
pub const MAX_JOBS: usize = 3;

mod expectations;
pub mod jobs;
mod narrative;
pub mod property;
mod state;
mod symmetry;
mod view;

pub use jobs::{Jobs, JobsAction, JobsState};
pub use state::{
    ChainOp, Cleanup, DispatcherState, JobResultEntry, OldRunner, Outcome, Process, ProcessState,
    RunnerState, State, Status,
};

/// One step of the system, named after the Flink event it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// The election issues this (new) session and notifies the runner's chain.
    GrantLeadership(u8),
    /// The election revokes this session and notifies the runner's chain.
    RevokeLeadership(u8),
    /// The chain runs the grant of this session: check leadership and the JobResultStore,
    /// then create a process (or, fixed runner, flush a cached terminal result).
    RunGrant(u8),
    /// The chain runs a revoke: close the current process and wait for it.
    RunRevoke,
    /// The current process's scheduler decides this terminal status; the signal to the
    /// process is in flight.
    DecideTerminal(Status),
    /// The scheduler's terminal signal reaches this process.
    DeliverTerminalSignal(u8),
    /// The runner's forward callback for this process's completed result runs: the
    /// leadership check (and, fixed runner, the cache check before it).
    CheckLeadershipInForward(u8),
    /// This process's JobMaster service terminates.
    TerminateService(u8),
    /// The dispatcher loses leadership and closes the runner.
    DispatcherFailover,
    /// The runner's close completes after its process terminated.
    CloseRunner,
    /// The dispatcher handles the runner result (JobResultStore entry for a terminal
    /// result, local cleanup for SUSPENDED) and removes the runner.
    HandleRunnerResult,
    /// Global cleanup, first half: the dispatcher removes the JobGraph.
    RemoveJobGraph,
    /// Global cleanup, second half: the dispatcher marks the JobResultStore entry clean.
    MarkResultClean,
    /// The next dispatcher leader starts and recovers JobGraphs without an entry.
    RecoverJob,
    /// The old runner's close completes while the next leader runs (setting
    /// `dispatcher-overlap`).
    CloseOldRunner,
    /// The old dispatcher, still stopping on its host, handles its runner's result: a
    /// terminal one is written to the JobResultStore unless the store fences it out
    /// (setting `fenced-result-store`).
    OldDispatcherHandlesResult,
    /// The old dispatcher's global cleanup, first half: it removes the JobGraph
    /// (setting `dispatcher-overlap`, unfenced stores).
    OldRemoveJobGraph,
    /// The old dispatcher's global cleanup, second half: it marks the entry clean.
    OldMarkResultClean,
    /// The current process's JobMaster fails to initialise: its result completes with
    /// the failure (setting `jobmaster-failures`).
    FailInitialization,
    /// The current process's JobMaster fails while running: its result completes
    /// exceptionally (setting `jobmaster-failures`).
    FailJobMaster,
    /// The JobManager process of the current epoch dies (killed, its host lost): its
    /// dispatcher, runner, processes and scheduler vanish without closing, completing a
    /// result or writing the JobResultStore; the election expires its sessions.
    CrashJobManager,
}

/// Which code the runner and the process run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Design {
    /// Flink 2.2: eager NotFinished on process close, eager SUSPENDED on runner close,
    /// no cache.
    Unpatched,
    /// Part 1 of the fix only: process close defers NotFinished until the service
    /// terminated.
    ProcessFixOnly,
    /// Part 2 of the fix only: the runner caches a terminal result observed for its
    /// current process leader and flushes it on close or regrant.
    RunnerFixOnly,
    /// Both parts (apache/flink PR 28201).
    Fixed,
    /// A mutant of the fixed design, not Flink code: a revoke clears the runner's
    /// current process leader, so a terminal result forwarded after the revoke is not
    /// cached. It shows that the fix's bookkeeping (keep the leader across the revoke)
    /// is load-bearing.
    RevokeClearsLeader,
}

impl Design {
    /// Every design, in table order.
    pub const ALL: [Design; 5] = [
        Design::Unpatched,
        Design::ProcessFixOnly,
        Design::RunnerFixOnly,
        Design::Fixed,
        Design::RevokeClearsLeader,
    ];

    /// Command-line name.
    pub const fn name(self) -> &'static str {
        match self {
            Design::Unpatched => "unpatched",
            Design::ProcessFixOnly => "process-fix-only",
            Design::RunnerFixOnly => "runner-fix-only",
            Design::Fixed => "fixed",
            Design::RevokeClearsLeader => "revoke-clears-leader",
        }
    }

    /// Whether process close defers NotFinished (part 1).
    pub fn process_fix(self) -> bool {
        matches!(
            self,
            Design::ProcessFixOnly | Design::Fixed | Design::RevokeClearsLeader
        )
    }

    /// Whether the runner caches and flushes terminal results (part 2).
    pub fn runner_fix(self) -> bool {
        matches!(
            self,
            Design::RunnerFixOnly | Design::Fixed | Design::RevokeClearsLeader
        )
    }

    /// Whether a revoke clears the current process leader (the mutant).
    pub fn revoke_clears_leader(self) -> bool {
        self == Design::RevokeClearsLeader
    }
}

/// Which interleavings of the terminal signal and closes the environment allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Ordering {
    /// The terminal signal is never in flight when a close starts.
    A,
    /// The terminal signal reaches its process only after a close of it started.
    B,
    /// Every interleaving.
    All,
}

const PARAMS: &[Param] = &[
    Param {
        name: "grants",
        help: "leadership grants issued in a run, over all dispatcher epochs",
        kind: ParamKind::Int {
            default: 3,
            min: 1,
            max: MAX_GRANTS as u64,
        },
    },
    Param {
        name: "epochs",
        help: "dispatcher epochs (1 + dispatcher failovers)",
        kind: ParamKind::Int {
            default: 3,
            min: 1,
            max: MAX_EPOCHS as u64,
        },
    },
    Param {
        name: "jobs",
        help: "jobs under the dispatcher, each with its own runner, processes and JobResultStore entry",
        kind: ParamKind::Int {
            default: 1,
            min: 1,
            max: MAX_JOBS as u64,
        },
    },
    Param {
        name: "statuses",
        help: "terminal statuses the scheduler may decide (FINISHED, FAILED, CANCELED)",
        kind: ParamKind::Int {
            default: 3,
            min: 1,
            max: 3,
        },
    },
    Param {
        name: "ordering",
        help: "interleavings of the terminal signal and closes: a, b or all",
        kind: ParamKind::Choice {
            default: "all",
            options: &["a", "b", "all"],
        },
    },
    Param {
        name: "late-signal",
        help: "the terminal signal may reach a process after its service terminated",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "decide-while-closing",
        help: "the scheduler may decide after its process's close started, before the service terminated",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "jobmaster-crash",
        help: "a JobManager process may die without closing anything (no result, no JobResultStore write)",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "jobmaster-failures",
        help: "a JobMaster may fail to initialise or fail while running, before its scheduler decides",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "dispatcher-overlap",
        help: "the next dispatcher leader, on another host, may start while the old one is still stopping",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "fenced-result-store",
        help: "the HA stores refuse the writes of a dispatcher that is no longer leader",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "old-runner-first",
        help: "the next dispatcher leader starts only after the old runner terminated",
        kind: ParamKind::Bool { default: true },
    },
];

/// The verdict table's columns: each ordering, with the terminal signal on time (the
/// fix's assumption) and with it late (Flink's code allows it: `specs/leadership.md`,
/// "Late signal").
const SCENARIOS: &[(&str, &[(&str, &str)])] = &[
    ("ordering-a", &[("ordering", "a")]),
    ("ordering-b", &[("ordering", "b")]),
    ("all", &[("ordering", "all")]),
    (
        "ordering-a-late-signal",
        &[("ordering", "a"), ("late-signal", "true")],
    ),
    (
        "ordering-b-late-signal",
        &[("ordering", "b"), ("late-signal", "true")],
    ),
    (
        "all-late-signal",
        &[("ordering", "all"), ("late-signal", "true")],
    ),
    (
        "jobmaster-crash",
        &[("ordering", "all"), ("jobmaster-crash", "true")],
    ),
    (
        "jobmaster-failures",
        &[("ordering", "all"), ("jobmaster-failures", "true")],
    ),
    (
        "dispatcher-overlap",
        &[("ordering", "all"), ("dispatcher-overlap", "true")],
    ),
    (
        "dispatcher-overlap-fenced",
        &[
            ("ordering", "all"),
            ("dispatcher-overlap", "true"),
            ("fenced-result-store", "true"),
        ],
    ),
];

/// Every design's command-line name, in [`Design::ALL`] order: the one list the command
/// line, the tables and the error messages use.
pub const DESIGN_NAMES: [&str; Design::ALL.len()] = {
    let mut names = [""; Design::ALL.len()];
    let mut i = 0;
    while i < Design::ALL.len() {
        names[i] = Design::ALL[i].name();
        i += 1;
    }
    names
};

/// The configured model: a design, bounds and environment assumptions, and an optional
/// focus on one property.
#[derive(Clone, Debug)]
pub struct Leadership {
    /// The code under check.
    pub design: Design,
    settings: Settings,
    /// Most leadership grants.
    pub grants: u8,
    /// Most dispatcher epochs.
    pub epochs: u8,
    /// How many of [`Status::ALL`] the scheduler may decide.
    pub statuses: u8,
    /// Allowed interleavings.
    pub ordering: Ordering,
    /// Whether the terminal signal may arrive after the service terminated.
    pub late_signal: bool,
    /// Whether the scheduler may decide while its process closes (the job still
    /// finishes after close started, before the JobMaster stopped).
    pub decide_while_closing: bool,
    /// Whether the next dispatcher leader waits for the old runner to terminate (when
    /// not, it still waits for the old dispatcher to handle the runner's result).
    pub old_runner_first: bool,
    /// Whether a JobManager process may die without closing anything.
    pub jobmaster_crash: bool,
    /// Whether a JobMaster may fail to initialise or fail while running.
    pub jobmaster_failures: bool,
    /// Whether the next dispatcher leader may start while the old one still stops.
    pub dispatcher_overlap: bool,
    /// Whether the HA stores refuse the writes of a dispatcher no longer leader.
    pub fenced_result_store: bool,
    focus: Option<&'static str>,
}

impl Leadership {
    /// The model at default settings for a design.
    pub fn new(design: Design) -> Leadership {
        Self::build(design.name(), &Settings::defaults(PARAMS))
            .expect("defaults are valid for every design")
    }

    /// The model for a design under a named scenario plus further overrides.
    pub fn scenario(
        design: &str,
        scenario: &str,
        overrides: &[(&str, &str)],
    ) -> Result<Leadership, SettingsError> {
        let preset = Leadership::preset(scenario)?;
        let mut all: Vec<(&str, &str)> = preset.to_vec();
        all.extend_from_slice(overrides);
        Self::build(design, &Settings::parse(PARAMS, &all)?)
    }

    pub(super) fn process(state: &State, id: u8) -> &Process {
        &state.processes[id as usize - 1]
    }

    fn process_mut(state: &mut State, id: u8) -> &mut Process {
        &mut state.processes[id as usize - 1]
    }

    /// The lane of a step in the picture of a path whose lanes are the election, the
    /// runner, `processes` processes, the scheduler, the dispatcher and the HA stores.
    pub(super) fn lane(before: &State, action: &Action, processes: usize) -> usize {
        match *action {
            Action::FailInitialization | Action::FailJobMaster => 1 + usize::from(before.current),
            Action::GrantLeadership(_) | Action::RevokeLeadership(_) => 0,
            Action::RunGrant(_)
            | Action::RunRevoke
            | Action::CheckLeadershipInForward(_)
            | Action::CloseRunner
            | Action::CloseOldRunner => 1,
            Action::DeliverTerminalSignal(id) | Action::TerminateService(id) => 1 + usize::from(id),
            Action::DecideTerminal(_) => 2 + processes,
            Action::DispatcherFailover
            | Action::HandleRunnerResult
            | Action::RecoverJob
            | Action::OldDispatcherHandlesResult
            | Action::CrashJobManager => 3 + processes,
            Action::RemoveJobGraph
            | Action::MarkResultClean
            | Action::OldRemoveJobGraph
            | Action::OldMarkResultClean => 4 + processes,
        }
    }

    /// Whether the election's notifications reach this epoch's runner: only a running
    /// one takes grants and revokes into its chain.
    fn notified(state: &State) -> bool {
        state.has_runner && state.runner == RunnerState::Running
    }

    fn current_process(state: &State) -> Option<&Process> {
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

    /// Writes the dirty JobResultStore entry of the dispatcher of `epoch`, unless there
    /// is an entry already.
    /// Writes the dirty entry of `epoch`'s dispatcher; false when the store already
    /// holds one (it refuses the write).
    fn record_entry(state: &mut State, epoch: u8) -> bool {
        let absent = state.job_result == JobResultEntry::Absent;
        if absent {
            state.job_result = JobResultEntry::Dirty;
            state.entry_epoch = epoch;
        }
        absent
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
    fn of_old_runner(state: &State, id: u8) -> bool {
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
        // A decision that reached no JobResultStore entry dies with the process.
        if next.decided.is_some() && next.job_result == JobResultEntry::Absent {
            next.crash_lost = true;
        }
        next.dispatcher = DispatcherState::Crashed;
        // Its cleanup requests die with it; the next leader's recovery starts over.
        next.cleanup = Cleanup::Idle;
        next.issued = 0;
        let epoch = next.epoch;
        for p in next.processes[..usize::from(next.process_count)].iter_mut() {
            if p.epoch == epoch {
                p.state = ProcessState::Killed;
                p.forward_pending = false;
            }
        }
        if next.signal != 0 && Self::process(next, next.signal).epoch == epoch {
            next.signal = 0;
        }
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

    fn push(state: &mut State, op: ChainOp) {
        state.chain[state.chain_len as usize] = op;
        state.chain_len += 1;
    }

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
    fn close_runner(&self, state: &mut State) {
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

    fn initial_state(&self) -> State {
        State {
            issued: 0,
            sessions: 0,
            runner: RunnerState::Running,
            runner_result: Outcome::Unset,
            chain: [ChainOp::Empty; CHAIN_CAPACITY],
            chain_len: 0,
            current: 0,
            current_leader: 0,
            pending_terminal: None,
            runner_terminated: false,
            runner_killed: false,
            old: None,
            processes: [Process::UNUSED; MAX_GRANTS],
            process_count: 0,
            signal: 0,
            epoch: 1,
            dispatcher: DispatcherState::Leading,
            has_runner: true,
            result_handled: false,
            job_graph: true,
            job_result: JobResultEntry::Absent,
            entry_epoch: 0,
            runner_epoch: 1,
            cleanup: Cleanup::Idle,
            decided: None,
            decider: 0,
            lost_terminal: false,
            crash_lost: false,
            fatal_exit: false,
        }
    }
}

impl Model for Leadership {
    /// The Explorer's text for a step: the verdict of every property on the state it
    /// leads to, the step in the model's words, the state ([`crate::check::explorer_step`]).
    fn format_step(&self, last_state: &State, action: Action) -> Option<String> {
        crate::check::explorer_step(self, last_state, action)
    }

    /// The Explorer's name for an enabled action ([`Action::phrase`]).
    fn format_action(&self, action: &Action) -> String {
        action.phrase()
    }

    /// A lane diagram of the path ([`crate::picture`]): election, runner, each process,
    /// scheduler, dispatcher and HA stores.
    fn as_svg(&self, path: stateright::Path<State, Action>) -> Option<String> {
        let path = path.into_vec();
        let processes = path
            .iter()
            .map(|(s, _)| s.process_count)
            .max()
            .unwrap_or(0)
            .max(1);
        let mut lanes = vec!["election".to_string(), "runner".to_string()];
        lanes.extend((1..=processes).map(|p| format!("process {p}")));
        lanes.extend(["scheduler", "dispatcher", "HA stores"].map(String::from));
        let p = usize::from(processes);
        let lane = |before: &State, action: &Action| Some(Self::lane(before, action, p));
        Some(crate::picture::of_path(self, &path, &lanes, lane))
    }

    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial_state()]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let runner_running = Self::notified(s);

        // Leader election: notifications reach a running runner only.
        if runner_running && s.issued == 0 && s.sessions < self.grants {
            actions.push(Action::GrantLeadership(s.sessions + 1));
        }
        if runner_running && s.issued != 0 {
            actions.push(Action::RevokeLeadership(s.issued));
        }

        // The runner's sequential chain.
        if s.chain_len > 0 && !self.chain_blocked(s) {
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

        // The scheduler of the current process decides, once.
        if s.decided.is_none() {
            if let Some(p) = Self::current_process(s) {
                let live = p.state == ProcessState::Running
                    || (self.decide_while_closing && p.state == ProcessState::Closing);
                if live && p.result == Outcome::Unset {
                    for status in Status::ALL.iter().take(self.statuses as usize) {
                        actions.push(Action::DecideTerminal(*status));
                    }
                }
            }
        }
        // The current process's JobMaster may fail before its scheduler decides.
        if self.jobmaster_failures {
            if let Some(p) = Self::current_process(s) {
                if p.state == ProcessState::Running
                    && p.result == Outcome::Unset
                    && s.decider != s.current
                {
                    actions.push(Action::FailInitialization);
                    actions.push(Action::FailJobMaster);
                }
            }
        }
        if s.signal != 0 {
            let target = Self::process(s, s.signal).state;
            let enabled = match target {
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

        // Forward callbacks and service terminations, by process id.
        for id in 1..=s.process_count {
            let p = Self::process(s, id);
            if p.forward_pending {
                actions.push(Action::CheckLeadershipInForward(id));
            }
            if p.state == ProcessState::Closing && (self.late_signal || s.signal != id) {
                actions.push(Action::TerminateService(id));
            }
        }

        // Runner close and the dispatcher.
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
        let old_dispatcher_done = match s.dispatcher {
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
        };
        // At most two dispatchers overlap: a third leader waits for the oldest's stop.
        if old_dispatcher_done && s.old.is_none() {
            actions.push(Action::RecoverJob);
        }
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
        if self.jobmaster_crash && s.dispatcher != DispatcherState::Crashed && s.epoch < self.epochs
        {
            actions.push(Action::CrashJobManager);
        }
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut next = *s;
        match action {
            Action::GrantLeadership(session) => {
                next.sessions = session;
                next.issued = session;
                // One job's runner may be stopped while another's runs (`jobs`).
                if Self::notified(s) {
                    Self::push(&mut next, ChainOp::Grant(session));
                }
            }
            Action::RevokeLeadership(_) => {
                next.issued = 0;
                if Self::notified(s) {
                    Self::push(&mut next, ChainOp::Revoke);
                }
            }
            Action::RunGrant(session) => {
                Self::pop(&mut next);
                let valid_leader = next.runner == RunnerState::Running && next.issued == session;
                if valid_leader {
                    match next.pending_terminal.filter(|_| self.design.runner_fix()) {
                        Some(status) => {
                            // Flush instead of creating a process.
                            if next.runner_result == Outcome::Unset {
                                next.runner_result = Outcome::Terminal(status);
                            }
                            next.runner = RunnerState::JobCompleted;
                        }
                        // The runner completes with "already done" and, as after any
                        // result it completed, takes no further grant.
                        None if next.job_result != JobResultEntry::Absent => {
                            if next.runner_result == Outcome::Unset {
                                next.runner_result = Outcome::AlreadyDone;
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
                            };
                            next.current = id;
                            if self.design.runner_fix() {
                                next.current_leader = session;
                            }
                        }
                    }
                }
            }
            Action::RunRevoke => {
                Self::pop(&mut next);
                let current = next.current;
                if next.runner == RunnerState::Running && self.design.revoke_clears_leader() {
                    next.current_leader = 0;
                }
                if next.runner == RunnerState::Running && current != 0 {
                    self.close_process(&mut next, current);
                }
            }
            Action::DecideTerminal(status) => {
                next.decided = Some(status);
                next.decider = next.current;
                next.signal = next.current;
            }
            Action::DeliverTerminalSignal(id) => {
                next.signal = 0;
                let status = next.decided.expect("a signal follows a decision");
                let runner_unset = if Self::process(&next, id).epoch == next.epoch {
                    next.runner_result == Outcome::Unset
                } else {
                    Self::of_old_runner(&next, id)
                        && next.old.is_some_and(|o| o.result == Outcome::Unset)
                };
                let p = Self::process_mut(&mut next, id);
                if p.result == Outcome::Unset {
                    p.result = Outcome::Terminal(status);
                    p.forward_pending = true;
                } else if runner_unset {
                    // The process result is already NotFinished: the terminal value
                    // is a no-op while nobody has told the dispatcher anything yet.
                    next.lost_terminal = true;
                }
            }
            Action::CheckLeadershipInForward(id) if Self::of_old_runner(s, id) => {
                // The old runner is closed: its leadership check fails, and only the
                // fixed runner's cache can keep a terminal result.
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
            }
            Action::CheckLeadershipInForward(id) => {
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
            }
            Action::TerminateService(id) => {
                let process_fix = self.design.process_fix();
                let p = Self::process_mut(&mut next, id);
                p.state = ProcessState::Terminated;
                if process_fix && p.result == Outcome::Unset {
                    p.result = Outcome::NotFinished;
                    p.forward_pending = true;
                }
            }
            Action::DispatcherFailover => {
                next.dispatcher = DispatcherState::Stopping;
                if next.has_runner {
                    self.close_runner(&mut next);
                }
            }
            Action::CloseRunner => {
                next.runner_terminated = true;
                if self.design.runner_fix() && next.runner_result == Outcome::Unset {
                    next.runner_result = Self::result_at_close(next.pending_terminal);
                }
            }
            Action::HandleRunnerResult => {
                next.result_handled = true;
                match next.runner_result {
                    Outcome::Terminal(_) => {
                        if Self::record_entry(&mut next, s.epoch) {
                            next.cleanup = Cleanup::RemovingJobGraph;
                        }
                    }
                    // Someone else wrote the entry: clean up after them, unless a
                    // cleanup is under way.
                    Outcome::AlreadyDone => {
                        if next.cleanup == Cleanup::Idle {
                            next.cleanup = Cleanup::RemovingJobGraph;
                        }
                    }
                    // A submitted job whose JobMaster cannot start has FAILED for good;
                    // a recovered one is a fatal error (Flink's `Dispatcher.runJob`).
                    Outcome::InitFailed if next.epoch == 1 => {
                        if Self::record_entry(&mut next, 1) {
                            next.cleanup = Cleanup::RemovingJobGraph;
                        }
                    }
                    // A fatal error: the JobManager process exits.
                    Outcome::InitFailed | Outcome::JobMasterFailed => {
                        next.fatal_exit = true;
                        self.crash(&mut next);
                        return Some(next);
                    }
                    // SUSPENDED: local cleanup only; the JobGraph stays for recovery.
                    // NotFinished (an exceptional runner result) would take the fatal
                    // error path; no runner result takes that value in this model.
                    Outcome::Suspended | Outcome::NotFinished | Outcome::Unset => {}
                }
                // The dispatcher removes the job and closes its runner.
                self.close_runner(&mut next);
            }
            Action::RemoveJobGraph => {
                next.job_graph = false;
                next.cleanup = Cleanup::MarkingClean;
            }
            Action::MarkResultClean => {
                debug_assert_ne!(next.job_result, JobResultEntry::Absent);
                next.job_result = JobResultEntry::Clean;
                next.cleanup = Cleanup::Idle;
            }
            Action::OldRemoveJobGraph => {
                next.job_graph = false;
                next.old.as_mut().expect("guarded").cleanup = Cleanup::MarkingClean;
            }
            Action::OldMarkResultClean => {
                debug_assert_ne!(next.job_result, JobResultEntry::Absent);
                next.job_result = JobResultEntry::Clean;
                next.old.as_mut().expect("guarded").cleanup = Cleanup::Idle;
                Self::retire_old(&mut next);
            }
            Action::FailInitialization | Action::FailJobMaster => {
                let p = Self::process_mut(&mut next, s.current);
                p.result = if action == Action::FailInitialization {
                    Outcome::InitFailed
                } else {
                    Outcome::JobMasterFailed
                };
                p.forward_pending = true;
            }
            Action::CloseOldRunner => {
                let runner_fix = self.design.runner_fix();
                let o = next.old.as_mut().expect("guarded");
                o.terminated = true;
                if runner_fix && o.result == Outcome::Unset {
                    o.result = Self::result_at_close(o.pending_terminal);
                }
                Self::retire_old(&mut next);
            }
            Action::OldDispatcherHandlesResult => {
                let mut o = next.old.expect("guarded");
                o.result_handled = true;
                // The old dispatcher is no longer leader: fenced stores refuse its
                // requests, so it starts no cleanup.
                let open = !self.fenced_result_store;
                let cleans = match o.result {
                    Outcome::Terminal(_) => open && Self::record_entry(&mut next, s.epoch - 1),
                    Outcome::AlreadyDone => open && o.cleanup == Cleanup::Idle,
                    _ => false,
                };
                if cleans {
                    o.cleanup = Cleanup::RemovingJobGraph;
                }
                next.old = Some(o);
                Self::retire_old(&mut next);
            }
            Action::CrashJobManager => self.crash(&mut next),
            Action::RecoverJob => {
                let stopping = self.leaves_old_stopping(&next);
                if stopping {
                    next.old = Some(OldRunner {
                        result: next.runner_result,
                        pending_terminal: next.pending_terminal,
                        current: next.current,
                        current_leader: next.current_leader,
                        terminated: next.runner_terminated,
                        result_handled: next.result_handled,
                        // The next leader's epoch fences the stores: they refuse the
                        // old dispatcher's outstanding requests.
                        cleanup: if self.fenced_result_store {
                            Cleanup::Idle
                        } else {
                            next.cleanup
                        },
                    });
                    // Fenced, an old dispatcher that had only a cleanup left is done.
                    Self::retire_old(&mut next);
                }
                // A dispatcher that goes on leading keeps the cleanup under way; a new
                // one (on another host, or after a crash) starts from its read.
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
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        check::select(property::all(self), self.focus)
    }
}

impl Spec for Leadership {
    const NAME: &'static str = "leadership";
    const SUMMARY: &'static str =
        "job leadership lifecycle of FLINK-39704: terminal results across leadership revocation";

    fn designs() -> &'static [&'static str] {
        &DESIGN_NAMES
    }

    fn design_name(&self) -> &'static str {
        self.design.name()
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn params() -> &'static [Param] {
        PARAMS
    }

    fn scenarios() -> &'static [(&'static str, &'static [(&'static str, &'static str)])] {
        SCENARIOS
    }

    fn build(design: &str, settings: &Settings) -> Result<Self, SettingsError> {
        if settings.int("jobs") > 1 {
            // The command line routes several jobs to `Jobs`; what reaches here is the
            // runtime's replay, which drives one job.
            return Err(SettingsError(format!(
                "jobs {}: the runtime is replayed with one job; several jobs are checked \
                 by `check leadership --jobs {}`",
                settings.int("jobs"),
                settings.int("jobs")
            )));
        }
        Self::configure(design, settings)
    }
    fn focus(&self, property: Option<&str>) -> Result<Self, SettingsError> {
        if let Some(setting) = property.and_then(property::needs) {
            if !self.settings.flag(setting) {
                return Err(SettingsError(format!(
                    "property `{}` needs `--{setting} true`",
                    property.unwrap_or_default()
                )));
            }
        }
        let focus = match property {
            None => None,
            Some(name) => Some(
                property::SAFETY
                    .iter()
                    .chain(property::REACHABILITY.iter())
                    .copied()
                    .find(|p| *p == name)
                    .ok_or_else(|| {
                        SettingsError(format!(
                            "unknown property `{name}` for leadership (known: {}, {})",
                            property::SAFETY.join(", "),
                            property::REACHABILITY.join(", ")
                        ))
                    })?,
            ),
        };
        Ok(Leadership {
            focus,
            ..self.clone()
        })
    }

    fn describe_step(&self, before: &State, action: &Action) -> String {
        self.step_sentence(before, action)
    }

    /// The election, the dispatcher, the runner, each process, the scheduler, the
    /// stores and the old runner in the domain's words (unused slots left out).
    fn domain_view(&self, state: &State) -> String {
        self.view(state)
    }

    fn classify(&self, path: &[(State, Option<Action>)]) -> Option<String> {
        self.shape(path)
    }

    fn expectations() -> Vec<Expectation> {
        expectations::table()
    }

    /// Terminal statuses are interchangeable when the scheduler may decide more than one
    /// of them; with `statuses` 1 there is nothing to permute.
    fn representative(&self) -> Option<fn(&State) -> State> {
        (self.statuses > 1).then_some(State::canonical_statuses as fn(&State) -> State)
    }
}

impl Leadership {
    /// The model for a design and settings, whatever their `jobs`: one job's view of
    /// the several-jobs model ([`Jobs`]) is configured here too.
    fn configure(design: &str, settings: &Settings) -> Result<Leadership, SettingsError> {
        let design = Design::ALL
            .into_iter()
            .find(|d| d.name() == design)
            .ok_or_else(|| {
                SettingsError(format!(
                    "unknown design {} for leadership (known: {})",
                    crate::quote::quote(design),
                    DESIGN_NAMES.join(", ")
                ))
            })?;
        // Limits in PARAMS keep these within u8 and within the fixed arrays.
        let ordering = match settings.choice("ordering") {
            "a" => Ordering::A,
            "b" => Ordering::B,
            _ => Ordering::All,
        };
        Ok(Leadership {
            design,
            settings: settings.clone(),
            grants: settings.int("grants") as u8,
            epochs: settings.int("epochs") as u8,
            statuses: settings.int("statuses") as u8,
            ordering,
            late_signal: settings.flag("late-signal"),
            decide_while_closing: settings.flag("decide-while-closing"),
            old_runner_first: settings.flag("old-runner-first"),
            jobmaster_crash: settings.flag("jobmaster-crash"),
            jobmaster_failures: settings.flag("jobmaster-failures"),
            dispatcher_overlap: settings.flag("dispatcher-overlap"),
            fenced_result_store: settings.flag("fenced-result-store"),
            focus: None,
        })
    }
}
