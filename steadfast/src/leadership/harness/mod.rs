//! The test harness of one job: leader election, the runner, the dispatcher and
//! in-memory HA stores, wired together. It is test support (feature `testkit`), not a
//! runtime: the runtimes are the JobManager of `steadfast-backends` and the simulation.
//!
//! The harness plays the environment around the sans-IO machines of FLINK-39704 (apache/
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
//! ([`Environment::execute`]) and answered at once; a [`Harness::stepwise`] harness holds
//! them, and the runner's results on their way to the dispatcher, until the caller
//! answers or delivers them, so every step of the dispatcher's cleanup is a step the
//! caller takes.
//!
//! With [`Harness::overlapping`], the next dispatcher leader runs on another host: when
//! it gains leadership while the old JobManager is still stopping (its runner not yet
//! terminated, or its result not yet handled), the old dispatcher and runner go on
//! beside the new ones, on the same stores ([`Harness::old_runner_event`],
//! [`Harness::deliver_old_runner_result`], [`Harness::answer_old_store_request`]) until
//! their stop completes. With fenced stores ([`Environment::fenced`]) the old
//! dispatcher's writes are refused.

use super::defect::Defects;
use super::dispatcher::{Dispatcher, DispatcherEffect, DispatcherEvent};
use super::error::LeadershipError;
use super::projection::{LeadershipProjection, ProcessProjection};
use super::runner::{Effect, Event, Runner};
use super::store::{JobGraphStore, JobResultStore};
use super::types::{JobId, ProcessState, RunnerState, Session};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

mod election;
mod environment;
mod overlap;

pub use environment::Environment;
use overlap::{refused, StoppingJobManager};

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
pub enum HarnessEffect {
    /// Emitted by the runner.
    Runner(Effect),
    /// Emitted by the dispatcher.
    Dispatcher(DispatcherEffect),
}

/// Drives one job's lifecycle.
///
/// ```
/// use steadfast::leadership::{Harness, Event, JobId, JobStatus, RunnerResult, Session};
/// let mut d = Harness::new(JobId(1), true);
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
pub struct Harness {
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
    /// The next dispatcher leader runs on another host ([`Harness::overlapping`]).
    overlapping: bool,
    /// The old JobManager still stopping beside the leader (overlapping leaders).
    old: Option<Box<StoppingJobManager>>,
    /// The old JobManager's parts are swapped in ([`Harness::on_old_jobmanager`]).
    on_old: bool,
    /// The old JobManager's runner is still the latest one started and nothing died
    /// since: once it retires, [`Harness::runner`] is it again.
    old_runner_latest: bool,
    /// Seed bugs every runner this driver starts carries (feature `defects`); none in
    /// production.
    defects: Defects,
}

type Driven = Result<Vec<HarnessEffect>, LeadershipError>;

impl Harness {
    /// A driver for `job`. With `auto_answer`, queries are answered as soon as they are
    /// asked; otherwise they wait for [`Harness::answer_query`].
    pub fn new(job: JobId, auto_answer: bool) -> Self {
        Harness {
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
            overlapping: false,
            old: None,
            on_old: false,
            old_runner_latest: false,
            defects: Defects::default(),
        }
    }

    /// This driver with every runner it starts carrying the given seed bugs of
    /// FLINK-39704 (feature `defects`), so conformance can bind them to the model's
    /// designs that lack a part of the fix.
    #[cfg(feature = "defects")]
    pub fn with_defects(mut self, defects: &[super::defect::Defect]) -> Self {
        self.defects = Defects::of(defects);
        self
    }

    /// A driver for `job` that decides nothing by itself: the runner's queries wait
    /// for [`Harness::answer_query`], the dispatcher's store requests for
    /// [`Harness::answer_store_request`], and the runner's result on its way to the
    /// dispatcher for
    /// [`Harness::deliver_runner_result`].
    pub fn stepwise(job: JobId) -> Self {
        Harness {
            stepwise: true,
            ..Harness::new(job, false)
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
    /// [`Harness::pending_queries`], without collecting them.
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
            match d.execute(request)? {
                Some(answer) => d.hand_to_dispatcher(answer),
                None => Ok(Vec::new()),
            }
        })
    }

    /// Executes the dispatcher's `request` against the stores for its epoch. A request
    /// the stores refuse to a stopping dispatcher is logged and given up (`None`); to
    /// the leader it is an error.
    fn execute(
        &mut self,
        request: DispatcherEffect,
    ) -> Result<Option<DispatcherEvent>, LeadershipError> {
        let epoch = self.dispatcher.epoch();
        match self.env.execute_for(epoch, request) {
            Ok(answer) => Ok(Some(answer)),
            Err(error) if self.on_old => {
                refused(self.job, epoch, request, &error.to_string());
                Ok(None)
            }
            Err(error) => Err(error),
        }
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

    /// The dispatcher gains leadership and recovers jobs. When the next leader runs on
    /// another host ([`Harness::overlapping`]) and the old JobManager is still stopping,
    /// a new dispatcher gains it and the old one goes on beside it.
    pub fn dispatcher_gain_leadership(&mut self) -> Driven {
        // At most two dispatchers overlap: a third leader waits for the oldest's stop.
        if self.old.is_some() && !self.dispatcher.is_leader() {
            return Err(LeadershipError::RunnerStillLive { job: self.job });
        }
        let split = self.overlapping && self.old.is_none() && self.still_stopping();
        self.atomically(|d| {
            if split {
                d.split();
            }
            let effects = d.hand_to_dispatcher(DispatcherEvent::LeadershipGained)?;
            d.env.leader_epoch = d.dispatcher.epoch();
            Ok(effects)
        })
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
        self.old_runner_latest = false;
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
        if let Some(old) = self.old_runner() {
            processes.extend(old.projection().processes);
        }
        if let Some(r) = &runner {
            processes.extend(r.processes.iter().copied());
        }
        // A crash of the leader may retire processes created after the old JobManager's.
        processes.sort_by_key(|p| p.session);
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
    /// nothing by itself: callers wrap it in [`Harness::atomically`]).
    fn hand_to_dispatcher(&mut self, event: DispatcherEvent) -> Driven {
        let effects = self.dispatcher.handle(event)?;
        self.run(effects.into_iter().map(HarnessEffect::Dispatcher).collect())
    }

    /// Hands `event` to the dispatcher from inside [`Harness::run`]: its effects join
    /// the work.
    fn dispatcher_work(
        &mut self,
        event: DispatcherEvent,
        work: &mut VecDeque<HarnessEffect>,
    ) -> Result<(), LeadershipError> {
        let effects = self.dispatcher.handle(event)?;
        work.extend(effects.into_iter().map(HarnessEffect::Dispatcher));
        Ok(())
    }

    fn pump(&mut self, effects: Vec<Effect>) -> Driven {
        self.run(effects.into_iter().map(HarnessEffect::Runner).collect())
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
    fn run(&mut self, initial: Vec<HarnessEffect>) -> Driven {
        let mut work: VecDeque<HarnessEffect> = initial.into();
        let mut done = Vec::new();
        while let Some(effect) = work.pop_front() {
            done.push(effect);
            match effect {
                HarnessEffect::Runner(Effect::QueryJobResultStore) => {
                    self.ask(Query::JobResultStore, &mut work)?
                }
                HarnessEffect::Runner(Effect::ConfirmLeadership { session }) => {
                    self.ask(Query::Leadership(session), &mut work)?
                }
                HarnessEffect::Runner(Effect::CompleteResult { value }) => {
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
                HarnessEffect::Runner(Effect::RunnerTerminated) => {
                    // The runner closes its leader election once its process terminated;
                    // the old JobManager's ended when the next leader started.
                    if !self.on_old {
                        self.env.issued = None;
                        self.election_inbox.clear();
                    }
                    self.queries.clear();
                    let event = DispatcherEvent::RunnerTerminated { job: self.job };
                    self.dispatcher_work(event, &mut work)?;
                }
                HarnessEffect::Dispatcher(request) if request.is_store_request() => {
                    // Fenced stores refuse a stopping dispatcher's request at once.
                    let fenced_out = self.on_old && self.env.fenced;
                    if self.stepwise && !fenced_out {
                        self.store_requests.push_back(request);
                    } else if let Some(answer) = self.execute(request)? {
                        self.dispatcher_work(answer, &mut work)?;
                    }
                }
                // Flink's fatal error handler exits the JobManager process: nothing
                // after it runs, and the next leader takes over.
                HarnessEffect::Dispatcher(DispatcherEffect::FatalError { .. }) => {
                    if self.on_old {
                        // The old JobManager's parts are swapped in; the flag stays on
                        // its box, which gets them back after the step.
                        self.old.as_mut().expect("swapped in").exited = true;
                        self.queries.clear();
                        self.store_requests.clear();
                        self.runner_results.clear();
                    } else {
                        self.crash_jobmanager();
                    }
                    return Ok(done);
                }
                HarnessEffect::Dispatcher(DispatcherEffect::StartRunner { job }) => {
                    debug_assert!(!self.on_old, "a stopping dispatcher starts no runner");
                    self.old_runner_latest = false;
                    if let Some(old) = self.runner.take() {
                        self.retired.extend(old.projection().processes);
                    }
                    self.runner = Some(Runner::carrying(job, self.defects));
                }
                HarnessEffect::Dispatcher(DispatcherEffect::CloseRunner { .. }) => {
                    // Closing is idempotent for the dispatcher, as Flink's
                    // `JobManagerRunner.closeAsync` is: a runner that is closing or
                    // closed already (closed directly, then its result reached the
                    // dispatcher) is left to finish.
                    let runner = self.runner_mut()?;
                    if runner.state() != RunnerState::Stopped {
                        let fx = runner.handle(Event::CloseRequested)?;
                        work.extend(fx.into_iter().map(HarnessEffect::Runner));
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
        work: &mut VecDeque<HarnessEffect>,
    ) -> Result<(), LeadershipError> {
        if !self.auto_answer {
            self.queries.push_back(query);
            return Ok(());
        }
        let event = self.env.answer(self.job, query);
        let fx = self.runner_mut()?.handle(event)?;
        work.extend(fx.into_iter().map(HarnessEffect::Runner));
        Ok(())
    }
}
