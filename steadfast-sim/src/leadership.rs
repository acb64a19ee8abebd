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
use std::future::Future;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use serde::Serialize;
/// The seed bugs the machines can carry, with their command-line names.
pub use steadfast::leadership::Defect;
use steadfast::leadership::{
    Dispatcher, DispatcherEffect, DispatcherEvent, Effect, Environment, Event, JobId,
    JobResultEntry, JobResultStore, JobStatus, ProcessState, Runner, RunnerResult, RunnerState,
    Session,
};
use tokio::sync::Notify;

use crate::log::LogFile;
use crate::rng::Rng;

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

/// Why a run could not be completed.
#[derive(Debug)]
pub enum RunError {
    /// The settings are out of range.
    Config(String),
    /// The log could not be written.
    Log(std::io::Error),
    /// A task waited for its turn more than the retry bound: a driver defect.
    Stalled(&'static str),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Config(why) => write!(f, "{why}"),
            RunError::Log(e) => write!(f, "writing the log: {e}"),
            RunError::Stalled(what) => write!(f, "the run stalled: {what} never got its turn"),
        }
    }
}

impl std::error::Error for RunError {}

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

impl Sim {
    fn new(config: Config) -> Sim {
        let jobs = (1..=config.jobs)
            .map(|id| Job {
                id: JobId(id),
                runner: None,
                generation: 0,
                issued: None,
                last_session: 0,
                inbox: VecDeque::new(),
                decided: false,
                signal: None,
                results_in_flight: 0,
            })
            .collect();
        let rng = Rng::new(config.seed);
        Sim {
            cluster: Rc::new(RefCell::new(Cluster {
                config,
                rng,
                dispatcher: Dispatcher::new(),
                stores: Environment::default(),
                jobs,
                next_message: 0,
                later: Vec::new(),
                questions: VecDeque::new(),
                requests: VecDeque::new(),
                steps: 0,
                refusals: 0,
            })),
            live: Rc::new(Cell::new(0)),
            idle: Rc::new(Notify::new()),
            stalled: Rc::new(Cell::new(None)),
        }
    }

    async fn run(&self) -> Result<Summary, RunError> {
        let (jobs, failovers) = {
            let mut c = self.cluster.borrow_mut();
            let config = c.config.clone();
            tracing::info!(
                component = "run",
                event = "start",
                model = "leadership",
                seed = config.seed,
                jobs = config.jobs,
                grants = config.grants,
                failovers = config.failovers,
                late_signal = config.late_signal,
                max_delay_ms = config.max_delay_ms,
                defects = ?config.defects.iter().map(|d| d.name()).collect::<Vec<_>>(),
            );
            c.start();
            let failovers = c.rng.between(0, u64::from(config.failovers)) as u8;
            (config.jobs as usize, failovers)
        };
        self.spawn_later();
        for job in 0..jobs {
            let sim = self.clone();
            self.spawn(async move { sim.election(job).await });
        }
        if failovers > 0 {
            let sim = self.clone();
            self.spawn(async move { sim.failovers(failovers).await });
        }
        while self.live.get() > 0 {
            self.idle.notified().await;
        }
        if let Some(what) = self.stalled.get() {
            return Err(RunError::Stalled(what));
        }
        let c = self.cluster.borrow();
        let jobs_done = c
            .jobs
            .iter()
            .filter(|j| c.stores.results.entry(j.id) == JobResultEntry::Clean)
            .count() as u32;
        tracing::info!(
            component = "run",
            event = "end",
            steps = c.steps,
            refusals = c.refusals,
            jobs_done,
        );
        Ok(Summary {
            events: 0,
            steps: c.steps,
            refusals: c.refusals,
            jobs_done,
            runners_started: c.dispatcher.runners_started(),
            epochs: c.dispatcher.epoch(),
            virtual_ms: 0,
        })
    }

    /// Spawns `task`, counted until it ends.
    fn spawn(&self, task: impl Future<Output = ()> + 'static) {
        self.live.set(self.live.get() + 1);
        let live = self.live.clone();
        let idle = self.idle.clone();
        tokio::task::spawn_local(async move {
            task.await;
            live.set(live.get() - 1);
            if live.get() == 0 {
                idle.notify_one();
            }
        });
    }

    /// Spawns the tasks the last section asked for.
    fn spawn_later(&self) {
        let later = std::mem::take(&mut self.cluster.borrow_mut().later);
        for (delay_ms, work) in later {
            let sim = self.clone();
            self.spawn(async move { sim.perform_later(delay_ms, work).await });
        }
    }

    /// Waits, then does `work`; waits again while it is not its turn yet.
    async fn perform_later(&self, mut delay_ms: u64, work: Later) {
        for _ in 0..MAX_RETRIES {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            let again = self.cluster.borrow_mut().perform(work);
            self.spawn_later();
            match again {
                None => return,
                Some(wait) => delay_ms = wait,
            }
        }
        self.stalled.set(Some(work.name()));
    }

    /// Sleeps a drawn 1 to `times` x the largest delay, in virtual milliseconds.
    async fn sleep_up_to(&self, times: u64) {
        let wait = {
            let mut c = self.cluster.borrow_mut();
            let max = c.config.max_delay_ms;
            c.rng.between(1, times * max)
        };
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }

    /// The job's leader election: a tick at random intervals, each of which may issue
    /// or revoke a session, sometimes several at one instant.
    async fn election(&self, job: usize) {
        for _ in 0..ELECTION_TICKS {
            self.sleep_up_to(2).await;
            let over = self.cluster.borrow_mut().election_tick(job);
            self.spawn_later();
            if over {
                return;
            }
        }
    }

    /// The dispatcher's failovers: leadership lost at a random time, and regained once
    /// every runner of the old leader terminated and had its result consumed.
    async fn failovers(&self, count: u8) {
        for _ in 0..count {
            self.sleep_up_to(10).await;
            self.cluster.borrow_mut().lose_leadership();
            self.spawn_later();
            let mut regained = false;
            for _ in 0..MAX_RETRIES {
                self.sleep_up_to(1).await;
                regained = self.cluster.borrow_mut().try_regain_leadership();
                self.spawn_later();
                if regained {
                    break;
                }
            }
            if !regained {
                self.stalled.set(Some("the next dispatcher leader"));
                return;
            }
        }
    }
}

impl Cluster {
    fn delay(&mut self) -> u64 {
        let max = self.config.max_delay_ms;
        self.rng.between(0, max)
    }

    fn later(&mut self, work: Later) {
        let delay = self.delay();
        self.later.push((delay, work));
    }

    /// The first dispatcher leader recovers nothing and takes every job's submission.
    fn start(&mut self) {
        self.steps += 1;
        self.dispatch(DispatcherEvent::LeadershipGained);
        for job in 0..self.jobs.len() {
            let id = self.jobs[job].id;
            self.steps += 1;
            self.dispatch(DispatcherEvent::JobSubmitted { job: id });
        }
    }

    /// Hands `event` to the dispatcher and runs the section to its end.
    fn dispatch(&mut self, event: DispatcherEvent) {
        let mut work = VecDeque::new();
        self.hand_to_dispatcher(event, &mut work);
        self.finish(work);
    }

    /// Hands `event` to job `job`'s runner and runs the section to its end.
    fn runner_section(&mut self, job: usize, event: Event) {
        let mut work = VecDeque::new();
        self.runner_event(job, event, &mut work);
        self.finish(work);
    }

    fn hand_to_dispatcher(&mut self, event: DispatcherEvent, work: &mut VecDeque<Work>) {
        match self.dispatcher.handle(event) {
            Ok(effects) => work.extend(effects.into_iter().map(Work::Dispatcher)),
            Err(_) => self.refusals += 1,
        }
    }

    fn runner_event(&mut self, job: usize, event: Event, work: &mut VecDeque<Work>) {
        let id = self.jobs[job].id;
        let Some(runner) = self.jobs[job].runner.as_mut() else {
            return;
        };
        let span = tracing::debug_span!("job", job = id.0);
        match span.in_scope(|| runner.handle(event)) {
            Ok(effects) => work.extend(effects.into_iter().map(|e| Work::Runner(job, e))),
            Err(_) => self.refusals += 1,
        }
    }

    /// Executes the section's effects, then answers the store requests answered within
    /// a section, then the runners' questions (the order in which the conformance
    /// binding answers them after each event), until nothing is left.
    fn finish(&mut self, mut work: VecDeque<Work>) {
        loop {
            while let Some(effect) = work.pop_front() {
                self.execute(effect, &mut work);
            }
            if let Some(request) = self.requests.pop_front() {
                match self.stores.execute(request) {
                    Ok(answer) => self.hand_to_dispatcher(answer, &mut work),
                    Err(_) => self.refusals += 1,
                }
                continue;
            }
            let Some(question) = self.questions.pop_front() else {
                return;
            };
            match question {
                Question::JobResultStore(job) => {
                    let has_entry =
                        self.stores.results.entry(self.jobs[job].id) != JobResultEntry::None;
                    self.runner_event(job, Event::JobResultStoreAnswered { has_entry }, &mut work);
                }
                Question::Leadership(job, session) => {
                    let held = self.jobs[job].issued == Some(session);
                    self.runner_event(job, Event::LeadershipConfirmed { session, held }, &mut work);
                }
            }
        }
    }

    fn execute(&mut self, effect: Work, work: &mut VecDeque<Work>) {
        match effect {
            Work::Runner(job, effect) => {
                let generation = self.jobs[job].generation;
                match effect {
                    Effect::StartProcess { session } => {
                        let tries = self.rng.between(1, 3) as u8;
                        self.later(Later::Decide {
                            job,
                            generation,
                            session,
                            tries,
                        });
                    }
                    Effect::CloseProcess { session } => self.later(Later::Terminate {
                        job,
                        generation,
                        session,
                    }),
                    Effect::ForwardScheduled { session } => self.later(Later::Forward {
                        job,
                        generation,
                        session,
                    }),
                    Effect::QueryJobResultStore => {
                        self.questions.push_back(Question::JobResultStore(job))
                    }
                    Effect::ConfirmLeadership { session } => {
                        self.questions.push_back(Question::Leadership(job, session))
                    }
                    Effect::CompleteResult { value } => {
                        self.jobs[job].results_in_flight += 1;
                        self.later(Later::DeliverResult { job, result: value });
                    }
                    Effect::RunnerTerminated => {
                        // The runner closes its leader election once its process ended.
                        let j = &mut self.jobs[job];
                        j.issued = None;
                        j.inbox.clear();
                        self.questions.retain(|q| match *q {
                            Question::JobResultStore(i) | Question::Leadership(i, _) => i != job,
                        });
                        let id = j.id;
                        self.hand_to_dispatcher(
                            DispatcherEvent::RunnerTerminated { job: id },
                            work,
                        );
                    }
                }
            }
            Work::Dispatcher(request) => match request {
                // Answered within the section: the model reads the stores at recovery,
                // and writes the dirty entry with the result it handles, in one step.
                DispatcherEffect::RecoverJobs { .. }
                | DispatcherEffect::PutJobGraph { .. }
                | DispatcherEffect::WriteDirtyEntry { .. } => self.requests.push_back(request),
                DispatcherEffect::RemoveJobGraph { .. }
                | DispatcherEffect::MarkEntryClean { .. } => self.later(Later::Answer { request }),
                DispatcherEffect::StartRunner { job } => {
                    let index = self.index(job);
                    let defects = self.config.defects.clone();
                    let j = &mut self.jobs[index];
                    j.runner = Some(Runner::with_defects(job, &defects));
                    j.generation += 1;
                    j.inbox.clear();
                    j.issued = None;
                }
                DispatcherEffect::CloseRunner { job } => {
                    let index = self.index(job);
                    let j = &mut self.jobs[index];
                    // Messages the closed runner's chain has not run are dropped with it.
                    j.inbox.clear();
                    if j.runner
                        .as_ref()
                        .is_some_and(|r| r.state() != RunnerState::Stopped)
                    {
                        self.runner_event(index, Event::CloseRequested, work);
                    }
                }
                // Reports for the operator of the cluster.
                DispatcherEffect::GlobalCleanup { .. }
                | DispatcherEffect::LocalCleanup { .. }
                | DispatcherEffect::FatalError { .. } => {}
            },
        }
    }

    fn index(&self, job: JobId) -> usize {
        (job.0 - 1) as usize
    }

    /// Does `work` if it is its turn; otherwise returns how long to wait before looking
    /// again.
    fn perform(&mut self, work: Later) -> Option<u64> {
        match work {
            Later::Deliver { job, message } => {
                let j = &self.jobs[job];
                let &(front, event) = j.inbox.front()?;
                if !j.inbox.iter().any(|(m, _)| *m == message) {
                    // Dropped with a closed runner's election.
                    return None;
                }
                let idle = j.runner.as_ref().is_some_and(Runner::is_idle);
                if front != message || !idle {
                    return Some(self.delay().max(1));
                }
                self.jobs[job].inbox.pop_front();
                self.steps += 1;
                self.runner_section(job, event);
                None
            }
            Later::Decide {
                job,
                generation,
                session,
                tries,
            } => {
                let j = &self.jobs[job];
                if j.generation != generation || j.decided {
                    return None;
                }
                let current = j.runner.as_ref().and_then(|r| r.processes().last());
                let running = current.is_some_and(|p| {
                    p.session() == session
                        && p.state() != ProcessState::Terminated
                        && p.result().is_none()
                });
                if !running {
                    return None;
                }
                if self.rng.chance(70) {
                    let status = [JobStatus::Finished, JobStatus::Failed, JobStatus::Canceled]
                        [self.rng.between(0, 2) as usize];
                    let j = &mut self.jobs[job];
                    j.decided = true;
                    j.signal = Some(session);
                    self.later(Later::Signal {
                        job,
                        generation,
                        session,
                        status,
                    });
                    return None;
                }
                if tries == 0 {
                    return None;
                }
                let wait = self.delay().max(1);
                self.later.push((
                    wait,
                    Later::Decide {
                        job,
                        generation,
                        session,
                        tries: tries - 1,
                    },
                ));
                None
            }
            Later::Signal {
                job,
                generation,
                session,
                status,
            } => {
                self.jobs[job].signal = None;
                // A process whose runner is gone receives nothing.
                if self.jobs[job].generation == generation {
                    self.steps += 1;
                    self.runner_section(job, Event::TerminalSignalDelivered { session, status });
                }
                None
            }
            Later::Terminate {
                job,
                generation,
                session,
            } => {
                if self.jobs[job].generation != generation {
                    return None;
                }
                if !self.config.late_signal && self.jobs[job].signal == Some(session) {
                    return Some(self.delay().max(1));
                }
                self.steps += 1;
                self.runner_section(job, Event::ProcessServiceTerminated { session });
                None
            }
            Later::Forward {
                job,
                generation,
                session,
            } => {
                // A replaced runner's late callbacks change nothing.
                if self.jobs[job].generation == generation {
                    self.steps += 1;
                    self.runner_section(job, Event::ForwardCallback { session });
                }
                None
            }
            Later::DeliverResult { job, result } => {
                self.jobs[job].results_in_flight -= 1;
                let id = self.jobs[job].id;
                self.steps += 1;
                self.dispatch(DispatcherEvent::RunnerCompleted { job: id, result });
                None
            }
            Later::Answer { request } => {
                self.steps += 1;
                match self.stores.execute(request) {
                    Ok(answer) => self.dispatch(answer),
                    Err(_) => self.refusals += 1,
                }
                None
            }
        }
    }

    /// One tick of job `job`'s election; true when the election has nothing left to do.
    fn election_tick(&mut self, job: usize) -> bool {
        let grants = u32::from(self.config.grants);
        let j = &self.jobs[job];
        if self.stores.results.entry(j.id) != JobResultEntry::None {
            return true;
        }
        if j.last_session >= grants && j.issued.is_none() {
            return true;
        }
        let running = j
            .runner
            .as_ref()
            .is_some_and(|r| r.state() == RunnerState::Running && !r.is_terminated());
        if !running {
            return false;
        }
        // A storm: several grants and revokes at one instant.
        let burst = if self.rng.chance(20) { 3 } else { 1 };
        for _ in 0..burst {
            let j = &self.jobs[job];
            if j.issued.is_none() {
                if j.last_session >= grants {
                    break;
                }
                self.issue(job);
            } else if burst > 1 || self.rng.chance(40) {
                self.revoke(job);
            }
        }
        false
    }

    fn issue(&mut self, job: usize) {
        let j = &mut self.jobs[job];
        j.last_session += 1;
        let session = Session(j.last_session);
        j.issued = Some(session);
        self.post(job, "issue", session, Event::LeadershipGranted { session });
    }

    fn revoke(&mut self, job: usize) {
        if let Some(session) = self.jobs[job].issued.take() {
            self.post(job, "revoke", session, Event::LeadershipRevoked);
        }
    }

    /// The election's notice of an issue or revoke: logged at once, queued for the
    /// runner, and delivered later.
    fn post(&mut self, job: usize, what: &'static str, session: Session, event: Event) {
        self.steps += 1;
        let message = self.next_message;
        self.next_message += 1;
        let j = &mut self.jobs[job];
        j.inbox.push_back((message, event));
        tracing::debug!(
            component = "election",
            event = what,
            job = j.id.0,
            session = session.0,
            outcome = if what == "issue" { "issued" } else { "revoked" }
        );
        self.later(Later::Deliver { job, message });
    }

    fn lose_leadership(&mut self) {
        if self.dispatcher.is_leader() {
            self.steps += 1;
            self.dispatch(DispatcherEvent::LeadershipLost);
        }
    }

    /// The next leader starts once the old one is done with every runner it started.
    fn try_regain_leadership(&mut self) -> bool {
        let ready = self.jobs.iter().all(|j| {
            j.results_in_flight == 0
                && !self.dispatcher.is_live(j.id)
                && self.dispatcher.result_received(j.id) != Some(false)
        });
        if !ready {
            return false;
        }
        self.steps += 1;
        self.dispatch(DispatcherEvent::LeadershipGained);
        true
    }
}
