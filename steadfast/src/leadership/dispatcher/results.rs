//! Job results: what the dispatcher does with a runner's result (global cleanup for a
//! terminal one, local cleanup for SUSPENDED, a fatal error for the exceptional ones)
//! and the cleanup's store requests, each answered in turn.

use std::sync::Arc;

use super::{Dispatcher, DispatcherEffect, JobRecord, StartedRunner};
use crate::leadership::error::LeadershipError;
use crate::leadership::types::{JobId, JobStatus, RunnerResult};

impl Dispatcher {
    /// The runner of `job` completed `result`: the cleanup it calls for, then the
    /// runner's close.
    pub(super) fn runner_completed(
        &mut self,
        job: JobId,
        result: RunnerResult,
    ) -> Result<Vec<DispatcherEffect>, LeadershipError> {
        let runner = *self
            .runners
            .get(&job)
            .ok_or(LeadershipError::NoLiveRunner { job })?;
        if runner.result_received {
            return Err(LeadershipError::DuplicateRunnerResult { job });
        }
        let mut effects = Vec::new();
        self.consume_result(job, runner, result, &mut effects)?;
        // The job is done with this runner whatever the result: the dispatcher
        // removes it and closes it (Flink's `removeJob` closes the runner during
        // cleanup), unless it is closing or closed already.
        let runner = Arc::make_mut(&mut self.runners)
            .get_mut(&job)
            .expect("looked up above");
        runner.result_received = true;
        if !runner.closing && !runner.terminated {
            runner.closing = true;
            effects.push(DispatcherEffect::CloseRunner { job });
        }
        Ok(effects)
    }

    /// What `runner`'s `result` means for `job`: global cleanup for a terminal result,
    /// local cleanup for SUSPENDED, a fatal error for the exceptional ones.
    fn consume_result(
        &mut self,
        job: JobId,
        runner: StartedRunner,
        result: RunnerResult,
        effects: &mut Vec<DispatcherEffect>,
    ) -> Result<(), LeadershipError> {
        let record = self.jobs.get(&job).copied();
        match result {
            RunnerResult::Terminal(status) => self.write_entry(job, record, status, effects)?,
            RunnerResult::JobAlreadyDone => {
                // The runner found an entry this dispatcher did not write: clean
                // up after whoever wrote it, unless a cleanup is under way.
                if !record.is_some_and(JobRecord::in_flight) {
                    Arc::make_mut(&mut self.jobs).insert(job, JobRecord::RemovingJobGraph);
                    effects.push(DispatcherEffect::RemoveJobGraph { job });
                }
            }
            RunnerResult::Suspended => effects.push(DispatcherEffect::LocalCleanup { job }),
            // A submitted job whose JobMaster cannot start has FAILED for good
            // (Flink's `Dispatcher.runJob` hands it to `jobReachedTerminalState`).
            RunnerResult::InitializationFailed if !runner.recovered => {
                self.write_entry(job, record, JobStatus::Failed, effects)?
            }
            // A recovered job that cannot start, a failed JobMaster and an
            // exceptional result are fatal: the JobManager process exits.
            RunnerResult::NotFinished
            | RunnerResult::InitializationFailed
            | RunnerResult::JobMasterFailed => {
                effects.push(DispatcherEffect::FatalError { job, result })
            }
        }
        Ok(())
    }

    /// The runner of `job` terminated.
    pub(super) fn runner_terminated(
        &mut self,
        job: JobId,
    ) -> Result<Vec<DispatcherEffect>, LeadershipError> {
        if !self.is_live(job) {
            return Err(LeadershipError::NoLiveRunner { job });
        }
        let runner = Arc::make_mut(&mut self.runners)
            .get_mut(&job)
            .expect("live, so present");
        runner.terminated = true;
        Ok(Vec::new())
    }

    /// Asks for `job`'s dirty JobResultStore entry with `status`; refuses when the job
    /// (`record`, what the dispatcher knows of it) is not stored without an entry.
    fn write_entry(
        &mut self,
        job: JobId,
        record: Option<JobRecord>,
        status: JobStatus,
        effects: &mut Vec<DispatcherEffect>,
    ) -> Result<(), LeadershipError> {
        if record != Some(JobRecord::Stored) {
            return Err(LeadershipError::EntryExists { job });
        }
        Arc::make_mut(&mut self.jobs).insert(job, JobRecord::WritingEntry);
        effects.push(DispatcherEffect::WriteDirtyEntry { job, status });
        Ok(())
    }

    /// Moves `job`'s record from `from` to `to`, or refuses `answer` unchanged.
    pub(super) fn advance(
        &mut self,
        job: JobId,
        from: JobRecord,
        to: JobRecord,
        answer: &'static str,
    ) -> Result<(), LeadershipError> {
        if self.jobs.get(&job) != Some(&from) {
            return Err(LeadershipError::UnexpectedDispatcherAnswer { answer });
        }
        Arc::make_mut(&mut self.jobs).insert(job, to);
        Ok(())
    }
}
