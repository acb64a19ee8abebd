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
//! (the decided status, a lost completion attempt, an unfenced effect).
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
//! Environment assumptions, explicit here because the verdicts depend on them:
//! - the next dispatcher leader starts only after the old dispatcher handled the
//!   runner's result and (setting `old-runner-first`, on by default) after the old
//!   runner terminated (Flink's dispatcher stops only after its job termination futures
//!   completed);
//! - unless `late-signal` is set, the scheduler's terminal signal reaches its process
//!   before the process's JobMaster service terminates;
//! - the scheduler decides at most once per run: a second decision could only follow a
//!   reanimation, which is already a violation.

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use crate::check;
use crate::settings::{Param, ParamKind, Settings, SettingsError};
use crate::{Expectation, Spec, Verdict};

/// Most leadership grants a run may issue (the `grants` setting's limit); also the most
/// processes, since every process comes from one grant.
pub const MAX_GRANTS: usize = 4;

/// Capacity of the runner's operation chain: grants and revokes alternate, so a chain
/// never holds more than two operations per grant.
pub const CHAIN_CAPACITY: usize = 2 * MAX_GRANTS;

/// A globally terminal job status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Status {
    /// The job finished.
    Finished,
    /// The job failed (the seed's end-to-end repro).
    Failed,
    /// The job was cancelled.
    Canceled,
}

impl Status {
    /// Every terminal status, in the order the `statuses` bound takes them.
    pub const ALL: [Status; 3] = [Status::Finished, Status::Failed, Status::Canceled];

    /// Flink's name of the status.
    pub fn word(self) -> &'static str {
        match self {
            Status::Finished => "FINISHED",
            Status::Failed => "FAILED",
            Status::Canceled => "CANCELED",
        }
    }
}

/// The value of a set-once result (a process's result future or the runner's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Outcome {
    /// Not completed yet.
    Unset,
    /// A globally terminal status.
    Terminal(Status),
    /// The runner's synthetic SUSPENDED (the job is not done; keep it for recovery).
    Suspended,
    /// A process closed before its job finished (`JobNotFinishedException`).
    NotFinished,
    /// The grant found a JobResultStore entry (`JobAlreadyDoneException`).
    AlreadyDone,
}

impl Outcome {
    /// Whether the result has been completed.
    pub fn is_set(self) -> bool {
        self != Outcome::Unset
    }

    /// The terminal status, when it is one.
    pub fn terminal(self) -> Option<Status> {
        match self {
            Outcome::Terminal(status) => Some(status),
            _ => None,
        }
    }

    /// The result in Flink's words.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Unset => "unset",
            Outcome::Terminal(status) => status.word(),
            Outcome::Suspended => "SUSPENDED",
            Outcome::NotFinished => "NotFinished",
            Outcome::AlreadyDone => "JobAlreadyDone",
        }
    }
}

/// The runner's lifecycle (one way: Running → JobCompleted → Stopped, or Running →
/// Stopped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum RunnerState {
    /// Waiting for or holding leadership.
    Running,
    /// A process result was forwarded (or a cached terminal result flushed by a grant).
    JobCompleted,
    /// Closed.
    Stopped,
}

/// A process's lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ProcessState {
    /// Its JobMaster runs the job.
    Running,
    /// Closed; its JobMaster service has not terminated yet.
    Closing,
    /// Its JobMaster service terminated.
    Terminated,
}

/// One process (`JobMasterServiceProcess`), created by one grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Process {
    /// Lifecycle state.
    pub state: ProcessState,
    /// The leader session that created it.
    pub session: u8,
    /// The dispatcher epoch (runner) it belongs to.
    pub epoch: u8,
    /// Its set-once result future.
    pub result: Outcome,
    /// The result completed and the runner's forward callback has not run yet.
    pub forward_pending: bool,
}

impl Process {
    const UNUSED: Process = Process {
        state: ProcessState::Terminated,
        session: 0,
        epoch: 0,
        result: Outcome::Unset,
        forward_pending: false,
    };
}

/// An operation waiting in the runner's sequential chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ChainOp {
    /// Start a process for this session, if it is still the issued one.
    Grant(u8),
    /// Close the current process and wait for it to terminate.
    Revoke,
    /// Unused slot (keeps equal chains equal).
    Empty,
}

/// The JobResultStore entry of the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum JobResultEntry {
    /// No entry: the job is not known to be done.
    Absent,
    /// Written before cleanup.
    Dirty,
    /// Cleanup done.
    Clean,
}

/// The dispatcher of the current epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum DispatcherState {
    /// Leader; runs the job's runner.
    Leading,
    /// Lost leadership; waits for its runner to terminate before the next leader starts.
    Stopping,
}

/// The whole system: election, runner, processes, scheduler signal, dispatcher, stores
/// and ghost fields. Process and session identifiers are 1-based; 0 means "none".
///
/// `Hash` packs the state into bytes and hashes them in one write: the checker hashes
/// every generated state, and one write is several times cheaper than one per field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct State {
    /// The session the election currently issues to the runner (0: none).
    pub issued: u8,
    /// Sessions issued so far (the last one issued has this number).
    pub sessions: u8,

    /// The runner's lifecycle state.
    pub runner: RunnerState,
    /// The runner's set-once result, which the dispatcher consumes.
    pub runner_result: Outcome,
    /// Operations waiting in the chain, oldest first.
    pub chain: [ChainOp; CHAIN_CAPACITY],
    /// Number of operations in `chain`.
    pub chain_len: u8,
    /// The runner's current process (0: none yet).
    pub current: u8,
    /// `current_process_leader` of the fixed runner: the session of the last process it
    /// created; revoke does not clear it (0: none; always 0 without the runner fix).
    pub current_leader: u8,
    /// `pending_terminal` of the fixed runner: a terminal result cached for flushing.
    pub pending_terminal: Option<Status>,
    /// The runner's close completed (its process terminated).
    pub runner_terminated: bool,

    /// Processes in creation order; `processes[i]` has id `i + 1`.
    pub processes: [Process; MAX_GRANTS],
    /// Processes created so far.
    pub process_count: u8,

    /// The process the scheduler's terminal signal is travelling to (0: none in flight).
    pub signal: u8,

    /// Dispatcher epoch, from 1; every failover starts the next one.
    pub epoch: u8,
    /// The current dispatcher's state.
    pub dispatcher: DispatcherState,
    /// Whether the current epoch runs a runner for the job.
    pub has_runner: bool,
    /// The dispatcher handled the runner's result.
    pub result_handled: bool,
    /// The JobGraph store holds the job.
    pub job_graph: bool,
    /// The job's JobResultStore entry.
    pub job_result: JobResultEntry,
    /// Epoch in which the JobResultStore entry was written (0: none).
    pub entry_epoch: u8,

    /// Ghost: the status the scheduler decided, once it did.
    pub decided: Option<Status>,
    /// Ghost: the process whose scheduler decided (0: none).
    pub decider: u8,
    /// Ghost: a completion attempt carrying a terminal value was lost while the runner
    /// result was unset.
    pub lost_terminal: bool,
    /// Ghost: a process changed the runner although its session was neither the issued
    /// one nor the runner's current process leader.
    pub unfenced: bool,
}

/// Bytes of [`State::pack`].
const PACKED_LEN: usize = 22 + CHAIN_CAPACITY + 4 * MAX_GRANTS;

impl Status {
    fn code(self) -> u8 {
        self as u8 + 1
    }
}

impl Outcome {
    fn code(self) -> u8 {
        match self {
            Outcome::Unset => 0,
            Outcome::Terminal(status) => status.code(),
            Outcome::Suspended => 4,
            Outcome::NotFinished => 5,
            Outcome::AlreadyDone => 6,
        }
    }
}

impl State {
    /// An injective byte encoding (every field gets its own byte or bytes), so that
    /// equal encodings mean equal states and the fingerprint loses nothing but hash
    /// collisions.
    fn pack(&self) -> [u8; PACKED_LEN] {
        let mut b = [0u8; PACKED_LEN];
        b[0] = self.issued;
        b[1] = self.sessions;
        b[2] = self.runner as u8;
        b[3] = self.runner_result.code();
        b[4] = self.chain_len;
        b[5] = self.current;
        b[6] = self.current_leader;
        b[7] = self.pending_terminal.map_or(0, Status::code);
        b[8] = self.runner_terminated as u8;
        b[9] = self.process_count;
        b[10] = self.signal;
        b[11] = self.epoch;
        b[12] = self.dispatcher as u8;
        b[13] = self.has_runner as u8;
        b[14] = self.result_handled as u8;
        b[15] = self.job_graph as u8;
        b[16] = self.job_result as u8;
        b[17] = self.entry_epoch;
        b[18] = self.decided.map_or(0, Status::code);
        b[19] = self.decider;
        b[20] = self.lost_terminal as u8;
        b[21] = self.unfenced as u8;
        let mut i = 22;
        for op in self.chain {
            b[i] = match op {
                ChainOp::Empty => 0,
                ChainOp::Revoke => 1,
                ChainOp::Grant(session) => 2 + session,
            };
            i += 1;
        }
        for p in self.processes {
            b[i] = p.state as u8 | (p.forward_pending as u8) << 4;
            b[i + 1] = p.session;
            b[i + 2] = p.epoch;
            b[i + 3] = p.result.code();
            i += 4;
        }
        b
    }
}

/// Relabels terminal statuses in order of first appearance: the first status met
/// becomes [`Status::ALL`]`[0]`, the next different one `ALL[1]`, and so on.
struct Relabel {
    /// New label per old status (indexed by `Status as usize`).
    to: [Option<Status>; 3],
    /// Statuses handed out so far.
    used: usize,
}

impl Relabel {
    fn status(&mut self, old: Status) -> Status {
        let used = &mut self.used;
        *self.to[old as usize].get_or_insert_with(|| {
            let new = Status::ALL[*used];
            *used += 1;
            new
        })
    }

    fn outcome(&mut self, old: Outcome) -> Outcome {
        match old {
            Outcome::Terminal(status) => Outcome::Terminal(self.status(status)),
            other => other,
        }
    }
}

impl State {
    /// The representative of this state's class under permutations of the terminal
    /// statuses: every field that holds a status (`decided`, `pending_terminal`,
    /// `runner_result`, then each process's `result` by id) relabelled in order of first
    /// appearance in that field order. States that differ only by a renaming of
    /// FINISHED, FAILED and CANCELED get the same representative, which is itself one of
    /// them; no step and no property of the model tells the statuses apart (they are only
    /// compared for equality), so the class shares every verdict.
    pub fn canonical_statuses(&self) -> State {
        let mut relabel = Relabel {
            to: [None; 3],
            used: 0,
        };
        let mut r = *self;
        r.decided = r.decided.map(|s| relabel.status(s));
        r.pending_terminal = r.pending_terminal.map(|s| relabel.status(s));
        r.runner_result = relabel.outcome(r.runner_result);
        for p in r.processes.iter_mut() {
            p.result = relabel.outcome(p.result);
        }
        r
    }
}

impl std::hash::Hash for State {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(&self.pack());
    }
}

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
}

impl Design {
    /// Every design, in table order.
    pub const ALL: [Design; 4] = [
        Design::Unpatched,
        Design::ProcessFixOnly,
        Design::RunnerFixOnly,
        Design::Fixed,
    ];

    /// Command-line name.
    pub const fn name(self) -> &'static str {
        match self {
            Design::Unpatched => "unpatched",
            Design::ProcessFixOnly => "process-fix-only",
            Design::RunnerFixOnly => "runner-fix-only",
            Design::Fixed => "fixed",
        }
    }

    /// Whether process close defers NotFinished (part 1).
    pub fn process_fix(self) -> bool {
        matches!(self, Design::ProcessFixOnly | Design::Fixed)
    }

    /// Whether the runner caches and flushes terminal results (part 2).
    pub fn runner_fix(self) -> bool {
        matches!(self, Design::RunnerFixOnly | Design::Fixed)
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

/// Property names, as `properties()` returns them.
pub mod property {
    /// No new process once a scheduler decided a globally terminal status.
    pub const NO_REANIMATION: &str = "no reanimation";
    /// A runner result set after a decision is the decided status.
    pub const NO_MASKING: &str = "no masking";
    /// No terminal completion attempt is lost while the runner result is unset.
    pub const SET_ONCE: &str = "set once";
    /// At most one process is not terminated.
    pub const ONE_LIVE_PROCESS: &str = "one live process";
    /// Only the issued session or the current process leader affects the runner.
    pub const FENCED_SESSIONS: &str = "fenced sessions";
    /// The JobGraph store and the JobResultStore agree.
    pub const STORES_AGREE: &str = "stores agree";
    /// The job's JobResultStore entry is clean.
    pub const JOB_FINISHES: &str = "a job finishes";
    /// The dispatcher handled a SUSPENDED result.
    pub const JOB_SUSPENDED: &str = "a job is suspended";
    /// A terminal result waits for its forward check while its session is revoked and
    /// its process still runs.
    pub const WINDOW_A: &str = "a revoke lands inside window A";
    /// A revoke closed a process while the terminal signal to it is in flight.
    pub const WINDOW_B: &str = "a revoke lands inside window B";
    /// One runner creates a second process.
    pub const REGRANT: &str = "a regrant happens";
    /// A dispatcher failover recovers the job into a new runner.
    pub const FAILOVER_RECOVERS: &str = "a dispatcher failover recovers a job";

    /// The safety properties, in model order.
    pub const SAFETY: [&str; 6] = [
        NO_REANIMATION,
        NO_MASKING,
        SET_ONCE,
        ONE_LIVE_PROCESS,
        FENCED_SESSIONS,
        STORES_AGREE,
    ];

    /// The reachability properties, in model order.
    pub const REACHABILITY: [&str; 6] = [
        JOB_FINISHES,
        JOB_SUSPENDED,
        WINDOW_A,
        WINDOW_B,
        REGRANT,
        FAILOVER_RECOVERS,
    ];
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
            max: 3,
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
        name: "old-runner-first",
        help: "the next dispatcher leader starts only after the old runner terminated",
        kind: ParamKind::Bool { default: true },
    },
];

const SCENARIOS: &[(&str, &[(&str, &str)])] = &[
    ("ordering-a", &[("ordering", "a")]),
    ("ordering-b", &[("ordering", "b")]),
    ("all", &[("ordering", "all")]),
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
    /// Whether the next dispatcher leader waits for the old runner to terminate (when
    /// not, it still waits for the old dispatcher to handle the runner's result).
    pub old_runner_first: bool,
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
        let preset = SCENARIOS
            .iter()
            .find(|(name, _)| *name == scenario)
            .map(|(_, preset)| *preset)
            .or(if scenario == "default" {
                Some(&[][..])
            } else {
                None
            })
            .ok_or_else(|| {
                let known: Vec<_> = SCENARIOS.iter().map(|(n, _)| *n).collect();
                SettingsError(format!(
                    "unknown scenario `{scenario}` (known: default, {})",
                    known.join(", ")
                ))
            })?;
        let mut all: Vec<(&str, &str)> = preset.to_vec();
        all.extend_from_slice(overrides);
        Self::build(design, &Settings::parse(PARAMS, &all)?)
    }

    fn process(state: &State, id: u8) -> &Process {
        &state.processes[id as usize - 1]
    }

    fn process_mut(state: &mut State, id: u8) -> &mut Process {
        &mut state.processes[id as usize - 1]
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

    /// Whether the runner's close may complete.
    fn close_can_complete(&self, state: &State) -> bool {
        match Self::current_process(state) {
            None => true,
            Some(p) => {
                p.state == ProcessState::Terminated
                    && !(self.design.runner_fix() && p.forward_pending)
            }
        }
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
            decided: None,
            decider: 0,
            lost_terminal: false,
            unfenced: false,
        }
    }
}

impl Action {
    /// A short phrase for the action in the domain's words, for lists of enabled actions
    /// (the Explorer's); [`Spec::describe_step`] says what a step does in its state.
    pub fn phrase(&self) -> String {
        match *self {
            Action::GrantLeadership(s) => format!("election grants session {s}"),
            Action::RevokeLeadership(s) => format!("election revokes session {s}"),
            Action::RunGrant(s) => format!("runner runs the grant of session {s}"),
            Action::RunRevoke => "runner runs the revoke".to_string(),
            Action::DecideTerminal(status) => format!("scheduler decides {}", status.word()),
            Action::DeliverTerminalSignal(p) => {
                format!("terminal signal reaches process {p}")
            }
            Action::CheckLeadershipInForward(p) => {
                format!("forward callback of process {p} checks leadership")
            }
            Action::TerminateService(p) => format!("JobMaster service of process {p} terminates"),
            Action::DispatcherFailover => "dispatcher loses leadership".to_string(),
            Action::CloseRunner => "runner's close completes".to_string(),
            Action::HandleRunnerResult => "dispatcher handles the runner result".to_string(),
            Action::RemoveJobGraph => "dispatcher removes the JobGraph".to_string(),
            Action::MarkResultClean => "dispatcher marks the result entry clean".to_string(),
            Action::RecoverJob => "next dispatcher leader starts and recovers".to_string(),
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
        let lane = |_: &State, action: &Action| {
            Some(match *action {
                Action::GrantLeadership(_) | Action::RevokeLeadership(_) => 0,
                Action::RunGrant(_)
                | Action::RunRevoke
                | Action::CheckLeadershipInForward(_)
                | Action::CloseRunner => 1,
                Action::DeliverTerminalSignal(id) | Action::TerminateService(id) => {
                    1 + usize::from(id)
                }
                Action::DecideTerminal(_) => 2 + p,
                Action::DispatcherFailover | Action::HandleRunnerResult | Action::RecoverJob => {
                    3 + p
                }
                Action::RemoveJobGraph | Action::MarkResultClean => 4 + p,
            })
        };
        Some(crate::picture::of_path(self, &path, &lanes, lane))
    }

    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial_state()]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let runner_running = s.has_runner && s.runner == RunnerState::Running;

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
                if p.state == ProcessState::Running && p.result == Outcome::Unset {
                    for status in Status::ALL.iter().take(self.statuses as usize) {
                        actions.push(Action::DecideTerminal(*status));
                    }
                }
            }
        }
        if s.signal != 0 {
            let target = Self::process(s, s.signal).state;
            let enabled = match target {
                ProcessState::Running => self.ordering != Ordering::B,
                ProcessState::Closing => true,
                ProcessState::Terminated => self.late_signal,
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
        if s.job_result == JobResultEntry::Dirty {
            if s.job_graph {
                actions.push(Action::RemoveJobGraph);
            } else {
                actions.push(Action::MarkResultClean);
            }
        }
        if s.dispatcher == DispatcherState::Leading
            && s.epoch < self.epochs
            && (!s.has_runner || s.runner == RunnerState::Stopped || self.close_allowed(s))
        {
            actions.push(Action::DispatcherFailover);
        }
        if s.dispatcher == DispatcherState::Stopping
            && (!s.has_runner
                || (s.result_handled && (s.runner_terminated || !self.old_runner_first)))
        {
            actions.push(Action::RecoverJob);
        }
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut next = *s;
        match action {
            Action::GrantLeadership(session) => {
                next.sessions = session;
                next.issued = session;
                Self::push(&mut next, ChainOp::Grant(session));
            }
            Action::RevokeLeadership(_) => {
                next.issued = 0;
                Self::push(&mut next, ChainOp::Revoke);
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
                        None if next.job_result != JobResultEntry::Absent => {
                            if next.runner_result == Outcome::Unset {
                                next.runner_result = Outcome::AlreadyDone;
                            }
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
                let same_epoch = Self::process(&next, id).epoch == next.epoch;
                let p = Self::process_mut(&mut next, id);
                if p.result == Outcome::Unset {
                    p.result = Outcome::Terminal(status);
                    p.forward_pending = true;
                } else if same_epoch && next.runner_result == Outcome::Unset {
                    // The process result is already NotFinished: the terminal value
                    // is a no-op while nobody has told the dispatcher anything yet.
                    next.lost_terminal = true;
                }
            }
            Action::CheckLeadershipInForward(id) => {
                let p = *Self::process(&next, id);
                Self::process_mut(&mut next, id).forward_pending = false;
                let before = (next.runner_result, next.pending_terminal);
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
                if (next.runner_result, next.pending_terminal) != before
                    && p.session != s.issued
                    && p.session != s.current_leader
                {
                    next.unfenced = true;
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
                    next.runner_result = match next.pending_terminal {
                        Some(status) => Outcome::Terminal(status),
                        None => Outcome::Suspended,
                    };
                }
            }
            Action::HandleRunnerResult => {
                next.result_handled = true;
                match next.runner_result {
                    Outcome::Terminal(_) | Outcome::AlreadyDone => {
                        if next.job_result == JobResultEntry::Absent {
                            next.job_result = JobResultEntry::Dirty;
                            next.entry_epoch = next.epoch;
                        }
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
            }
            Action::MarkResultClean => {
                next.job_result = JobResultEntry::Clean;
            }
            Action::RecoverJob => {
                next.epoch += 1;
                next.dispatcher = DispatcherState::Leading;
                next.issued = 0;
                for p in next.processes.iter_mut() {
                    // The old runner is gone: its late callbacks change nothing.
                    p.forward_pending = false;
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
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        use property::*;
        let all = vec![
            Property::<Self>::always(NO_REANIMATION, |_, s| {
                s.decider == 0 || s.process_count == s.decider
            }),
            Property::<Self>::always(NO_MASKING, |_, s| match s.decided {
                Some(status) if s.has_runner && s.runner_result.is_set() => {
                    s.runner_result == Outcome::Terminal(status)
                }
                _ => true,
            }),
            Property::<Self>::always(SET_ONCE, |_, s| !s.lost_terminal),
            Property::<Self>::always(ONE_LIVE_PROCESS, |_, s| {
                s.processes[..s.process_count as usize]
                    .iter()
                    .filter(|p| p.state != ProcessState::Terminated)
                    .count()
                    <= 1
            }),
            Property::<Self>::always(FENCED_SESSIONS, |_, s| !s.unfenced),
            Property::<Self>::always(STORES_AGREE, |_, s| {
                let removed_after_entry = s.job_graph || s.job_result != JobResultEntry::Absent;
                let never_recovered_after_entry = s.job_result == JobResultEntry::Absent
                    || !s.has_runner
                    || s.entry_epoch == s.epoch;
                removed_after_entry && never_recovered_after_entry
            }),
            Property::<Self>::sometimes(JOB_FINISHES, |_, s| s.job_result == JobResultEntry::Clean),
            Property::<Self>::sometimes(JOB_SUSPENDED, |_, s| {
                s.result_handled && s.runner_result == Outcome::Suspended
            }),
            Property::<Self>::sometimes(WINDOW_A, |_, s| {
                s.has_runner
                    && s.runner == RunnerState::Running
                    && s.processes[..s.process_count as usize].iter().any(|p| {
                        p.state == ProcessState::Running
                            && p.forward_pending
                            && p.result.terminal().is_some()
                            && p.session != s.issued
                    })
            }),
            Property::<Self>::sometimes(WINDOW_B, |_, s| {
                s.signal != 0
                    && s.runner == RunnerState::Running
                    && Self::process(s, s.signal).state == ProcessState::Closing
            }),
            Property::<Self>::sometimes(REGRANT, |_, s| {
                s.processes[..s.process_count as usize]
                    .windows(2)
                    .any(|w| w[0].epoch == w[1].epoch)
            }),
            Property::<Self>::sometimes(FAILOVER_RECOVERS, |_, s| s.epoch > 1 && s.has_runner),
        ];
        check::select(all, self.focus)
    }
}

fn process_words(id: u8) -> String {
    format!("process {id}")
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
        let design = Design::ALL
            .into_iter()
            .find(|d| d.name() == design)
            .ok_or_else(|| {
                SettingsError(format!(
                    "unknown design `{design}` for leadership (known: {})",
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
            old_runner_first: settings.flag("old-runner-first"),
            focus: None,
        })
    }

    fn focus(&self, property: Option<&str>) -> Result<Self, SettingsError> {
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
        let after = self
            .next_state(before, *action)
            .expect("next_state always returns a state");
        match *action {
            Action::GrantLeadership(session) => {
                format!(
                    "the election grants session {session} (dispatcher epoch {})",
                    before.epoch
                )
            }
            Action::RevokeLeadership(session) => {
                format!("the election revokes session {session}")
            }
            Action::RunGrant(session) => {
                let head = format!("the runner's chain runs the grant of session {session}");
                if after.process_count > before.process_count {
                    let reanimation = if before.decided.is_some() {
                        " although the job already reached a terminal state"
                    } else {
                        ""
                    };
                    format!(
                        "{head}: it creates {}{reanimation}",
                        process_words(after.process_count)
                    )
                } else if after.runner_result != before.runner_result {
                    match before.pending_terminal {
                        Some(status) if self.design.runner_fix() => format!(
                            "{head}: it flushes the cached {} result, no new process",
                            status.word()
                        ),
                        _ => format!("{head}: the JobResultStore has an entry, job already done"),
                    }
                } else if before.runner != RunnerState::Running {
                    format!("{head}: the runner no longer runs, nothing happens")
                } else {
                    format!("{head}: session {session} is no longer issued, nothing happens")
                }
            }
            Action::RunRevoke => {
                let head = "the runner's chain runs the revoke";
                match Self::current_process(before) {
                    Some(p)
                        if before.runner == RunnerState::Running
                            && p.state == ProcessState::Running =>
                    {
                        let eager = if Self::process(&after, before.current).result != p.result {
                            ", its result becomes NotFinished at once"
                        } else {
                            ""
                        };
                        format!("{head}: it closes {}{eager}", process_words(before.current))
                    }
                    _ => format!("{head}: no running process, nothing to close"),
                }
            }
            Action::DecideTerminal(status) => format!(
                "the scheduler of {} decides {}; its signal is in flight",
                process_words(before.current),
                status.word()
            ),
            Action::DeliverTerminalSignal(id) => {
                let status = before.decided.map(Status::word).unwrap_or("terminal");
                let p = Self::process(before, id);
                let when = match p.state {
                    ProcessState::Running => "",
                    ProcessState::Closing => " while it closes",
                    ProcessState::Terminated => " after its service terminated",
                };
                if p.result == Outcome::Unset {
                    format!(
                        "the scheduler's {status} signal reaches {}{when}: its result becomes {status}",
                        process_words(id)
                    )
                } else {
                    format!(
                        "the scheduler's {status} signal reaches {}{when}: no effect, its result is already {}",
                        process_words(id),
                        p.result.word()
                    )
                }
            }
            Action::CheckLeadershipInForward(id) => {
                let p = Self::process(before, id);
                let head = format!(
                    "the runner forwards the {} result of {} (session {})",
                    p.result.word(),
                    process_words(id),
                    p.session
                );
                if after.runner_result != before.runner_result {
                    format!(
                        "{head}: session valid, the runner completes with {}",
                        after.runner_result.word()
                    )
                } else if after.pending_terminal != before.pending_terminal {
                    format!(
                        "{head}: the leadership check fails, the result is cached as the current process leader's"
                    )
                } else {
                    format!("{head}: the leadership check fails, the result is dropped")
                }
            }
            Action::TerminateService(id) => {
                let p = Self::process(&after, id);
                if Self::process(before, id).result != p.result {
                    format!(
                        "the JobMaster service of {} terminates; its result becomes NotFinished",
                        process_words(id)
                    )
                } else {
                    format!("the JobMaster service of {} terminates", process_words(id))
                }
            }
            Action::DispatcherFailover => {
                let mut words = format!(
                    "the dispatcher of epoch {} loses leadership and closes the runner",
                    before.epoch
                );
                if after.runner_result != before.runner_result {
                    words.push_str(&format!(
                        "; the runner completes {} at once",
                        after.runner_result.word()
                    ));
                }
                words
            }
            Action::CloseRunner => {
                if after.runner_result != before.runner_result {
                    let how = if before.pending_terminal.is_some() {
                        "flushes the cached"
                    } else {
                        "completes with"
                    };
                    format!(
                        "the runner's close completes and {how} {}",
                        after.runner_result.word()
                    )
                } else {
                    "the runner's close completes".to_string()
                }
            }
            Action::HandleRunnerResult => match before.runner_result {
                Outcome::Terminal(status) => format!(
                    "the dispatcher sees {} and writes a dirty JobResultStore entry",
                    status.word()
                ),
                Outcome::Suspended => {
                    "the dispatcher sees SUSPENDED: local cleanup only, the JobGraph stays"
                        .to_string()
                }
                other => format!("the dispatcher sees {}", other.word()),
            },
            Action::RemoveJobGraph => "the dispatcher removes the JobGraph".to_string(),
            Action::MarkResultClean => {
                "the dispatcher marks the JobResultStore entry clean".to_string()
            }
            Action::RecoverJob => {
                if after.has_runner {
                    format!(
                        "the dispatcher of epoch {} recovers the JobGraph into a new runner",
                        after.epoch
                    )
                } else {
                    format!(
                        "the dispatcher of epoch {} starts and finds nothing to recover",
                        after.epoch
                    )
                }
            }
        }
    }

    fn classify(&self, path: &[(State, Option<Action>)]) -> Option<String> {
        // A signal still in flight when its process's service terminates is the residual
        // window of the fix (only with `late-signal`).
        let late = path.iter().any(|(before, action)| {
            before.signal != 0 && *action == Some(Action::TerminateService(before.signal))
        });
        if late {
            return Some("late signal after service termination".to_string());
        }
        // Otherwise the shape is fixed by what happens first to the decided signal: a
        // runner close or a revoke's close while it is in flight, or its delivery to a
        // running process (then: was its session still issued?).
        for (before, action) in path {
            let Some(action) = action else { continue };
            if before.signal == 0 {
                continue;
            }
            let target = Self::process(before, before.signal);
            match action {
                Action::DispatcherFailover
                    if before.has_runner && before.runner != RunnerState::Stopped =>
                {
                    return Some("runner close with signal in flight".to_string());
                }
                Action::RunRevoke
                    if before.current == before.signal && target.state == ProcessState::Running =>
                {
                    return Some("ordering B".to_string());
                }
                Action::DeliverTerminalSignal(_) if target.state == ProcessState::Running => {
                    return Some(if before.issued == target.session {
                        "ordering A1".to_string()
                    } else {
                        "ordering A2".to_string()
                    });
                }
                _ => {}
            }
        }
        None
    }

    fn expectations() -> Vec<Expectation> {
        expectations()
    }

    /// Terminal statuses are interchangeable when the scheduler may decide more than one
    /// of them; with `statuses` 1 there is nothing to permute.
    fn representative(&self) -> Option<fn(&State) -> State> {
        (self.statuses > 1).then_some(State::canonical_statuses as fn(&State) -> State)
    }
}

/// The expected-verdict table of specs/leadership.md.
fn expectations() -> Vec<Expectation> {
    use property::*;
    use Verdict::*;
    // Per design: the safety verdicts under ordering A, ordering B and all.
    type Row = (&'static str, [Verdict; 3]);
    let safety: [(Design, [Row; 6]); 4] = [
        (
            Design::Unpatched,
            [
                (NO_REANIMATION, [Counterexample; 3]),
                (NO_MASKING, [Counterexample; 3]),
                (SET_ONCE, [Counterexample; 3]),
                (ONE_LIVE_PROCESS, [Holds; 3]),
                (FENCED_SESSIONS, [Holds; 3]),
                (STORES_AGREE, [Holds; 3]),
            ],
        ),
        (
            Design::ProcessFixOnly,
            [
                (NO_REANIMATION, [Counterexample; 3]),
                (NO_MASKING, [Counterexample; 3]),
                (SET_ONCE, [Counterexample; 3]),
                (ONE_LIVE_PROCESS, [Holds; 3]),
                (FENCED_SESSIONS, [Holds; 3]),
                (STORES_AGREE, [Holds; 3]),
            ],
        ),
        (
            Design::RunnerFixOnly,
            [
                (NO_REANIMATION, [Holds, Counterexample, Counterexample]),
                (NO_MASKING, [Holds, Counterexample, Counterexample]),
                (SET_ONCE, [Holds, Counterexample, Counterexample]),
                (ONE_LIVE_PROCESS, [Holds; 3]),
                (FENCED_SESSIONS, [Holds; 3]),
                (STORES_AGREE, [Holds; 3]),
            ],
        ),
        (
            Design::Fixed,
            [
                (NO_REANIMATION, [Holds; 3]),
                (NO_MASKING, [Holds; 3]),
                (SET_ONCE, [Holds; 3]),
                (ONE_LIVE_PROCESS, [Holds; 3]),
                (FENCED_SESSIONS, [Holds; 3]),
                (STORES_AGREE, [Holds; 3]),
            ],
        ),
    ];
    let scenarios = ["ordering-a", "ordering-b", "all"];
    let mut table = Vec::new();
    for (design, rows) in safety {
        for (property, verdicts) in rows {
            for (scenario, expected) in scenarios.iter().zip(verdicts) {
                table.push(Expectation {
                    design: design.name(),
                    scenario,
                    property,
                    expected,
                });
            }
        }
        // Reachability: every scenario reaches the steps it allows. Ordering A keeps
        // the signal out of closes (window B unreachable); ordering B delivers it only
        // to a closing process (window A unreachable). Under ordering B only the fixed
        // design lets a job finish: every other design loses the terminal value on the
        // close the signal must wait for.
        for (scenario, a, b) in [
            ("ordering-a", Reached, Unreached),
            ("ordering-b", Unreached, Reached),
            ("all", Reached, Reached),
        ] {
            let finishes = if scenario == "ordering-b" && design != Design::Fixed {
                Unreached
            } else {
                Reached
            };
            for (property, expected) in [
                (JOB_FINISHES, finishes),
                (JOB_SUSPENDED, Reached),
                (WINDOW_A, a),
                (WINDOW_B, b),
                (REGRANT, Reached),
                (FAILOVER_RECOVERS, Reached),
            ] {
                table.push(Expectation {
                    design: design.name(),
                    scenario,
                    property,
                    expected,
                });
            }
        }
    }
    table
}

#[cfg(test)]
mod tests {
    //! Symmetry reduction over the terminal statuses: the representative is a canonical
    //! form of each class (idempotent, a member of the class, equal for every member),
    //! renaming statuses maps steps onto steps and keeps every property, and reduced DFS
    //! runs give the unreduced verdicts with pinned class counts.

    use std::collections::{BTreeMap, HashSet};

    use super::*;
    use crate::check::{try_check, CheckOptions, CheckReport, Strategy, Traces};

    /// Every renaming of the three statuses: entry `i` is the new name of `Status::ALL[i]`.
    const RENAMINGS: [[Status; 3]; 6] = {
        use Status::*;
        [
            [Finished, Failed, Canceled],
            [Finished, Canceled, Failed],
            [Failed, Finished, Canceled],
            [Failed, Canceled, Finished],
            [Canceled, Finished, Failed],
            [Canceled, Failed, Finished],
        ]
    };

    /// `state` with every status renamed, field by field, independently of
    /// `canonical_statuses`.
    fn rename(state: &State, to: &[Status; 3]) -> State {
        let status = |s: Status| to[s as usize];
        let outcome = |o: Outcome| match o {
            Outcome::Terminal(s) => Outcome::Terminal(status(s)),
            other => other,
        };
        let mut r = *state;
        r.decided = state.decided.map(status);
        r.pending_terminal = state.pending_terminal.map(status);
        r.runner_result = outcome(state.runner_result);
        for p in r.processes.iter_mut() {
            p.result = outcome(p.result);
        }
        r
    }

    fn rename_action(action: Action, to: &[Status; 3]) -> Action {
        match action {
            Action::DecideTerminal(s) => Action::DecideTerminal(to[s as usize]),
            other => other,
        }
    }

    /// Every reachable state, by plain search.
    fn reachable(model: &Leadership) -> Vec<State> {
        let mut seen: HashSet<State> = model.init_states().into_iter().collect();
        let mut todo: Vec<State> = seen.iter().copied().collect();
        let mut all = Vec::new();
        while let Some(state) = todo.pop() {
            all.push(state);
            let mut actions = Vec::new();
            model.actions(&state, &mut actions);
            for action in actions {
                let next = model.next_state(&state, action).unwrap();
                if seen.insert(next) {
                    todo.push(next);
                }
            }
        }
        all
    }

    fn successors(model: &Leadership, state: &State) -> Vec<(Action, State)> {
        let mut actions = Vec::new();
        model.actions(state, &mut actions);
        actions
            .into_iter()
            .map(|a| (a, model.next_state(state, a).unwrap()))
            .collect()
    }

    fn dfs(symmetry: bool) -> CheckOptions {
        CheckOptions {
            strategy: Strategy::Dfs,
            traces: Traces::None,
            symmetry,
            ..CheckOptions::default()
        }
    }

    fn verdicts(report: &CheckReport) -> BTreeMap<&'static str, Verdict> {
        report
            .properties
            .iter()
            .map(|p| (p.name, p.verdict))
            .collect()
    }

    fn scenario(design: &str, scenario: &str, statuses: &str) -> Leadership {
        Leadership::scenario(design, scenario, &[("statuses", statuses)]).unwrap()
    }

    #[test]
    fn representative_is_a_canonical_form_of_every_reachable_state() {
        let fixed = Leadership::new(Design::Fixed);
        let states = reachable(&fixed);
        assert_eq!(states.len(), 6786);
        let mut classes = HashSet::new();
        for s in &states {
            let r = s.canonical_statuses();
            assert_eq!(r.canonical_statuses(), r, "idempotent: {s:?}");
            assert!(
                RENAMINGS.iter().any(|to| rename(s, to) == r),
                "a member of its own class: {s:?}"
            );
            for to in &RENAMINGS {
                assert_eq!(rename(s, to).canonical_statuses(), r, "{to:?} of {s:?}");
            }
            classes.insert(r);
        }
        // The classes are exactly the states of the model with one status.
        let one: HashSet<State> = reachable(&scenario("fixed", "all", "1"))
            .into_iter()
            .collect();
        assert_eq!(classes, one);
    }

    #[test]
    fn renaming_statuses_maps_steps_onto_steps_and_keeps_every_property() {
        // What makes the reduction sound: for every reachable state and renaming, the
        // renamed state's steps are the renamed steps, and every property (all of them,
        // reachability targets included) judges both alike. No property or guard names
        // one status; they only compare statuses for equality.
        for design in Design::ALL {
            let model = Leadership::new(design);
            let properties = model.properties();
            for to in &RENAMINGS {
                let init = model.init_states();
                assert_eq!(init.iter().map(|s| rename(s, to)).collect::<Vec<_>>(), init);
            }
            for s in reachable(&model) {
                let steps = successors(&model, &s);
                for to in &RENAMINGS[1..] {
                    let t = rename(&s, to);
                    // The same steps, in another order (DecideTerminal lists statuses
                    // in a fixed order).
                    let renamed: HashSet<(Action, State)> = steps
                        .iter()
                        .map(|(a, n)| (rename_action(*a, to), rename(n, to)))
                        .collect();
                    let found = successors(&model, &t);
                    assert_eq!(found.len(), steps.len(), "{design:?} {s:?}");
                    assert_eq!(
                        found.into_iter().collect::<HashSet<_>>(),
                        renamed,
                        "{design:?} {s:?}"
                    );
                    for p in &properties {
                        assert_eq!(
                            (p.condition)(&model, &s),
                            (p.condition)(&model, &t),
                            "{design:?} `{}` on {s:?}",
                            p.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn reduced_runs_keep_every_verdict_with_pinned_class_counts() {
        let table = Leadership::expectations();
        let mut counts = BTreeMap::new();
        for design in DESIGN_NAMES {
            for name in ["ordering-a", "ordering-b", "all"] {
                let model = scenario(design, name, "3");
                let plain = try_check(&model, &dfs(false)).unwrap();
                let reduced = try_check(&model, &dfs(true)).unwrap();
                assert!(reduced.symmetry && !plain.symmetry);
                assert_eq!(verdicts(&reduced), verdicts(&plain), "{design} {name}");
                let expected: BTreeMap<_, _> = table
                    .iter()
                    .filter(|e| e.design == design && e.scenario == name)
                    .map(|e| (e.property, e.expected))
                    .collect();
                assert_eq!(verdicts(&reduced), expected, "{design} {name}");
                // Two statuses reduce to the same classes as three, and a model with
                // one status has as many states as there are classes.
                let two = try_check(&scenario(design, name, "2"), &dfs(true)).unwrap();
                let one = try_check(&scenario(design, name, "1"), &dfs(false)).unwrap();
                assert_eq!(two.unique_states, reduced.unique_states, "{design} {name}");
                assert_eq!(one.unique_states, reduced.unique_states, "{design} {name}");
                counts.insert((design, name), (plain.unique_states, reduced.unique_states));
            }
        }
        let pinned: BTreeMap<(&str, &str), (usize, usize)> = [
            (("unpatched", "ordering-a"), (20120, 7998)),
            (("unpatched", "ordering-b"), (17240, 7038)),
            (("unpatched", "all"), (34967, 12947)),
            (("process-fix-only", "ordering-a"), (18696, 7346)),
            (("process-fix-only", "ordering-b"), (15567, 6303)),
            (("process-fix-only", "all"), (19494, 7612)),
            (("runner-fix-only", "ordering-a"), (6540, 2848)),
            (("runner-fix-only", "ordering-b"), (6192, 2732)),
            (("runner-fix-only", "all"), (11418, 4474)),
            (("fixed", "ordering-a"), (6417, 2725)),
            (("fixed", "ordering-b"), (4707, 2155)),
            (("fixed", "all"), (6786, 2848)),
        ]
        .into_iter()
        .collect();
        assert_eq!(counts, pinned);
    }

    #[test]
    fn one_status_has_nothing_to_permute() {
        let one = scenario("fixed", "all", "1");
        assert!(one.representative().is_none());
        assert!(scenario("fixed", "all", "2").representative().is_some());
        let e = try_check(&one, &dfs(true)).unwrap_err();
        assert!(
            matches!(
                e,
                crate::check::CheckError::NoSymmetry {
                    model: "leadership",
                    design: "fixed",
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn statuses_are_relabelled_in_order_of_first_appearance() {
        let mut s = Leadership::new(Design::Fixed).initial_state();
        s.decided = Some(Status::Canceled);
        s.runner_result = Outcome::Terminal(Status::Canceled);
        s.processes[0].result = Outcome::Terminal(Status::Canceled);
        s.processes[1].result = Outcome::NotFinished;
        let r = s.canonical_statuses();
        assert_eq!(r.decided, Some(Status::Finished));
        assert_eq!(r.runner_result, Outcome::Terminal(Status::Finished));
        assert_eq!(r.processes[0].result, Outcome::Terminal(Status::Finished));
        assert_eq!(r.processes[1].result, Outcome::NotFinished);
        // Two different statuses (not reachable, the scheduler decides once) keep
        // their distinction: the second one met becomes FAILED.
        s.processes[1].result = Outcome::Terminal(Status::Finished);
        let r = s.canonical_statuses();
        assert_eq!(r.processes[0].result, Outcome::Terminal(Status::Finished));
        assert_eq!(r.processes[1].result, Outcome::Terminal(Status::Failed));
    }
}
