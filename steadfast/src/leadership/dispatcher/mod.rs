//! The dispatcher: consumes runner results, cleans up the HA stores, and recovers jobs
//! when it gains leadership.
//!
//! Models the part of Flink's `Dispatcher` that makes FLINK-39704 (apache/flink PR
//! 28201) harmful: a globally terminal runner result leads to global cleanup (dirty
//! JobResultStore entry, JobGraph removed, entry marked clean), whereas SUSPENDED leads
//! to local cleanup only, leaving the JobGraph to be recovered, and run again, by the
//! next dispatcher leader. Recovery starts a runner for every JobGraph without a
//! JobResultStore entry, and finishes the cleanup of every job whose entry is dirty.
//!
//! Sans-IO like the runner: every store operation is an effect ([`DispatcherEffect::
//! RecoverJobs`], [`DispatcherEffect::PutJobGraph`], [`DispatcherEffect::WriteDirtyEntry`],
//! [`DispatcherEffect::RemoveJobGraph`], [`DispatcherEffect::MarkEntryClean`]) that a
//! driver executes against the JobGraph store and the JobResultStore, and whose answer
//! comes back as an event. Each job has at most one store request outstanding, so an
//! answer names its job and nothing else; answers of different jobs may come in any
//! order. The dispatcher holds its epoch, the runners it started, and what it knows the
//! stores hold for each job.

mod recovery;
mod results;
#[cfg(test)]
mod tests;

use super::error::LeadershipError;
use super::types::{JobId, JobResultEntry, JobStatus, RunnerResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What the stores hold for one job, as read at recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveredJob {
    /// The job.
    pub job: JobId,
    /// The JobGraph store holds its JobGraph.
    pub job_graph: bool,
    /// Its JobResultStore entry.
    pub entry: JobResultEntry,
}

/// Input to the [`Dispatcher`]: what happened, or a store's answer to one of its effects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DispatcherEvent {
    /// The dispatcher became leader (a new epoch): it asks the stores for its jobs.
    LeadershipGained,
    /// Answer to [`DispatcherEffect::RecoverJobs`]: every job the JobGraph store or the
    /// JobResultStore holds. An answer for an epoch that is over is discarded.
    JobsRecovered {
        /// The epoch that asked.
        epoch: u32,
        /// The jobs, in ascending order.
        jobs: Vec<RecoveredJob>,
    },
    /// The dispatcher lost leadership: close its runners.
    LeadershipLost,
    /// A client submitted `job`.
    JobSubmitted {
        /// The submitted job.
        job: JobId,
    },
    /// Answer to [`DispatcherEffect::PutJobGraph`]: the JobGraph is persisted.
    JobGraphStored {
        /// The job.
        job: JobId,
    },
    /// The runner of `job` completed its result.
    RunnerCompleted {
        /// The job.
        job: JobId,
        /// The runner result.
        result: RunnerResult,
    },
    /// The runner of `job` terminated.
    RunnerTerminated {
        /// The job.
        job: JobId,
    },
    /// Answer to [`DispatcherEffect::WriteDirtyEntry`].
    DirtyEntryWritten {
        /// The job.
        job: JobId,
    },
    /// Answer to [`DispatcherEffect::RemoveJobGraph`].
    JobGraphRemoved {
        /// The job.
        job: JobId,
    },
    /// Answer to [`DispatcherEffect::MarkEntryClean`], with the status the entry records.
    EntryMarkedClean {
        /// The job.
        job: JobId,
        /// The recorded status.
        status: JobStatus,
    },
}

impl DispatcherEvent {
    /// The event's name in the structured log.
    pub fn name(&self) -> &'static str {
        match self {
            DispatcherEvent::LeadershipGained => "leadership_gained",
            DispatcherEvent::JobsRecovered { .. } => "jobs_recovered",
            DispatcherEvent::LeadershipLost => "leadership_lost",
            DispatcherEvent::JobSubmitted { .. } => "job_submitted",
            DispatcherEvent::JobGraphStored { .. } => "job_graph_stored",
            DispatcherEvent::RunnerCompleted { .. } => "runner_completed",
            DispatcherEvent::RunnerTerminated { .. } => "runner_terminated",
            DispatcherEvent::DirtyEntryWritten { .. } => "dirty_entry_written",
            DispatcherEvent::JobGraphRemoved { .. } => "job_graph_removed",
            DispatcherEvent::EntryMarkedClean { .. } => "entry_marked_clean",
        }
    }

    /// The job the event names, if it names one.
    pub fn job(&self) -> Option<JobId> {
        match *self {
            DispatcherEvent::LeadershipGained
            | DispatcherEvent::JobsRecovered { .. }
            | DispatcherEvent::LeadershipLost => None,
            DispatcherEvent::JobSubmitted { job }
            | DispatcherEvent::JobGraphStored { job }
            | DispatcherEvent::RunnerCompleted { job, .. }
            | DispatcherEvent::RunnerTerminated { job }
            | DispatcherEvent::DirtyEntryWritten { job }
            | DispatcherEvent::JobGraphRemoved { job }
            | DispatcherEvent::EntryMarkedClean { job, .. } => Some(job),
        }
    }
}

/// Output of the [`Dispatcher`]. The five store requests are answered by the events
/// their docs name; the others are for the driver (runners) or reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DispatcherEffect {
    /// Create a runner for `job`.
    StartRunner {
        /// The job.
        job: JobId,
    },
    /// Close the runner of `job`.
    CloseRunner {
        /// The job.
        job: JobId,
    },
    /// Store request: read both stores; answered by [`DispatcherEvent::JobsRecovered`].
    RecoverJobs {
        /// The epoch asking, to be named in the answer.
        epoch: u32,
    },
    /// Store request: persist the JobGraph; answered by
    /// [`DispatcherEvent::JobGraphStored`].
    PutJobGraph {
        /// The job.
        job: JobId,
    },
    /// Store request: write a dirty JobResultStore entry; answered by
    /// [`DispatcherEvent::DirtyEntryWritten`].
    WriteDirtyEntry {
        /// The job.
        job: JobId,
        /// The status to record.
        status: JobStatus,
    },
    /// Store request: remove the JobGraph; answered by
    /// [`DispatcherEvent::JobGraphRemoved`].
    RemoveJobGraph {
        /// The job.
        job: JobId,
    },
    /// Store request: mark the entry clean; answered by
    /// [`DispatcherEvent::EntryMarkedClean`].
    MarkEntryClean {
        /// The job.
        job: JobId,
    },
    /// Global cleanup finished: entry written and clean, JobGraph removed.
    GlobalCleanup {
        /// The job.
        job: JobId,
        /// The recorded status.
        status: JobStatus,
    },
    /// Local cleanup only: the JobGraph stays for recovery.
    LocalCleanup {
        /// The job.
        job: JobId,
    },
    /// The runner reported an exceptional result; the JobGraph stays.
    FatalError {
        /// The job.
        job: JobId,
        /// The exceptional result.
        result: RunnerResult,
    },
}

impl DispatcherEffect {
    /// The store request's name in the structured log (where the stores log a request
    /// they refuse); `None` for the effects that are not store requests.
    pub fn request_name(&self) -> Option<&'static str> {
        match self {
            DispatcherEffect::RecoverJobs { .. } => Some("recover_jobs"),
            DispatcherEffect::PutJobGraph { .. } => Some("put_job_graph"),
            DispatcherEffect::WriteDirtyEntry { .. } => Some("write_dirty_entry"),
            DispatcherEffect::RemoveJobGraph { .. } => Some("remove_job_graph"),
            DispatcherEffect::MarkEntryClean { .. } => Some("mark_entry_clean"),
            DispatcherEffect::StartRunner { .. }
            | DispatcherEffect::CloseRunner { .. }
            | DispatcherEffect::GlobalCleanup { .. }
            | DispatcherEffect::LocalCleanup { .. }
            | DispatcherEffect::FatalError { .. } => None,
        }
    }

    /// Whether the effect is a store request the driver answers.
    pub fn is_store_request(&self) -> bool {
        self.request_name().is_some()
    }
}

/// A runner the dispatcher started, until the next epoch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StartedRunner {
    /// Started by a recovery rather than a submission: its initialisation failure is a
    /// fatal error, not the job's end.
    recovered: bool,
    result_received: bool,
    closing: bool,
    terminated: bool,
}

impl StartedRunner {
    /// The dispatcher is done with it: result consumed and runner terminated.
    fn done(self) -> bool {
        self.result_received && self.terminated
    }
}

/// What the dispatcher knows the stores hold for a job, with the store request it has
/// outstanding for it (at most one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JobRecord {
    /// [`DispatcherEffect::PutJobGraph`] is outstanding.
    Storing,
    /// The JobGraph is stored; no entry.
    Stored,
    /// [`DispatcherEffect::WriteDirtyEntry`] is outstanding.
    WritingEntry,
    /// The entry is dirty; [`DispatcherEffect::RemoveJobGraph`] is outstanding.
    RemovingJobGraph,
    /// The JobGraph is gone; [`DispatcherEffect::MarkEntryClean`] is outstanding.
    MarkingClean,
    /// The entry is clean: the job is done for good.
    Clean,
}

impl JobRecord {
    /// Whether a store request for the job is outstanding.
    fn in_flight(self) -> bool {
        !matches!(self, JobRecord::Stored | JobRecord::Clean)
    }
}

/// The dispatcher of one cluster.
///
/// ```
/// use steadfast::leadership::{
///     Dispatcher, DispatcherEffect, DispatcherEvent, JobId, JobStatus, RunnerResult,
/// };
/// let mut d = Dispatcher::new();
/// let job = JobId(1);
/// let fx = d.handle(DispatcherEvent::LeadershipGained).unwrap();
/// assert_eq!(fx, vec![DispatcherEffect::RecoverJobs { epoch: 1 }]);
/// d.handle(DispatcherEvent::JobsRecovered { epoch: 1, jobs: vec![] }).unwrap();
/// let fx = d.handle(DispatcherEvent::JobSubmitted { job }).unwrap();
/// assert_eq!(fx, vec![DispatcherEffect::PutJobGraph { job }]);
/// let fx = d.handle(DispatcherEvent::JobGraphStored { job }).unwrap();
/// assert_eq!(fx, vec![DispatcherEffect::StartRunner { job }]);
/// let status = JobStatus::Failed;
/// let fx = d.handle(DispatcherEvent::RunnerCompleted { job, result: RunnerResult::Terminal(status) }).unwrap();
/// assert_eq!(fx, vec![
///     DispatcherEffect::WriteDirtyEntry { job, status },
///     DispatcherEffect::CloseRunner { job },
/// ]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dispatcher {
    leader: bool,
    epoch: u32,
    /// The epoch's [`DispatcherEffect::RecoverJobs`] is outstanding.
    recovering: bool,
    runners_started: u32,
    /// Shared until changed, so that copying a dispatcher (a driver forked to explore a
    /// branch) copies no tree.
    runners: Arc<BTreeMap<JobId, StartedRunner>>,
    /// Shared until changed, as `runners`.
    jobs: Arc<BTreeMap<JobId, JobRecord>>,
}

/// What the dispatcher did with an event, for the structured log.
enum Handled {
    Applied(Vec<DispatcherEffect>),
    /// A recovery answer of an epoch that is over.
    Discarded,
}

impl Dispatcher {
    /// A dispatcher that is not leader yet (epoch 0).
    pub fn new() -> Self {
        Self::default()
    }

    /// The dispatcher a JobManager runs after the one running `self` died (killed, its
    /// host lost, or exited on a fatal error): not leader, no runners, no jobs, no request outstanding; nothing of
    /// the dead one's work survives but what it wrote to the stores. The epoch and
    /// runner counters carry on, as the HA services' leader epochs do in Flink, so the
    /// next leadership gain starts the next epoch.
    pub fn after_crash(&self) -> Dispatcher {
        self.successor()
    }

    /// The dispatcher of another JobManager that becomes the next leader while the one
    /// running `self` is still stopping (overlapping leaders on different hosts): it
    /// shares nothing with `self` but the stores and the epoch and runner counters.
    pub fn successor(&self) -> Dispatcher {
        Dispatcher {
            epoch: self.epoch,
            runners_started: self.runners_started,
            ..Dispatcher::default()
        }
    }

    /// Whether the dispatcher is leader.
    pub fn is_leader(&self) -> bool {
        self.leader
    }

    /// Whether the epoch's recovery read is outstanding.
    pub fn is_recovering(&self) -> bool {
        self.recovering
    }

    /// How many times the dispatcher gained leadership.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// How many runners it started over all epochs.
    pub fn runners_started(&self) -> u32 {
        self.runners_started
    }

    /// Jobs whose runner has not terminated.
    pub fn live_runners(&self) -> Vec<JobId> {
        self.live().collect()
    }

    /// Whether `job` has a runner that has not terminated: membership in
    /// [`Dispatcher::live_runners`], without collecting them.
    pub fn is_live(&self, job: JobId) -> bool {
        self.runners.get(&job).is_some_and(|r| !r.terminated)
    }

    /// How many jobs have a runner that has not terminated: the length of
    /// [`Dispatcher::live_runners`], without collecting them.
    pub fn live_count(&self) -> usize {
        self.live().count()
    }

    /// Whether the dispatcher consumed the result of the runner it started last for
    /// `job`; `None` when it started none since it last gained leadership.
    pub fn result_received(&self, job: JobId) -> Option<bool> {
        self.runners.get(&job).map(|r| r.result_received)
    }

    fn live(&self) -> impl Iterator<Item = JobId> + '_ {
        self.runners
            .iter()
            .filter(|(_, r)| !r.terminated)
            .map(|(job, _)| *job)
    }

    /// Apply one event. On error the dispatcher is unchanged.
    pub fn handle(
        &mut self,
        event: DispatcherEvent,
    ) -> Result<Vec<DispatcherEffect>, LeadershipError> {
        let (name, job) = (event.name(), event.job().map(|j| j.0));
        let outcome = self.apply(event);
        match &outcome {
            Ok(Handled::Applied(effects)) => tracing::debug!(
                component = "dispatcher",
                event = name,
                job,
                epoch = self.epoch,
                outcome = "applied",
                effects = ?effects,
            ),
            Ok(Handled::Discarded) => tracing::debug!(
                component = "dispatcher",
                event = name,
                job,
                epoch = self.epoch,
                outcome = "discarded",
            ),
            Err(error) => tracing::debug!(
                component = "dispatcher",
                event = name,
                job,
                epoch = self.epoch,
                outcome = "rejected",
                error = %error,
            ),
        }
        outcome.map(|handled| match handled {
            Handled::Applied(effects) => effects,
            Handled::Discarded => Vec::new(),
        })
    }

    /// One function per event; each refuses before it changes anything.
    fn apply(&mut self, event: DispatcherEvent) -> Result<Handled, LeadershipError> {
        // An answer refused for want of its request is named by the event's own name.
        let answer = event.name();
        let effects = match event {
            DispatcherEvent::LeadershipGained => self.gain_leadership()?,
            DispatcherEvent::JobsRecovered { epoch, jobs } => {
                return self.jobs_recovered(epoch, &jobs, answer)
            }
            DispatcherEvent::LeadershipLost => self.lose_leadership()?,
            DispatcherEvent::JobSubmitted { job } => self.submit(job)?,
            DispatcherEvent::JobGraphStored { job } => self.job_graph_stored(job, answer)?,
            DispatcherEvent::RunnerCompleted { job, result } => {
                self.runner_completed(job, result)?
            }
            DispatcherEvent::RunnerTerminated { job } => self.runner_terminated(job)?,
            DispatcherEvent::DirtyEntryWritten { job } => {
                self.advance(
                    job,
                    JobRecord::WritingEntry,
                    JobRecord::RemovingJobGraph,
                    answer,
                )?;
                vec![DispatcherEffect::RemoveJobGraph { job }]
            }
            DispatcherEvent::JobGraphRemoved { job } => {
                self.advance(
                    job,
                    JobRecord::RemovingJobGraph,
                    JobRecord::MarkingClean,
                    answer,
                )?;
                vec![DispatcherEffect::MarkEntryClean { job }]
            }
            DispatcherEvent::EntryMarkedClean { job, status } => {
                self.advance(job, JobRecord::MarkingClean, JobRecord::Clean, answer)?;
                vec![DispatcherEffect::GlobalCleanup { job, status }]
            }
        };
        Ok(Handled::Applied(effects))
    }

    /// A new epoch: asks the stores for its jobs. The previous epoch's runners must be
    /// done.
    fn gain_leadership(&mut self) -> Result<Vec<DispatcherEffect>, LeadershipError> {
        if self.leader {
            return Err(LeadershipError::DispatcherAlreadyLeader);
        }
        // Environment assumption: the previous leader's runners terminated first,
        // and their results were consumed.
        if let Some((job, _)) = self.runners.iter().find(|(_, r)| !r.done()) {
            return Err(LeadershipError::RunnerStillLive { job: *job });
        }
        self.leader = true;
        self.epoch += 1;
        self.recovering = true;
        if !self.runners.is_empty() {
            self.runners = Arc::default();
        }
        Ok(vec![DispatcherEffect::RecoverJobs { epoch: self.epoch }])
    }

    /// Leadership lost: closes every runner not closing or closed already.
    fn lose_leadership(&mut self) -> Result<Vec<DispatcherEffect>, LeadershipError> {
        if !self.leader {
            return Err(LeadershipError::DispatcherNotLeader);
        }
        self.leader = false;
        let mut effects = Vec::new();
        for (job, runner) in Arc::make_mut(&mut self.runners).iter_mut() {
            if !runner.closing && !runner.terminated {
                runner.closing = true;
                effects.push(DispatcherEffect::CloseRunner { job: *job });
            }
        }
        Ok(effects)
    }

    /// A client submitted `job`: its JobGraph is persisted first.
    fn submit(&mut self, job: JobId) -> Result<Vec<DispatcherEffect>, LeadershipError> {
        if !self.leader {
            return Err(LeadershipError::DispatcherNotLeader);
        }
        if self.recovering {
            return Err(LeadershipError::RecoveryInProgress);
        }
        if self.jobs.contains_key(&job) {
            return Err(LeadershipError::DuplicateJob { job });
        }
        Arc::make_mut(&mut self.jobs).insert(job, JobRecord::Storing);
        Ok(vec![DispatcherEffect::PutJobGraph { job }])
    }

    /// `job`'s JobGraph is persisted: its runner starts.
    fn job_graph_stored(
        &mut self,
        job: JobId,
        answer: &'static str,
    ) -> Result<Vec<DispatcherEffect>, LeadershipError> {
        self.advance(job, JobRecord::Storing, JobRecord::Stored, answer)?;
        let mut effects = Vec::new();
        // A dispatcher that lost leadership meanwhile leaves the job to the next
        // leader's recovery.
        if self.leader {
            self.start_runner(job, false, &mut effects);
        }
        Ok(effects)
    }
}
