//! A JobManager process: the sans-IO dispatcher and runners of `steadfast::leadership`,
//! driven on tokio against etcd ([`crate::etcd`]).
//!
//! Several JobManagers of one cluster run side by side, each with its own lease. Each
//! campaigns for the dispatcher leadership; the winner recovers the jobs the stores
//! hold, submits the configured jobs they do not know, and starts a runner per job,
//! which campaigns for the job's leadership; a grant starts a JobMaster, here a stand-in
//! whose scheduler decides the job's globally terminal status after a set time. The
//! others wait. When the leader dies, its lease expires, its leader keys go with it,
//! and another JobManager wins and recovers from the stores what the dead one wrote.
//!
//! The driver owns the machines in one task: effects are executed as IO tasks whose
//! answers come back on one channel as the machines' events, in the order they arrive.
//! Three store requests are the exception: the recovery read, a submission's JobGraph
//! and a runner result's dirty entry are awaited inside the step that made them, as the
//! model takes each with its step (and the simulator answers them), so a log shows
//! every model step whole; the cleanup's other two requests are answered whenever etcd
//! answers.
//! It keeps the environment assumptions the model makes of a driver
//! (`steadfast-sim/src/leadership.rs` lists them): a JobMaster that is closed never decides
//! afterwards, and its service's termination is sent after a signal already on its way,
//! on the same ordered channel, so a terminal signal in flight reaches the process before
//! its service terminates.
//!
//! Every machine transition is a `tracing` event; [`run`] writes them as NDJSON (the
//! format of `steadfast-sim`'s production log) to an unbuffered file, so a SIGKILL loses
//! at most the event being written. The job elections log `election issue` lines as the
//! simulator's elections do.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use steadfast::leadership::{
    Dispatcher, DispatcherEffect, DispatcherEvent, Effect, Event, JobId, JobResultEntry, JobStatus,
    Runner, RunnerState, Session,
};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::etcd::{BackendError, Coordination, Won};

/// How often a JobManager that does not lead an election tries again, and how often it
/// looks whether every job is done. The failover time is the lease's TTL plus at most
/// this.
pub const POLL: Duration = Duration::from_millis(100);

/// One JobManager's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// etcd endpoints, `host:port`.
    pub endpoints: Vec<String>,
    /// The cluster: the key prefix every JobManager of it shares.
    pub cluster: String,
    /// This JobManager's name, unique in the cluster.
    pub name: String,
    /// The lease's TTL in seconds: how long a dead JobManager keeps its leaderships.
    pub ttl_seconds: i64,
    /// Jobs 1 to `jobs` are submitted by the first leader and run to their end.
    pub jobs: u32,
    /// Job `j`'s scheduler decides `j` x this many milliseconds after its JobMaster
    /// started.
    pub job_ms: u64,
    /// Where the production log goes, if anywhere.
    pub log: Option<PathBuf>,
}

/// The globally terminal status job `job`'s scheduler decides: a fixed one per job, so
/// that a test can check the recorded result is the decided one.
pub fn decided_status(job: JobId) -> JobStatus {
    [JobStatus::Finished, JobStatus::Failed, JobStatus::Canceled][(job.0 % 3) as usize]
}

/// Whether jobs 1 to `jobs` all have a clean JobResultStore entry.
async fn all_done(coord: &Coordination, jobs: u32) -> Result<bool, BackendError> {
    let results = coord.results().await?;
    let clean = results
        .iter()
        .filter(|(job, _, entry)| (1..=jobs).contains(&job.0) && *entry == JobResultEntry::Clean)
        .count();
    Ok(clean == jobs as usize)
}

/// How a JobManager ended, short of an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Every job has a clean JobResultStore entry, and this JobManager's runners ended.
    AllDone,
    /// The dispatcher reported a fatal error: the JobManager exits, as Flink's does, and
    /// another one recovers the job.
    Fatal(String),
}

/// What the IO tasks tell the driver.
enum Msg {
    DispatcherWon(Won),
    Dispatcher(DispatcherEvent),
    JobWon {
        job: JobId,
        generation: u32,
        session: Session,
    },
    Runner {
        job: JobId,
        generation: u32,
        event: Event,
    },
    AllDone,
    Failed(BackendError),
}

/// A runner and what the driver keeps beside it.
struct Slot {
    runner: Runner,
    /// Which runner of the job this is: answers meant for an earlier one are dropped.
    generation: u32,
    /// The session granted last, to resign it when the runner terminates.
    session: Option<Session>,
    /// Set when the runner terminated: its election stops campaigning.
    stopped: Rc<Cell<bool>>,
    /// Per JobMaster, set when it was closed: its scheduler decides nothing afterwards.
    closed: BTreeMap<Session, Rc<Cell<bool>>>,
}

/// An effect of one synchronous section, executed in the order the machines emitted it.
enum Work {
    Runner(JobId, Effect),
    Dispatcher(DispatcherEffect),
    ToDispatcher(DispatcherEvent),
}

struct JobManager {
    config: Config,
    coord: Coordination,
    tx: UnboundedSender<Msg>,
    dispatcher: Dispatcher,
    /// The dispatcher leader key's creation revision: fences every store write.
    fence: Option<i64>,
    runners: BTreeMap<JobId, Slot>,
    generations: u32,
    all_done: bool,
    fatal: Option<String>,
}

/// Runs one JobManager until every job is done, its lease is lost, etcd fails it, or
/// its dispatcher reports a fatal error.
pub fn run(config: Config) -> Result<Ended, BackendError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| BackendError::Local(format!("starting the runtime: {e}")))?;
    let _log = match &config.log {
        Some(path) => {
            let file = File::create(path).map_err(|e| {
                BackendError::Local(format!("creating the log {}: {e}", path.display()))
            })?;
            use tracing_subscriber::layer::SubscriberExt;
            use tracing_subscriber::Layer;
            // The machines' events and this driver's; not the gRPC stack's.
            let ours = tracing_subscriber::filter::Targets::new()
                .with_target("steadfast", tracing::Level::DEBUG)
                .with_target("steadfast_backends", tracing::Level::DEBUG);
            let layer = tracing_subscriber::fmt::layer()
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .with_writer(Unbuffered(Arc::new(Mutex::new(file))))
                .with_filter(ours);
            let subscriber = tracing_subscriber::registry().with(layer);
            Some(tracing::subscriber::set_default(subscriber))
        }
        None => None,
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, drive(config))
}

/// The log file, written through at every event: a killed process keeps its lines.
#[derive(Clone)]
struct Unbuffered(Arc<Mutex<File>>);

impl Write for &Unbuffered {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut file = self.0.lock().unwrap_or_else(|e| e.into_inner());
        file.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Unbuffered {
    type Writer = &'a Unbuffered;
    fn make_writer(&'a self) -> Self::Writer {
        self
    }
}

async fn drive(config: Config) -> Result<Ended, BackendError> {
    let coord = Coordination::connect(
        &config.endpoints,
        &config.cluster,
        &config.name,
        config.ttl_seconds,
    )
    .await?;
    tracing::info!(
        component = "run",
        event = "start",
        model = "leadership",
        backend = "etcd",
        name = config.name.as_str(),
        lease = coord.lease(),
        ttl_seconds = config.ttl_seconds,
        jobs = config.jobs,
        late_signal = false,
    );
    let (tx, mut rx) = unbounded_channel();
    let mut jm = JobManager {
        config,
        coord,
        tx,
        dispatcher: Dispatcher::new(),
        fence: None,
        runners: BTreeMap::new(),
        generations: 0,
        all_done: false,
        fatal: None,
    };
    jm.spawn_background();
    while let Some(msg) = rx.recv().await {
        jm.receive(msg).await?;
        if let Some(why) = jm.fatal.take() {
            return Ok(Ended::Fatal(why));
        }
        if jm.all_done && jm.dispatcher.live_count() == 0 {
            // Leaves at once rather than after the TTL; a failure here only delays the
            // others by the TTL.
            let _ = jm.coord.revoke().await;
            tracing::info!(component = "run", event = "end", outcome = "all_done");
            return Ok(Ended::AllDone);
        }
    }
    unreachable!("the driver holds a sender itself")
}

impl JobManager {
    /// The lease renewal, the dispatcher campaign and the watch for the end.
    fn spawn_background(&self) {
        let (coord, tx) = (self.coord.clone(), self.tx.clone());
        tokio::task::spawn_local(async move {
            let lost = coord.keep_alive().await;
            let _ = tx.send(Msg::Failed(lost));
        });
        let (coord, tx, jobs) = (self.coord.clone(), self.tx.clone(), self.config.jobs);
        tokio::task::spawn_local(async move {
            loop {
                // A JobManager that finds every job done does not campaign: when the last
                // leader leaves, the others end without leading.
                let attempt = match all_done(&coord, jobs).await {
                    Ok(true) => return,
                    Ok(false) => coord.try_lead_dispatcher().await,
                    Err(e) => Err(e),
                };
                match attempt {
                    Ok(Some(won)) => {
                        let _ = tx.send(Msg::DispatcherWon(won));
                        return;
                    }
                    Ok(None) => tokio::time::sleep(POLL).await,
                    Err(e) => {
                        let _ = tx.send(Msg::Failed(e));
                        return;
                    }
                }
            }
        });
        let (coord, tx) = (self.coord.clone(), self.tx.clone());
        tokio::task::spawn_local(async move {
            loop {
                tokio::time::sleep(POLL).await;
                match all_done(&coord, jobs).await {
                    Ok(false) => {}
                    Ok(true) => {
                        let _ = tx.send(Msg::AllDone);
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(Msg::Failed(e));
                        return;
                    }
                }
            }
        });
    }

    async fn receive(&mut self, msg: Msg) -> Result<(), BackendError> {
        let mut work = VecDeque::new();
        let mut inline = VecDeque::new();
        match msg {
            Msg::Failed(e) => return Err(e),
            Msg::AllDone => self.all_done = true,
            Msg::DispatcherWon(won) => {
                self.fence = Some(won.revision);
                // A driver note (`run` lines are not machine events to the validator).
                tracing::info!(
                    component = "run",
                    event = "dispatcher_leader",
                    term = won.number,
                    revision = won.revision,
                );
                work.push_back(Work::ToDispatcher(DispatcherEvent::LeadershipGained));
            }
            Msg::Dispatcher(event) => work.push_back(Work::ToDispatcher(event)),
            Msg::JobWon {
                job,
                generation,
                session,
            } => {
                let Some(slot) = self.slot(job, generation) else {
                    // The runner ended while its election campaigned: give the win back.
                    self.resign(job, session);
                    return Ok(());
                };
                slot.session = Some(session);
                tracing::debug!(
                    component = "election",
                    event = "issue",
                    job = job.0,
                    session = session.0,
                    outcome = "issued"
                );
                self.runner_event(job, Event::LeadershipGranted { session }, &mut work);
            }
            Msg::Runner {
                job,
                generation,
                event,
            } => {
                if self.slot(job, generation).is_some() {
                    self.runner_event(job, event, &mut work);
                }
            }
        }
        // The section runs to its end: effects, the events they hand on at once, then
        // the store requests answered within it, one at a time, until nothing is left.
        loop {
            while let Some(item) = work.pop_front() {
                match item {
                    Work::ToDispatcher(event) => {
                        // A refused event leaves the dispatcher unchanged; the log has
                        // the line.
                        if let Ok(effects) = self.dispatcher.handle(event) {
                            work.extend(effects.into_iter().map(Work::Dispatcher));
                        }
                    }
                    Work::Dispatcher(effect) => {
                        self.dispatcher_effect(effect, &mut work, &mut inline)
                    }
                    Work::Runner(job, effect) => self.runner_effect(job, effect, &mut work),
                }
            }
            let Some(request) = inline.pop_front() else {
                return Ok(());
            };
            self.answer_inline(request, &mut work).await?;
        }
    }

    /// Executes a store request that the model takes as part of the step that made it
    /// (the recovery read, a submission's JobGraph, the dirty entry of a runner result),
    /// while every other message waits: the log then shows the step whole, as the
    /// simulator's does.
    async fn answer_inline(
        &mut self,
        request: DispatcherEffect,
        work: &mut VecDeque<Work>,
    ) -> Result<(), BackendError> {
        let fence = self.fence.unwrap_or(-1);
        let answer = match request {
            DispatcherEffect::RecoverJobs { epoch } => {
                let jobs = self.coord.recover().await?;
                // The configured jobs the stores do not know are submitted after the
                // recovery: the first leader submits them all, a later one those its
                // predecessor did not get to.
                let missing: Vec<JobId> = (1..=self.config.jobs)
                    .map(JobId)
                    .filter(|job| !jobs.iter().any(|r| r.job == *job))
                    .collect();
                work.push_back(Work::ToDispatcher(DispatcherEvent::JobsRecovered {
                    epoch,
                    jobs,
                }));
                for job in missing {
                    work.push_back(Work::ToDispatcher(DispatcherEvent::JobSubmitted { job }));
                }
                return Ok(());
            }
            DispatcherEffect::PutJobGraph { job } => {
                self.coord.put_job_graph(fence, job).await?;
                DispatcherEvent::JobGraphStored { job }
            }
            DispatcherEffect::WriteDirtyEntry { job, status } => {
                self.coord.write_dirty_entry(fence, job, status).await?;
                DispatcherEvent::DirtyEntryWritten { job }
            }
            _ => unreachable!("only the three requests above are answered inline"),
        };
        work.push_back(Work::ToDispatcher(answer));
        Ok(())
    }

    fn slot(&mut self, job: JobId, generation: u32) -> Option<&mut Slot> {
        self.runners
            .get_mut(&job)
            .filter(|slot| slot.generation == generation && !slot.runner.is_terminated())
    }

    fn runner_event(&mut self, job: JobId, event: Event, work: &mut VecDeque<Work>) {
        let Some(slot) = self.runners.get_mut(&job) else {
            return;
        };
        let span = tracing::debug_span!("job", job = job.0);
        // A refused event leaves the runner unchanged; the log has the line.
        if let Ok(effects) = span.in_scope(|| slot.runner.handle(event)) {
            work.extend(effects.into_iter().map(|e| Work::Runner(job, e)));
        }
    }

    /// Spawns `io`, whose answer comes back as a dispatcher event; a failure ends the
    /// JobManager.
    fn store<F>(&self, io: F)
    where
        F: std::future::Future<Output = Result<DispatcherEvent, BackendError>> + 'static,
    {
        let tx = self.tx.clone();
        tokio::task::spawn_local(async move {
            let _ = tx.send(match io.await {
                Ok(answer) => Msg::Dispatcher(answer),
                Err(e) => Msg::Failed(e),
            });
        });
    }

    fn dispatcher_effect(
        &mut self,
        effect: DispatcherEffect,
        work: &mut VecDeque<Work>,
        inline: &mut VecDeque<DispatcherEffect>,
    ) {
        let coord = self.coord.clone();
        // Store requests come only from a leader, which has a fence.
        let fence = self.fence.unwrap_or(-1);
        match effect {
            DispatcherEffect::StartRunner { job } => self.start_runner(job),
            DispatcherEffect::CloseRunner { job } => {
                let stopped = self
                    .runners
                    .get(&job)
                    .is_none_or(|s| s.runner.state() == RunnerState::Stopped);
                if !stopped {
                    self.runner_event(job, Event::CloseRequested, work);
                }
            }
            DispatcherEffect::RecoverJobs { .. }
            | DispatcherEffect::PutJobGraph { .. }
            | DispatcherEffect::WriteDirtyEntry { .. } => inline.push_back(effect),
            // The cleanup's later requests are answered whenever etcd answers.
            DispatcherEffect::RemoveJobGraph { job } => self.store(async move {
                coord.remove_job_graph(fence, job).await?;
                Ok(DispatcherEvent::JobGraphRemoved { job })
            }),
            DispatcherEffect::MarkEntryClean { job } => self.store(async move {
                let status = coord.mark_entry_clean(fence, job).await?;
                Ok(DispatcherEvent::EntryMarkedClean { job, status })
            }),
            DispatcherEffect::GlobalCleanup { .. } | DispatcherEffect::LocalCleanup { .. } => {}
            DispatcherEffect::FatalError { job, result } => {
                self.fatal = Some(format!(
                    "the dispatcher's runner for {job} ended {result:?}"
                ));
            }
        }
    }

    fn start_runner(&mut self, job: JobId) {
        self.generations += 1;
        let generation = self.generations;
        let stopped = Rc::new(Cell::new(false));
        self.runners.insert(
            job,
            Slot {
                runner: Runner::new(job),
                generation,
                session: None,
                stopped: stopped.clone(),
                closed: BTreeMap::new(),
            },
        );
        let (coord, tx) = (self.coord.clone(), self.tx.clone());
        tokio::task::spawn_local(async move {
            while !stopped.get() {
                match coord.try_lead_job(job).await {
                    Ok(Some(won)) => {
                        let _ = tx.send(Msg::JobWon {
                            job,
                            generation,
                            session: Session(won.number),
                        });
                        return;
                    }
                    Ok(None) => tokio::time::sleep(POLL).await,
                    Err(e) => {
                        let _ = tx.send(Msg::Failed(e));
                        return;
                    }
                }
            }
        });
    }

    fn resign(&self, job: JobId, session: Session) {
        let (coord, tx) = (self.coord.clone(), self.tx.clone());
        tokio::task::spawn_local(async move {
            if let Err(e) = coord.resign_job(job, session).await {
                let _ = tx.send(Msg::Failed(e));
            }
        });
    }

    fn runner_effect(&mut self, job: JobId, effect: Effect, work: &mut VecDeque<Work>) {
        let Some(slot) = self.runners.get_mut(&job) else {
            return;
        };
        let generation = slot.generation;
        let (coord, tx) = (self.coord.clone(), self.tx.clone());
        let answer = move |event| Msg::Runner {
            job,
            generation,
            event,
        };
        match effect {
            Effect::StartProcess { session } => {
                let closed = Rc::new(Cell::new(false));
                slot.closed.insert(session, closed.clone());
                let after = Duration::from_millis(self.config.job_ms * u64::from(job.0));
                tokio::task::spawn_local(async move {
                    if let Err(e) = coord.audit_start(job, session).await {
                        let _ = tx.send(Msg::Failed(e));
                        return;
                    }
                    tokio::time::sleep(after).await;
                    if !closed.get() {
                        let status = decided_status(job);
                        let _ = tx.send(answer(Event::TerminalSignalDelivered { session, status }));
                    }
                });
            }
            Effect::CloseProcess { session } => {
                if let Some(closed) = slot.closed.get(&session) {
                    closed.set(true);
                }
                // Sent after any signal already on the channel: it arrives first.
                let _ = tx.send(answer(Event::ProcessServiceTerminated { session }));
            }
            Effect::ForwardScheduled { session } => {
                let _ = tx.send(answer(Event::ForwardCallback { session }));
            }
            Effect::QueryJobResultStore => {
                tokio::task::spawn_local(async move {
                    let _ = tx.send(match coord.has_entry(job).await {
                        Ok(has_entry) => answer(Event::JobResultStoreAnswered { has_entry }),
                        Err(e) => Msg::Failed(e),
                    });
                });
            }
            Effect::ConfirmLeadership { session } => {
                tokio::task::spawn_local(async move {
                    let _ = tx.send(match coord.holds_job(job, session).await {
                        Ok(held) => answer(Event::LeadershipConfirmed { session, held }),
                        Err(e) => Msg::Failed(e),
                    });
                });
            }
            Effect::CompleteResult { value } => {
                work.push_back(Work::ToDispatcher(DispatcherEvent::RunnerCompleted {
                    job,
                    result: value,
                }))
            }
            Effect::RunnerTerminated => {
                slot.stopped.set(true);
                if let Some(session) = slot.session {
                    self.resign(job, session);
                }
                work.push_back(Work::ToDispatcher(DispatcherEvent::RunnerTerminated {
                    job,
                }));
            }
        }
    }
}
