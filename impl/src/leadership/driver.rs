//! A thin, runtime-agnostic driver for one job: leader election, the runner, the
//! dispatcher and in-memory HA stores, wired together.
//!
//! The driver plays the environment around the sans-IO machines of FLINK-39704 (apache/
//! flink PR 28201). It answers the runner's JobResultStore and leadership queries from
//! its in-memory environment (at once, or when the caller says so, to open the windows
//! between a question and its answer), hands runner results to the dispatcher, and
//! closes or starts runners when the dispatcher says so. Everything the environment
//! decides by itself in Flink, such as when a grant or revoke reaches the runner, when a
//! terminal signal reaches a process, when a service terminates or when a forward
//! callback runs, stays a call the caller makes, so any interleaving can be replayed.
//! Every effect is returned to the caller in the order it was executed.
//!
//! The dispatcher's store requests are executed against the environment's stores
//! ([`Environment::execute`]) and answered at once; a [`Driver::stepwise`] driver holds
//! them, and the runner's results on their way to the dispatcher, until the caller
//! answers or delivers them, so every step of the dispatcher's cleanup is a step the
//! caller takes.

use super::dispatcher::{Dispatcher, DispatcherEffect, DispatcherEvent, RecoveredJob};
use super::error::LeadershipError;
use super::projection::{LeadershipProjection, ProcessProjection};
use super::runner::{Effect, Event, Runner};
use super::store::{InMemoryJobGraphStore, InMemoryJobResultStore, JobGraphStore, JobResultStore};
use super::types::{JobId, JobResultEntry, ProcessState, RunnerState, Session};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::collections::VecDeque;

/// A query from the runner that the environment has not answered yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Query {
    /// Does the JobResultStore hold an entry for the job?
    JobResultStore,
    /// Is this session the issued leader session?
    Leadership(Session),
}

/// An effect executed by the driver, tagged with the machine that emitted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DriverEffect {
    /// Emitted by the runner.
    Runner(Effect),
    /// Emitted by the dispatcher.
    Dispatcher(DispatcherEffect),
}

/// The in-memory environment: the job's leader election and the HA stores.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    /// The session currently issued by the job's leader election.
    pub issued: Option<Session>,
    /// The last session number handed out (sessions start at 1).
    pub last_session: u32,
    /// The JobGraph store.
    pub graphs: InMemoryJobGraphStore,
    /// The JobResultStore.
    pub results: InMemoryJobResultStore,
}

impl Environment {
    /// Answers a query from the current environment state.
    pub fn answer(&self, job: JobId, query: Query) -> Event {
        match query {
            Query::JobResultStore => Event::JobResultStoreAnswered {
                has_entry: self.results.entry(job) != JobResultEntry::None,
            },
            Query::Leadership(session) => Event::LeadershipConfirmed {
                session,
                held: self.issued == Some(session),
            },
        }
    }

    /// Executes one of the dispatcher's store requests against the stores and returns
    /// the dispatcher's answer event; refuses any other effect, and a request the
    /// stores refuse, leaving the stores unchanged.
    pub fn execute(
        &mut self,
        request: DispatcherEffect,
    ) -> Result<DispatcherEvent, LeadershipError> {
        match request {
            DispatcherEffect::RecoverJobs { epoch } => {
                let jobs: BTreeSet<JobId> = self
                    .graphs
                    .jobs()
                    .into_iter()
                    .chain(self.results.jobs())
                    .collect();
                let jobs = jobs
                    .into_iter()
                    .map(|job| RecoveredJob {
                        job,
                        job_graph: self.graphs.contains(job),
                        entry: self.results.entry(job),
                    })
                    .collect();
                Ok(DispatcherEvent::JobsRecovered { epoch, jobs })
            }
            DispatcherEffect::PutJobGraph { job } => {
                self.graphs.put(job)?;
                Ok(DispatcherEvent::JobGraphStored { job })
            }
            DispatcherEffect::WriteDirtyEntry { job, status } => {
                self.results.create_dirty(job, status)?;
                Ok(DispatcherEvent::DirtyEntryWritten { job })
            }
            DispatcherEffect::RemoveJobGraph { job } => {
                self.graphs.remove(job);
                Ok(DispatcherEvent::JobGraphRemoved { job })
            }
            DispatcherEffect::MarkEntryClean { job } => {
                let status = self
                    .results
                    .status(job)
                    .ok_or(LeadershipError::NoEntry { job })?;
                self.results.mark_clean(job)?;
                Ok(DispatcherEvent::EntryMarkedClean { job, status })
            }
            DispatcherEffect::StartRunner { .. }
            | DispatcherEffect::CloseRunner { .. }
            | DispatcherEffect::GlobalCleanup { .. }
            | DispatcherEffect::LocalCleanup { .. }
            | DispatcherEffect::FatalError { .. } => Err(LeadershipError::NoPendingStoreRequest),
        }
    }
}

/// Drives one job's lifecycle.
///
/// ```
/// use steadfast::leadership::{Driver, Event, JobId, JobStatus, RunnerResult, Session};
/// let mut d = Driver::new(JobId(1), true);
/// d.dispatcher_gain_leadership().unwrap();
/// d.submit_job().unwrap();
/// let s = d.grant().unwrap();
/// d.runner_event(Event::TerminalSignalDelivered { session: s, status: JobStatus::Failed }).unwrap();
/// d.runner_event(Event::ForwardCallback { session: s }).unwrap();
/// let p = d.projection();
/// assert_eq!(p.runner_result, Some(RunnerResult::Terminal(JobStatus::Failed)));
/// assert!(!p.job_graph_present);
/// ```
#[derive(Clone, Debug)]
pub struct Driver {
    job: JobId,
    auto_answer: bool,
    /// Store requests and runner results wait for the caller.
    stepwise: bool,
    env: Environment,
    dispatcher: Dispatcher,
    runner: Option<Runner>,
    retired: Vec<ProcessProjection>,
    election_inbox: VecDeque<Event>,
    queries: VecDeque<Query>,
    /// The dispatcher's store requests not yet answered (stepwise), oldest first.
    store_requests: VecDeque<DispatcherEffect>,
    /// Runner results not yet delivered to the dispatcher (stepwise), oldest first.
    runner_results: VecDeque<DispatcherEvent>,
}

type Driven = Result<Vec<DriverEffect>, LeadershipError>;

impl Driver {
    /// A driver for `job`. With `auto_answer`, queries are answered as soon as they are
    /// asked; otherwise they wait for [`Driver::answer_query`].
    pub fn new(job: JobId, auto_answer: bool) -> Self {
        Driver {
            job,
            auto_answer,
            stepwise: false,
            env: Environment::default(),
            dispatcher: Dispatcher::new(),
            runner: None,
            retired: Vec::new(),
            election_inbox: VecDeque::new(),
            queries: VecDeque::new(),
            store_requests: VecDeque::new(),
            runner_results: VecDeque::new(),
        }
    }

    /// A driver for `job` that decides nothing by itself: the runner's queries wait
    /// for [`Driver::answer_query`], the dispatcher's store requests for
    /// [`Driver::answer_store_request`], and the runner's result on its way to the
    /// dispatcher for
    /// [`Driver::deliver_runner_result`].
    pub fn stepwise(job: JobId) -> Self {
        Driver {
            stepwise: true,
            ..Driver::new(job, false)
        }
    }

    /// The environment.
    pub fn environment(&self) -> &Environment {
        &self.env
    }

    /// The dispatcher.
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    /// The latest runner, if one was started.
    pub fn runner(&self) -> Option<&Runner> {
        self.runner.as_ref()
    }

    /// Queries waiting for an answer, oldest first.
    pub fn pending_queries(&self) -> Vec<Query> {
        self.queries.iter().copied().collect()
    }

    /// The oldest query waiting for an answer: the head of
    /// [`Driver::pending_queries`], without collecting them.
    pub fn next_query(&self) -> Option<Query> {
        self.queries.front().copied()
    }

    /// The processes of the runners replaced so far, in creation order, as they were
    /// when their runner was replaced: the head of [`LeadershipProjection::processes`]
    /// before the latest runner's own, without copying them.
    pub fn retired_processes(&self) -> &[ProcessProjection] {
        &self.retired
    }

    /// The dispatcher's store requests waiting for an answer (stepwise), oldest first.
    pub fn store_requests(&self) -> impl ExactSizeIterator<Item = &DispatcherEffect> {
        self.store_requests.iter()
    }

    /// The oldest runner result on its way to the dispatcher (stepwise).
    pub fn next_runner_result(&self) -> Option<&DispatcherEvent> {
        self.runner_results.front()
    }

    /// Executes `request`, one of the store requests waiting, against the stores and
    /// hands the answer to the dispatcher. Requests may be answered in any order, as
    /// the stores of different jobs answer independently.
    pub fn answer_store_request(&mut self, request: DispatcherEffect) -> Driven {
        let at = self
            .store_requests
            .iter()
            .position(|r| *r == request)
            .ok_or(LeadershipError::NoPendingStoreRequest)?;
        self.atomically(|d| {
            d.store_requests.remove(at);
            let answer = d.env.execute(request)?;
            d.hand_to_dispatcher(answer)
        })
    }

    /// Hands the oldest runner result to the dispatcher.
    pub fn deliver_runner_result(&mut self) -> Driven {
        if self.runner_results.is_empty() {
            return Err(LeadershipError::NoPendingRunnerResult);
        }
        self.atomically(|d| {
            let event = d.runner_results.pop_front().expect("checked above");
            d.hand_to_dispatcher(event)
        })
    }

    /// Grant/revoke messages issued by the election but not yet delivered to the runner.
    pub fn pending_election(&self) -> Vec<Event> {
        self.election_inbox.iter().copied().collect()
    }

    /// The dispatcher gains leadership and recovers jobs.
    pub fn dispatcher_gain_leadership(&mut self) -> Driven {
        self.dispatch(DispatcherEvent::LeadershipGained)
    }

    /// The dispatcher loses leadership and closes its runners.
    pub fn dispatcher_lose_leadership(&mut self) -> Driven {
        self.dispatch(DispatcherEvent::LeadershipLost)
    }

    /// The JobManager process dies: its dispatcher, runner and processes vanish without
    /// closing, completing a result or writing a store ([`Dispatcher::after_crash`]);
    /// the election expires the session the runner held, and requests, answers and
    /// notifications on their way to the dead process are lost. The stores keep what
    /// they hold; the processes stay on record as terminated, with the results they had.
    pub fn crash_jobmanager(&mut self) {
        if let Some(runner) = self.runner.take() {
            self.retired
                .extend(runner.projection().processes.into_iter().map(|mut p| {
                    p.state = ProcessState::Terminated;
                    p
                }));
        }
        self.dispatcher = self.dispatcher.after_crash();
        self.env.issued = None;
        self.election_inbox.clear();
        self.queries.clear();
        self.store_requests.clear();
        self.runner_results.clear();
        tracing::debug!(
            component = "jobmanager",
            event = "crash",
            job = self.job.0,
            epoch = self.dispatcher.epoch(),
            outcome = "crashed",
        );
    }

    /// A client submits the job.
    pub fn submit_job(&mut self) -> Driven {
        self.dispatch(DispatcherEvent::JobSubmitted { job: self.job })
    }

    /// The election issues a new session; the grant is queued for the runner.
    pub fn elect(&mut self) -> Result<Session, LeadershipError> {
        let runner = self.runner.as_ref().ok_or(LeadershipError::NoRunner)?;
        if runner.is_terminated() {
            return Err(LeadershipError::Election("the runner's election is closed"));
        }
        if self.env.issued.is_some() {
            return Err(LeadershipError::Election("a session is already issued"));
        }
        self.env.last_session += 1;
        let session = Session(self.env.last_session);
        self.env.issued = Some(session);
        self.election_inbox
            .push_back(Event::LeadershipGranted { session });
        tracing::debug!(
            component = "election",
            event = "issue",
            session = session.0,
            outcome = "issued"
        );
        Ok(session)
    }

    /// The election revokes the issued session; the revoke is queued for the runner.
    pub fn unelect(&mut self) -> Result<Session, LeadershipError> {
        let session = self
            .env
            .issued
            .ok_or(LeadershipError::Election("no session is issued"))?;
        self.env.issued = None;
        self.election_inbox.push_back(Event::LeadershipRevoked);
        tracing::debug!(
            component = "election",
            event = "revoke",
            session = session.0,
            outcome = "revoked"
        );
        Ok(session)
    }

    /// Delivers the oldest queued grant or revoke to the runner.
    pub fn deliver_election(&mut self) -> Driven {
        let event = *self
            .election_inbox
            .front()
            .ok_or(LeadershipError::Election("nothing to deliver"))?;
        self.atomically(|d| {
            let effects = d.runner_mut()?.handle(event)?;
            d.election_inbox.pop_front();
            d.pump(effects)
        })
    }

    /// Issues a session and delivers the grant at once (requires an empty inbox).
    pub fn grant(&mut self) -> Result<Session, LeadershipError> {
        if !self.election_inbox.is_empty() {
            return Err(LeadershipError::Election(
                "earlier messages are undelivered",
            ));
        }
        let before = self.env.clone();
        let session = self.elect()?;
        if let Err(error) = self.deliver_election() {
            self.env = before;
            self.election_inbox.clear();
            return Err(error);
        }
        Ok(session)
    }

    /// Revokes the issued session and delivers the revoke at once (requires an empty
    /// inbox).
    pub fn revoke(&mut self) -> Driven {
        if !self.election_inbox.is_empty() {
            return Err(LeadershipError::Election(
                "earlier messages are undelivered",
            ));
        }
        let before = self.env.clone();
        self.unelect()?;
        match self.deliver_election() {
            Ok(effects) => Ok(effects),
            Err(error) => {
                self.env = before;
                self.election_inbox.clear();
                Err(error)
            }
        }
    }

    /// Feeds one event to the runner and executes the resulting effects.
    pub fn runner_event(&mut self, event: Event) -> Driven {
        self.atomically(|d| {
            let effects = d.runner_mut()?.handle(event)?;
            d.pump(effects)
        })
    }

    /// Answers the oldest pending query from the environment as it is now.
    pub fn answer_query(&mut self) -> Driven {
        let query = *self
            .queries
            .front()
            .ok_or(LeadershipError::NoPendingQuery)?;
        let event = self.env.answer(self.job, query);
        self.atomically(|d| {
            let effects = d.runner_mut()?.handle(event)?;
            d.queries.pop_front();
            d.pump(effects)
        })
    }

    /// The observable projection.
    pub fn projection(&self) -> LeadershipProjection {
        let runner = self.runner.as_ref().map(Runner::projection);
        let mut processes = self.retired.clone();
        if let Some(r) = &runner {
            processes.extend(r.processes.iter().copied());
        }
        LeadershipProjection {
            issued_session: self.env.issued,
            runner_state: runner.as_ref().map(|r| r.state),
            runner_result: runner.as_ref().and_then(|r| r.result),
            pending_terminal: runner.as_ref().and_then(|r| r.pending_terminal),
            current_process_leader: runner.as_ref().and_then(|r| r.current_process_leader),
            processes,
            job_graph_present: self.env.graphs.contains(self.job),
            job_result_entry: self.env.results.entry(self.job),
            dispatcher_epoch: self.dispatcher.epoch(),
            runners_started: self.dispatcher.runners_started(),
        }
    }

    fn runner_mut(&mut self) -> Result<&mut Runner, LeadershipError> {
        self.runner.as_mut().ok_or(LeadershipError::NoRunner)
    }

    fn dispatch(&mut self, event: DispatcherEvent) -> Driven {
        self.atomically(|d| d.hand_to_dispatcher(event))
    }

    /// Hands `event` to the dispatcher and executes the effects it causes (not all or
    /// nothing by itself: callers wrap it in [`Driver::atomically`]).
    fn hand_to_dispatcher(&mut self, event: DispatcherEvent) -> Driven {
        let effects = self.dispatcher.handle(event)?;
        self.run(effects.into_iter().map(DriverEffect::Dispatcher).collect())
    }

    /// Hands `event` to the dispatcher from inside [`Driver::run`]: its effects join
    /// the work.
    fn dispatcher_work(
        &mut self,
        event: DispatcherEvent,
        work: &mut VecDeque<DriverEffect>,
    ) -> Result<(), LeadershipError> {
        let effects = self.dispatcher.handle(event)?;
        work.extend(effects.into_iter().map(DriverEffect::Dispatcher));
        Ok(())
    }

    fn pump(&mut self, effects: Vec<Effect>) -> Driven {
        self.run(effects.into_iter().map(DriverEffect::Runner).collect())
    }

    /// Runs `step` (an event and the effects it causes) all or nothing: when any part of
    /// it is refused, the driver is put back as it was, so a refused event leaves every
    /// machine and store unchanged.
    fn atomically(&mut self, step: impl FnOnce(&mut Self) -> Driven) -> Driven {
        let before = self.clone();
        let result = step(self);
        if result.is_err() {
            *self = before;
        }
        result
    }

    /// Executes effects breadth-first; effects they cause are appended.
    fn run(&mut self, initial: Vec<DriverEffect>) -> Driven {
        let mut work: VecDeque<DriverEffect> = initial.into();
        let mut done = Vec::new();
        while let Some(effect) = work.pop_front() {
            done.push(effect);
            match effect {
                DriverEffect::Runner(Effect::QueryJobResultStore) => {
                    self.ask(Query::JobResultStore, &mut work)?
                }
                DriverEffect::Runner(Effect::ConfirmLeadership { session }) => {
                    self.ask(Query::Leadership(session), &mut work)?
                }
                DriverEffect::Runner(Effect::CompleteResult { value }) => {
                    let event = DispatcherEvent::RunnerCompleted {
                        job: self.job,
                        result: value,
                    };
                    if self.stepwise {
                        self.runner_results.push_back(event);
                    } else {
                        self.dispatcher_work(event, &mut work)?;
                    }
                }
                DriverEffect::Runner(Effect::RunnerTerminated) => {
                    // The runner closes its leader election once its process terminated.
                    self.env.issued = None;
                    self.election_inbox.clear();
                    self.queries.clear();
                    let event = DispatcherEvent::RunnerTerminated { job: self.job };
                    self.dispatcher_work(event, &mut work)?;
                }
                DriverEffect::Dispatcher(request) if request.is_store_request() => {
                    if self.stepwise {
                        self.store_requests.push_back(request);
                    } else {
                        let answer = self.env.execute(request)?;
                        self.dispatcher_work(answer, &mut work)?;
                    }
                }
                // Flink's fatal error handler exits the JobManager process: nothing
                // after it runs, and the next leader takes over.
                DriverEffect::Dispatcher(DispatcherEffect::FatalError { .. }) => {
                    self.crash_jobmanager();
                    return Ok(done);
                }
                DriverEffect::Dispatcher(DispatcherEffect::StartRunner { job }) => {
                    if let Some(old) = self.runner.take() {
                        self.retired.extend(old.projection().processes);
                    }
                    self.runner = Some(Runner::new(job));
                }
                DriverEffect::Dispatcher(DispatcherEffect::CloseRunner { .. }) => {
                    // Closing is idempotent for the dispatcher, as Flink's
                    // `JobManagerRunner.closeAsync` is: a runner that is closing or
                    // closed already (closed directly, then its result reached the
                    // dispatcher) is left to finish.
                    let runner = self.runner_mut()?;
                    if runner.state() != RunnerState::Stopped {
                        let fx = runner.handle(Event::CloseRequested)?;
                        work.extend(fx.into_iter().map(DriverEffect::Runner));
                    }
                }
                // Process start/close, forward scheduling and cleanup reports are for
                // the caller: it decides when services terminate and callbacks run.
                _ => {}
            }
        }
        Ok(done)
    }

    fn ask(
        &mut self,
        query: Query,
        work: &mut VecDeque<DriverEffect>,
    ) -> Result<(), LeadershipError> {
        if !self.auto_answer {
            self.queries.push_back(query);
            return Ok(());
        }
        let event = self.env.answer(self.job, query);
        let fx = self.runner_mut()?.handle(event)?;
        work.extend(fx.into_iter().map(DriverEffect::Runner));
        Ok(())
    }
}
