//! The dispatcher: consumes runner results, cleans up the HA stores, and recovers jobs
//! when it gains leadership.
//!
//! Models the part of Flink's `Dispatcher` that makes FLINK-39704 (apache/flink PR
//! 28201) harmful: a globally terminal runner result leads to global cleanup (dirty
//! JobResultStore entry, JobGraph removed, entry marked clean), whereas SUSPENDED leads
//! to local cleanup only, leaving the JobGraph to be recovered, and run again, by the
//! next dispatcher leader. Recovery starts a runner for every JobGraph without a
//! JobResultStore entry.
//!
//! The stores are passed into [`Dispatcher::handle`]; the dispatcher itself holds only
//! its epoch and the runners it started.

use super::error::LeadershipError;
use super::store::{JobGraphStore, JobResultStore};
use super::types::{JobId, JobResultEntry, JobStatus, RunnerResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Input to the [`Dispatcher`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DispatcherEvent {
    /// The dispatcher became leader (a new epoch): recover jobs.
    LeadershipGained,
    /// The dispatcher lost leadership: close its runners.
    LeadershipLost,
    /// A client submitted `job`.
    JobSubmitted {
        /// The submitted job.
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
}

/// Output of the [`Dispatcher`].
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LiveRunner {
    result_received: bool,
    closing: bool,
}

/// The dispatcher of one cluster.
///
/// ```
/// use steadfast::leadership::{
///     Dispatcher, DispatcherEffect, DispatcherEvent, InMemoryJobGraphStore,
///     InMemoryJobResultStore, JobGraphStore, JobId, JobStatus, RunnerResult,
/// };
/// let (mut graphs, mut results) = (InMemoryJobGraphStore::default(), InMemoryJobResultStore::default());
/// let mut d = Dispatcher::new();
/// let job = JobId(1);
/// d.handle(DispatcherEvent::LeadershipGained, &mut graphs, &mut results).unwrap();
/// assert_eq!(
///     d.handle(DispatcherEvent::JobSubmitted { job }, &mut graphs, &mut results).unwrap(),
///     vec![DispatcherEffect::StartRunner { job }]
/// );
/// let done = RunnerResult::Terminal(JobStatus::Failed);
/// d.handle(DispatcherEvent::RunnerCompleted { job, result: done }, &mut graphs, &mut results).unwrap();
/// assert!(!graphs.contains(job));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dispatcher {
    leader: bool,
    epoch: u32,
    runners_started: u32,
    /// Shared until changed, so that copying a dispatcher (a driver forked to explore a
    /// branch) copies no tree.
    live: Arc<BTreeMap<JobId, LiveRunner>>,
}

impl Dispatcher {
    /// A dispatcher that is not leader yet (epoch 0).
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the dispatcher is leader.
    pub fn is_leader(&self) -> bool {
        self.leader
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
        self.live.keys().copied().collect()
    }

    /// Whether `job` has a runner that has not terminated: membership in
    /// [`Dispatcher::live_runners`], without collecting them.
    pub fn is_live(&self, job: JobId) -> bool {
        self.live.contains_key(&job)
    }

    /// How many jobs have a runner that has not terminated: the length of
    /// [`Dispatcher::live_runners`], without collecting them.
    pub fn live_count(&self) -> usize {
        self.live.len()
    }

    /// Apply one event against the stores. On error neither the dispatcher nor the
    /// stores changed.
    pub fn handle(
        &mut self,
        event: DispatcherEvent,
        graphs: &mut dyn JobGraphStore,
        results: &mut dyn JobResultStore,
    ) -> Result<Vec<DispatcherEffect>, LeadershipError> {
        let outcome = self.apply(event, graphs, results);
        let (name, job) = describe(event);
        match &outcome {
            Ok(effects) => tracing::debug!(
                component = "dispatcher",
                event = name,
                job,
                epoch = self.epoch,
                outcome = "applied",
                effects = ?effects,
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
        outcome
    }

    fn apply(
        &mut self,
        event: DispatcherEvent,
        graphs: &mut dyn JobGraphStore,
        results: &mut dyn JobResultStore,
    ) -> Result<Vec<DispatcherEffect>, LeadershipError> {
        let mut effects = Vec::new();
        match event {
            DispatcherEvent::LeadershipGained => {
                if self.leader {
                    return Err(LeadershipError::DispatcherAlreadyLeader);
                }
                // Environment assumption: the previous leader's runners terminated first.
                if let Some(job) = self.live.keys().next() {
                    return Err(LeadershipError::RunnerStillLive { job: *job });
                }
                self.leader = true;
                self.epoch += 1;
                for job in graphs.jobs() {
                    match results.entry(job) {
                        JobResultEntry::None => self.start_runner(job, &mut effects),
                        JobResultEntry::Dirty | JobResultEntry::Clean => {
                            // A result was written but cleanup did not finish: finish it.
                            global_cleanup(job, graphs, results, &mut effects)?;
                        }
                    }
                }
            }
            DispatcherEvent::LeadershipLost => {
                if !self.leader {
                    return Err(LeadershipError::DispatcherNotLeader);
                }
                self.leader = false;
                for (job, runner) in Arc::make_mut(&mut self.live).iter_mut() {
                    if !runner.closing {
                        runner.closing = true;
                        effects.push(DispatcherEffect::CloseRunner { job: *job });
                    }
                }
            }
            DispatcherEvent::JobSubmitted { job } => {
                if !self.leader {
                    return Err(LeadershipError::DispatcherNotLeader);
                }
                if graphs.contains(job) || results.entry(job) != JobResultEntry::None {
                    return Err(LeadershipError::DuplicateJob { job });
                }
                graphs.put(job)?;
                self.start_runner(job, &mut effects);
            }
            DispatcherEvent::RunnerCompleted { job, result } => {
                let runner = self
                    .live
                    .get(&job)
                    .ok_or(LeadershipError::NoLiveRunner { job })?;
                if runner.result_received {
                    return Err(LeadershipError::DuplicateRunnerResult { job });
                }
                match result {
                    RunnerResult::Terminal(status) => {
                        if results.entry(job) != JobResultEntry::None {
                            return Err(LeadershipError::EntryExists { job });
                        }
                        results.create_dirty(job, status)?;
                        global_cleanup(job, graphs, results, &mut effects)?;
                    }
                    RunnerResult::JobAlreadyDone => {
                        if results.entry(job) == JobResultEntry::None {
                            return Err(LeadershipError::NoEntry { job });
                        }
                        global_cleanup(job, graphs, results, &mut effects)?;
                    }
                    RunnerResult::Suspended => effects.push(DispatcherEffect::LocalCleanup { job }),
                    RunnerResult::NotFinished | RunnerResult::InitializationFailed => {
                        effects.push(DispatcherEffect::FatalError { job, result })
                    }
                }
                // The job is done with this runner whatever the result: the dispatcher
                // removes it and closes it (Flink's `removeJob` closes the runner during
                // cleanup), unless a leadership loss is closing it already.
                if let Some(runner) = Arc::make_mut(&mut self.live).get_mut(&job) {
                    runner.result_received = true;
                    if !runner.closing {
                        runner.closing = true;
                        effects.push(DispatcherEffect::CloseRunner { job });
                    }
                }
            }
            DispatcherEvent::RunnerTerminated { job } => {
                if !self.live.contains_key(&job) {
                    return Err(LeadershipError::NoLiveRunner { job });
                }
                Arc::make_mut(&mut self.live).remove(&job);
            }
        }
        Ok(effects)
    }

    fn start_runner(&mut self, job: JobId, effects: &mut Vec<DispatcherEffect>) {
        Arc::make_mut(&mut self.live).insert(
            job,
            LiveRunner {
                result_received: false,
                closing: false,
            },
        );
        self.runners_started += 1;
        effects.push(DispatcherEffect::StartRunner { job });
    }
}

/// Removes the JobGraph and marks the (existing) entry clean, in that order.
fn global_cleanup(
    job: JobId,
    graphs: &mut dyn JobGraphStore,
    results: &mut dyn JobResultStore,
    effects: &mut Vec<DispatcherEffect>,
) -> Result<(), LeadershipError> {
    let status = results
        .status(job)
        .ok_or(LeadershipError::NoEntry { job })?;
    graphs.remove(job);
    results.mark_clean(job)?;
    effects.push(DispatcherEffect::GlobalCleanup { job, status });
    Ok(())
}

fn describe(event: DispatcherEvent) -> (&'static str, Option<u32>) {
    match event {
        DispatcherEvent::LeadershipGained => ("leadership_gained", None),
        DispatcherEvent::LeadershipLost => ("leadership_lost", None),
        DispatcherEvent::JobSubmitted { job } => ("job_submitted", Some(job.0)),
        DispatcherEvent::RunnerCompleted { job, .. } => ("runner_completed", Some(job.0)),
        DispatcherEvent::RunnerTerminated { job } => ("runner_terminated", Some(job.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leadership::store::{InMemoryJobGraphStore, InMemoryJobResultStore};

    fn setup() -> (Dispatcher, InMemoryJobGraphStore, InMemoryJobResultStore) {
        let mut d = Dispatcher::new();
        let mut g = InMemoryJobGraphStore::default();
        let mut r = InMemoryJobResultStore::default();
        d.handle(DispatcherEvent::LeadershipGained, &mut g, &mut r)
            .unwrap();
        d.handle(
            DispatcherEvent::JobSubmitted { job: JobId(1) },
            &mut g,
            &mut r,
        )
        .unwrap();
        (d, g, r)
    }

    #[test]
    fn suspended_keeps_the_job_graph_and_recovery_restarts_it() {
        let (mut d, mut g, mut r) = setup();
        let job = JobId(1);
        let fx = d
            .handle(DispatcherEvent::LeadershipLost, &mut g, &mut r)
            .unwrap();
        assert_eq!(fx, vec![DispatcherEffect::CloseRunner { job }]);
        let fx = d
            .handle(
                DispatcherEvent::RunnerCompleted {
                    job,
                    result: RunnerResult::Suspended,
                },
                &mut g,
                &mut r,
            )
            .unwrap();
        assert_eq!(fx, vec![DispatcherEffect::LocalCleanup { job }]);
        assert!(g.contains(job));
        assert_eq!(
            d.handle(DispatcherEvent::LeadershipGained, &mut g, &mut r),
            Err(LeadershipError::RunnerStillLive { job })
        );
        d.handle(DispatcherEvent::RunnerTerminated { job }, &mut g, &mut r)
            .unwrap();
        let fx = d
            .handle(DispatcherEvent::LeadershipGained, &mut g, &mut r)
            .unwrap();
        assert_eq!(fx, vec![DispatcherEffect::StartRunner { job }]);
        assert_eq!((d.epoch(), d.runners_started()), (2, 2));
    }

    /// Dispatcher and stores share their trees with their copies until one side
    /// changes: a change to the original never shows in a copy taken before it.
    #[test]
    fn copies_taken_before_a_change_keep_what_they_had() {
        let (mut d, mut g, mut r) = setup();
        let job = JobId(1);
        assert!(d.is_live(job) && !d.is_live(JobId(2)));
        assert_eq!((d.live_count(), d.live_runners()), (1, vec![job]));
        let (d0, g0, r0) = (d.clone(), g.clone(), r.clone());
        let done = RunnerResult::Terminal(JobStatus::Failed);
        d.handle(
            DispatcherEvent::RunnerCompleted { job, result: done },
            &mut g,
            &mut r,
        )
        .unwrap();
        d.handle(DispatcherEvent::RunnerTerminated { job }, &mut g, &mut r)
            .unwrap();
        assert!(!d.is_live(job));
        assert_eq!((d.live_count(), d.live_runners()), (0, vec![]));
        assert!(!g.contains(job));
        assert_eq!(r.entry(job), JobResultEntry::Clean);
        // The copies still hold the live runner, the JobGraph and no entry, and change
        // on their own: their runner completes, unaffected by the original's.
        assert!(d0.is_live(job) && g0.contains(job));
        assert_eq!(r0.entry(job), JobResultEntry::None);
        let (mut d1, mut g1, mut r1) = (d0.clone(), g0.clone(), r0.clone());
        let fx = d1
            .handle(
                DispatcherEvent::RunnerCompleted {
                    job,
                    result: RunnerResult::Suspended,
                },
                &mut g1,
                &mut r1,
            )
            .unwrap();
        assert_eq!(
            fx,
            vec![
                DispatcherEffect::LocalCleanup { job },
                DispatcherEffect::CloseRunner { job }
            ]
        );
        assert!(g1.contains(job) && d0.is_live(job) && d1.is_live(job));
        assert_eq!((d0, g0, r0), (setup().0, setup().1, setup().2));
    }

    #[test]
    fn terminal_result_cleans_up_globally_and_is_never_recovered() {
        let (mut d, mut g, mut r) = setup();
        let job = JobId(1);
        let fx = d
            .handle(
                DispatcherEvent::RunnerCompleted {
                    job,
                    result: RunnerResult::Terminal(JobStatus::Canceled),
                },
                &mut g,
                &mut r,
            )
            .unwrap();
        assert_eq!(
            fx,
            vec![
                DispatcherEffect::GlobalCleanup {
                    job,
                    status: JobStatus::Canceled
                },
                DispatcherEffect::CloseRunner { job }
            ]
        );
        assert!(!g.contains(job));
        assert_eq!(r.entry(job), JobResultEntry::Clean);
        // The runner is closing already: losing leadership closes nothing more.
        assert_eq!(
            d.handle(DispatcherEvent::LeadershipLost, &mut g, &mut r)
                .unwrap(),
            vec![]
        );
        d.handle(DispatcherEvent::RunnerTerminated { job }, &mut g, &mut r)
            .unwrap();
        let fx = d
            .handle(DispatcherEvent::LeadershipGained, &mut g, &mut r)
            .unwrap();
        assert!(fx.is_empty());
        assert_eq!(d.runners_started(), 1);
    }

    #[test]
    fn refusals_leave_dispatcher_and_stores_unchanged() {
        let (mut d, mut g, mut r) = setup();
        let job = JobId(1);
        d.handle(
            DispatcherEvent::RunnerCompleted {
                job,
                result: RunnerResult::Suspended,
            },
            &mut g,
            &mut r,
        )
        .unwrap();
        let before = (d.clone(), g.clone(), r.clone());
        assert_eq!(
            d.handle(
                DispatcherEvent::RunnerCompleted {
                    job,
                    result: RunnerResult::Terminal(JobStatus::Failed)
                },
                &mut g,
                &mut r
            ),
            Err(LeadershipError::DuplicateRunnerResult { job })
        );
        assert_eq!(
            d.handle(DispatcherEvent::JobSubmitted { job }, &mut g, &mut r),
            Err(LeadershipError::DuplicateJob { job })
        );
        assert_eq!(
            d.handle(DispatcherEvent::LeadershipGained, &mut g, &mut r),
            Err(LeadershipError::DispatcherAlreadyLeader)
        );
        assert_eq!(
            d.handle(
                DispatcherEvent::RunnerTerminated { job: JobId(9) },
                &mut g,
                &mut r
            ),
            Err(LeadershipError::NoLiveRunner { job: JobId(9) })
        );
        assert_eq!((d, g, r), before);
    }
}
