//! The leadership machines of FLINK-39704 (apache/flink PR 28201) run concurrently: one
//! dispatcher, the HA stores, and for every job its own leader election, runner and
//! JobMaster processes, all on a tokio runtime.
//!
//! The driver owns the sans-IO machines and executes their effects as tasks: a process
//! start spawns the job's scheduler, which may decide a globally terminal status whose
//! signal travels to the process; a process close spawns its service's termination; a
//! completed process result spawns the runner's forward callback; a runner result
//! travels to the dispatcher; the dispatcher's cleanup requests travel to the stores and
//! back. Every task waits a delay drawn from the run's seed first, so tasks race, and a
//! job's election issues and revokes sessions at random, sometimes in storms (several
//! grants and revokes at one instant), while the dispatcher fails over at random.
//!
//! **What runs as one step.** The model takes some exchanges between machines as one
//! atomic step; the driver runs each of them in one synchronous section, so the log of a
//! run is a sequence of model steps and nothing interleaves inside one. They are: a grant
//! or revoke delivered to a runner with its JobResultStore and leadership questions
//! answered; a forward callback with its leadership question; a runner result reaching
//! the dispatcher with the dirty JobResultStore entry it writes; a new dispatcher leader
//! with its recovery read; a close that completes as soon as it can.
//!
//! **Environment assumptions the driver keeps**, because the model's verdicts rest on
//! them (`steadfast_model::leadership`, "Environment assumptions"): an election message
//! reaches the runner only when the runner's operation chain is idle (the model's chain
//! runs one operation per step), and messages still undelivered when the runner closes
//! are dropped with its election; the scheduler decides at most once per job, for the
//! job's current process while it runs or closes; unless the run allows late signals, a process's
//! service terminates only after the terminal signal in flight to it arrived; the next
//! dispatcher leader starts only after every runner of the last one terminated and had
//! its result consumed; a job gets at most [`MAX_GRANTS_PER_JOB`] sessions and the run
//! at most [`MAX_FAILOVERS`] failovers, the model's bounds.
//!
//! The clock is tokio's, paused: timers fire in virtual time, as fast as the machines
//! run, and the single-threaded scheduler makes a seed replay the same run, byte for
//! byte in its log.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::Path;
use std::rc::Rc;

use serde::Serialize;
/// The seed bugs the machines can carry, with their command-line names.
pub use steadfast::leadership::Defect;
use steadfast::leadership::{
    Dispatcher, DispatcherEffect, Effect, Environment, Event, JobId, JobStatus, Runner,
    RunnerResult, Session,
};
use tokio::sync::Notify;

use crate::log::LogFile;
use crate::rng::Rng;

mod cluster;
mod election;
mod tasks;

/// Most sessions one job's election issues in a run: the leadership model's bound on
/// grants (`steadfast_model::leadership::MAX_GRANTS`), so that the model can explain
/// every run.
pub const MAX_GRANTS_PER_JOB: u8 = 4;

/// Most dispatcher failovers in a run: the model's bound on epochs, less one.
pub const MAX_FAILOVERS: u8 = 2;

/// Most jobs one run drives.
pub const MAX_JOBS: u32 = 1000;

/// Longest delay a task may wait, in milliseconds of the virtual clock.
pub const MAX_DELAY_MS: u64 = 60_000;

/// How often a task that waits for its turn looks again before the run gives up on it:
/// a bound, so that a driver defect shows as an error rather than a run that never ends.
const MAX_RETRIES: u32 = 100_000;

/// Ticks of a job's election: each tick may issue or revoke.
const ELECTION_TICKS: u32 = 40;

/// One run's settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Config {
    /// Jobs submitted at the start, numbered from 1.
    pub jobs: u32,
    /// The seed every choice is drawn from.
    pub seed: u64,
    /// Sessions each job's election issues at most (1 to [`MAX_GRANTS_PER_JOB`]).
    pub grants: u8,
    /// Dispatcher failovers at most (0 to [`MAX_FAILOVERS`]); the run draws how many.
    pub failovers: u8,
    /// Whether a terminal signal may reach its process after the process's service
    /// terminated (the fix's residual window; the model's `late-signal`).
    pub late_signal: bool,
    /// Longest delay of a message, answer or callback, in virtual milliseconds.
    pub max_delay_ms: u64,
    /// Seed bugs put back into the machines.
    #[serde(serialize_with = "defect_names")]
    pub defects: Vec<Defect>,
}

fn defect_names<S: serde::Serializer>(defects: &[Defect], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(defects.iter().map(|d| d.name()))
}

impl Default for Config {
    fn default() -> Self {
        Config {
            jobs: 4,
            seed: 0,
            grants: MAX_GRANTS_PER_JOB,
            failovers: MAX_FAILOVERS,
            late_signal: false,
            max_delay_ms: 20,
            defects: Vec::new(),
        }
    }
}

impl Config {
    /// Why these settings cannot run, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.jobs == 0 || self.jobs > MAX_JOBS {
            return Err(format!("jobs must be 1 to {MAX_JOBS}, not {}", self.jobs));
        }
        if self.grants == 0 || self.grants > MAX_GRANTS_PER_JOB {
            return Err(format!(
                "grants must be 1 to {MAX_GRANTS_PER_JOB} (the model's bound), not {}",
                self.grants
            ));
        }
        if self.failovers > MAX_FAILOVERS {
            return Err(format!(
                "failovers must be 0 to {MAX_FAILOVERS} (the model's bound), not {}",
                self.failovers
            ));
        }
        if self.max_delay_ms == 0 || self.max_delay_ms > MAX_DELAY_MS {
            return Err(format!(
                "max delay must be 1 to {MAX_DELAY_MS} ms, not {}",
                self.max_delay_ms
            ));
        }
        Ok(())
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Lines in the log.
    pub events: u64,
    /// Synchronous sections the driver ran (each one model step or a few).
    pub steps: u64,
    /// Events a machine refused (each is a `rejected` line in the log).
    pub refusals: u64,
    /// Jobs whose JobResultStore entry is clean at the end: done for good.
    pub jobs_done: u32,
    /// Runners the dispatcher started, over all epochs.
    pub runners_started: u32,
    /// Dispatcher epochs.
    pub epochs: u32,
    /// The virtual time the run took, in milliseconds.
    pub virtual_ms: u64,
}

pub use crate::RunError;

/// Runs one simulation and writes its log to `path`.
pub fn run(config: &Config, path: &Path) -> Result<Summary, RunError> {
    config.check().map_err(RunError::Config)?;
    let log = LogFile::create(path).map_err(RunError::Log)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(RunError::Log)?;
    let local = tokio::task::LocalSet::new();
    let result = local.block_on(&runtime, async {
        let dispatch = log.dispatch();
        let _guard = tracing::dispatcher::set_default(&dispatch);
        let started = tokio::time::Instant::now();
        let sim = Sim::new(config.clone());
        let mut summary = sim.run().await?;
        summary.virtual_ms = started.elapsed().as_millis() as u64;
        Ok(summary)
    });
    let lines = log.finish().map_err(RunError::Log)?;
    let mut summary = result?;
    summary.events = lines;
    Ok(summary)
}

/// One job: its election, its latest runner, and what the driver has in flight for it.
#[derive(Debug)]
struct Job {
    id: JobId,
    runner: Option<Runner>,
    /// Runners started for the job so far: tasks of an earlier runner are stale.
    generation: u32,
    issued: Option<Session>,
    last_session: u32,
    /// Grants and revokes issued but not yet delivered, each with its message number.
    inbox: VecDeque<(u64, Event)>,
    /// The scheduler decided (once per job and run).
    decided: bool,
    /// The process a terminal signal is travelling to.
    signal: Option<Session>,
    /// Runner results travelling to the dispatcher.
    results_in_flight: u32,
}

/// Work the driver does later, after a delay, as a task of its own.
#[derive(Clone, Copy, Debug)]
enum Later {
    Deliver {
        job: usize,
        message: u64,
    },
    Decide {
        job: usize,
        generation: u32,
        session: Session,
        tries: u8,
    },
    Signal {
        job: usize,
        generation: u32,
        session: Session,
        status: JobStatus,
    },
    Terminate {
        job: usize,
        generation: u32,
        session: Session,
    },
    Forward {
        job: usize,
        generation: u32,
        session: Session,
    },
    DeliverResult {
        job: usize,
        result: RunnerResult,
    },
    Answer {
        request: DispatcherEffect,
    },
}

impl Later {
    fn name(self) -> &'static str {
        match self {
            Later::Deliver { .. } => "an election message",
            Later::Decide { .. } => "a scheduler",
            Later::Signal { .. } => "a terminal signal",
            Later::Terminate { .. } => "a service termination",
            Later::Forward { .. } => "a forward callback",
            Later::DeliverResult { .. } => "a runner result",
            Later::Answer { .. } => "a store answer",
        }
    }
}

/// An effect of one synchronous section, executed in the order the machines emitted
/// them (breadth-first, as the runtime-agnostic `Harness` does).
#[derive(Clone, Copy, Debug)]
enum Work {
    Runner(usize, Effect),
    Dispatcher(DispatcherEffect),
}

/// A runner question waiting for the end of the section's effects.
#[derive(Clone, Copy, Debug)]
enum Question {
    JobResultStore(usize),
    Leadership(usize, Session),
}

/// Every machine and store of the run, and the run's randomness.
struct Cluster {
    config: Config,
    rng: Rng,
    dispatcher: Dispatcher,
    /// The HA stores: the JobGraph store and the JobResultStore (its election fields are
    /// unused: every job has its own election here).
    stores: Environment,
    jobs: Vec<Job>,
    next_message: u64,
    /// Tasks the current section asked for, spawned once it ends.
    later: Vec<(u64, Later)>,
    questions: VecDeque<Question>,
    /// Store requests answered within the section, once its effects are executed.
    requests: VecDeque<DispatcherEffect>,
    steps: u64,
    refusals: u64,
}

/// The driver: the cluster, shared by its tasks, and a count of the tasks still alive.
#[derive(Clone)]
struct Sim {
    cluster: Rc<RefCell<Cluster>>,
    live: Rc<Cell<usize>>,
    idle: Rc<Notify>,
    stalled: Rc<Cell<Option<&'static str>>>,
}
