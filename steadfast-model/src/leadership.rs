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
//! a failure may win the race against a decided terminal signal, and a fatal one ends
//! the JobManager as a crash does, the old one's too), and overlapping dispatcher leaders
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
//! - each run's scheduler decides at most once, and unless `rerun-decides` is set only
//!   the first run's does (a rerun follows a reanimation, already a violation; with the
//!   setting, what the JobResultStore then keeps is checked too).
//!
//! This file holds the designs, settings and actions; the rest is split by concern:
//! `actions` (each component's enabled steps and one transition function per action),
//! `state` (the typed state and its fingerprint), [`property`] (names and predicates),
//! `narrative` (phrases, step sentences, the orderings' shapes), `expectations` (the
//! verdict table) and `symmetry` (status relabelling).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use crate::check;
use crate::por::{Reduction, ReductionError};
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

mod actions;
mod expectations;
mod footprint;
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
        help: "a JobMaster may fail to initialise (before its scheduler decides) or fail while its process's result is open",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "failures-before-decision",
        help: "with jobmaster-failures: a JobMaster fails only before its scheduler decides, and a failed one decides nothing (an idealisation, not Flink's code)",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "rerun-decides",
        help: "every run's scheduler may decide once, a rerun's after a reanimation too (without it, only the first run decides)",
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
    // Ordering A is the one column a decision during a close widens (orderings B and
    // all already reach the same states by deciding just before the close).
    (
        "ordering-a-decide-while-closing",
        &[("ordering", "a"), ("decide-while-closing", "true")],
    ),
    (
        "ordering-a-late-signal-decide-while-closing",
        &[
            ("ordering", "a"),
            ("late-signal", "true"),
            ("decide-while-closing", "true"),
        ],
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
        "jobmaster-failures-before-decision",
        &[
            ("ordering", "all"),
            ("jobmaster-failures", "true"),
            ("failures-before-decision", "true"),
        ],
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
    (
        "dispatcher-overlap-jobmaster-failures",
        &[
            ("ordering", "all"),
            ("dispatcher-overlap", "true"),
            ("jobmaster-failures", "true"),
        ],
    ),
    // The faults after which a rerun runs the job, with the rerun's scheduler deciding
    // too: what the JobResultStore then records.
    (
        "jobmaster-crash-rerun-decides",
        &[
            ("ordering", "all"),
            ("jobmaster-crash", "true"),
            ("rerun-decides", "true"),
        ],
    ),
    (
        "jobmaster-failures-rerun-decides",
        &[
            ("ordering", "all"),
            ("jobmaster-failures", "true"),
            ("rerun-decides", "true"),
        ],
    ),
    (
        "dispatcher-overlap-rerun-decides",
        &[
            ("ordering", "all"),
            ("dispatcher-overlap", "true"),
            ("rerun-decides", "true"),
        ],
    ),
    (
        "dispatcher-overlap-fenced-rerun-decides",
        &[
            ("ordering", "all"),
            ("dispatcher-overlap", "true"),
            ("fenced-result-store", "true"),
            ("rerun-decides", "true"),
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
    /// Whether JobMaster failures come only before the scheduler decides, and a failed
    /// JobMaster's scheduler decides nothing (the idealisation of the
    /// `jobmaster-failures-before-decision` column).
    pub failures_before_decision: bool,
    /// Whether every run's scheduler may decide (once), a rerun's too.
    pub rerun_decides: bool,
    /// Whether the next dispatcher leader may start while the old one still stops.
    pub dispatcher_overlap: bool,
    /// Whether the HA stores refuse the writes of a dispatcher no longer leader.
    pub fenced_result_store: bool,
    focus: Option<&'static str>,
    /// Partial-order reduction, when the model is reduced ([`Spec::reduced`]).
    reduction: Option<Arc<Reduction<Action>>>,
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
            entry_not_first: false,
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

    /// The enabled steps ([`Leadership::enabled_steps`]), narrowed to a stubborn set
    /// when the model is reduced ([`crate::por`]).
    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        self.steps_followed(s, actions);
    }

    /// The step of one action: one transition function per action (`actions`).
    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        match action {
            Action::GrantLeadership(session) => self.grant_leadership(s, session),
            Action::RevokeLeadership(_) => self.revoke_leadership(s),
            Action::RunGrant(session) => self.run_grant(s, session),
            Action::RunRevoke => self.run_revoke(s),
            Action::DecideTerminal(status) => self.decide_terminal(s, status),
            Action::DeliverTerminalSignal(id) => self.deliver_terminal_signal(s, id),
            Action::CheckLeadershipInForward(id) if Self::of_old_runner(s, id) => {
                self.check_leadership_in_old_forward(s, id)
            }
            Action::CheckLeadershipInForward(id) => self.check_leadership_in_forward(s, id),
            Action::TerminateService(id) => self.terminate_service(s, id),
            Action::DispatcherFailover => self.dispatcher_failover(s),
            Action::CloseRunner => self.close_runner(s),
            Action::HandleRunnerResult => self.handle_runner_result(s),
            Action::RemoveJobGraph => self.remove_job_graph(s),
            Action::MarkResultClean => self.mark_result_clean(s),
            Action::OldRemoveJobGraph => self.old_remove_job_graph(s),
            Action::OldMarkResultClean => self.old_mark_result_clean(s),
            Action::FailInitialization => self.fail_job_master(s, Outcome::InitFailed),
            Action::FailJobMaster => self.fail_job_master(s, Outcome::JobMasterFailed),
            Action::CloseOldRunner => self.close_old_runner(s),
            Action::OldDispatcherHandlesResult => self.old_dispatcher_handles_result(s),
            Action::CrashJobManager => self.crash_job_manager(s),
            Action::RecoverJob => self.recover_job(s),
        }
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
        // A reduced model stays reduced, by what the focused properties observe.
        Leadership {
            focus,
            ..self.clone()
        }
        .rereduced()
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

    fn reduced(&self) -> Result<Self, ReductionError> {
        self.clone().with_reduction()
    }

    fn reduction_tally(&self) -> Option<(u64, u64)> {
        self.reduction.as_ref().map(|r| r.tally().counts())
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
            failures_before_decision: settings.flag("failures-before-decision"),
            rerun_decides: settings.flag("rerun-decides"),
            dispatcher_overlap: settings.flag("dispatcher-overlap"),
            fenced_result_store: settings.flag("fenced-result-store"),
            focus: None,
            reduction: None,
        })
    }
}
