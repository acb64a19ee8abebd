//! Recovery: the stores' answer to a new leader's read, and what the dispatcher rebuilds
//! from it (a runner for every JobGraph without an entry, the rest of the cleanup for
//! every dirty entry).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Dispatcher, DispatcherEffect, Handled, JobRecord, RecoveredJob, StartedRunner};
use crate::leadership::error::LeadershipError;
use crate::leadership::types::{JobId, JobResultEntry};

impl Dispatcher {
    /// The stores' answer to the recovery read of `epoch`; discarded when that epoch is
    /// over.
    pub(super) fn jobs_recovered(
        &mut self,
        epoch: u32,
        jobs: &[RecoveredJob],
        answer: &'static str,
    ) -> Result<Handled, LeadershipError> {
        if epoch != self.epoch || !self.leader {
            return Ok(Handled::Discarded);
        }
        if !self.recovering {
            return Err(LeadershipError::UnexpectedDispatcherAnswer { answer });
        }
        if let Some(pair) = jobs.windows(2).find(|w| w[0].job >= w[1].job) {
            return Err(LeadershipError::DuplicateJob { job: pair[1].job });
        }
        self.recovering = false;
        let mut effects = Vec::new();
        self.recover(jobs, &mut effects);
        Ok(Handled::Applied(effects))
    }

    /// Rebuilds what the dispatcher knows from the stores' answer: a runner for every
    /// JobGraph without an entry, the rest of the cleanup for every dirty entry. A job
    /// with a store request outstanding (from before the failover) keeps its record: the
    /// request's answer carries it on.
    fn recover(&mut self, read: &[RecoveredJob], effects: &mut Vec<DispatcherEffect>) {
        let mut known: BTreeMap<JobId, JobRecord> = self
            .jobs
            .iter()
            .filter(|(_, record)| record.in_flight())
            .map(|(job, record)| (*job, *record))
            .collect();
        for found in read {
            let job = found.job;
            if known.contains_key(&job) {
                continue;
            }
            let record = match (found.entry, found.job_graph) {
                (JobResultEntry::None, true) => {
                    self.start_runner(job, true, effects);
                    JobRecord::Stored
                }
                // Neither store holds anything for the job after all.
                (JobResultEntry::None, false) => continue,
                // A result was written but cleanup did not finish: finish it.
                (JobResultEntry::Dirty | JobResultEntry::Clean, true) => {
                    effects.push(DispatcherEffect::RemoveJobGraph { job });
                    JobRecord::RemovingJobGraph
                }
                (JobResultEntry::Dirty, false) => {
                    effects.push(DispatcherEffect::MarkEntryClean { job });
                    JobRecord::MarkingClean
                }
                (JobResultEntry::Clean, false) => JobRecord::Clean,
            };
            known.insert(job, record);
        }
        self.jobs = Arc::new(known);
    }

    pub(super) fn start_runner(
        &mut self,
        job: JobId,
        recovered: bool,
        effects: &mut Vec<DispatcherEffect>,
    ) {
        Arc::make_mut(&mut self.runners).insert(
            job,
            StartedRunner {
                recovered,
                result_received: false,
                closing: false,
                terminated: false,
            },
        );
        self.runners_started += 1;
        effects.push(DispatcherEffect::StartRunner { job });
    }
}
