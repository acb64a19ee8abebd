//! Identifiers and result values shared by the leadership machines.
//!
//! The values mirror what Flink's `JobMasterServiceLeadershipRunner` and
//! `DefaultJobMasterServiceProcess` pass around (FLINK-39704, apache/flink PR 28201):
//! a leader session id, the job's globally terminal status, the value a process's
//! result future completes with, and the value the runner's result future completes with.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A leader session issued by leader election. Each grant issues a fresh, larger number.
///
/// ```
/// use steadfast::leadership::Session;
/// assert!(Session(2) > Session(1));
/// assert_eq!(Session(3).to_string(), "s3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Session(pub u32);

impl fmt::Display for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

/// Identifies a job in the JobGraph store and the JobResultStore.
///
/// ```
/// use steadfast::leadership::JobId;
/// assert_eq!(JobId(7).to_string(), "job7");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct JobId(pub u32);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job{}", self.0)
    }
}

/// A globally terminal job status: once reached, the job must never run again.
///
/// ```
/// use steadfast::leadership::JobStatus;
/// let all = [JobStatus::Finished, JobStatus::Failed, JobStatus::Canceled];
/// assert_eq!(all.len(), 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum JobStatus {
    /// The job completed successfully.
    Finished,
    /// The job failed and will not be restarted.
    Failed,
    /// The job was cancelled.
    Canceled,
}

impl JobStatus {
    /// The status's name in the structured log, as Flink spells it.
    ///
    /// ```
    /// use steadfast::leadership::JobStatus;
    /// assert_eq!(JobStatus::Canceled.name(), "CANCELED");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            JobStatus::Finished => "FINISHED",
            JobStatus::Failed => "FAILED",
            JobStatus::Canceled => "CANCELED",
        }
    }
}

/// The value a process's result future completes with.
///
/// ```
/// use steadfast::leadership::{JobStatus, ProcessResult};
/// let failed = ProcessResult::Terminal(JobStatus::Failed);
/// assert_eq!(failed.terminal_status(), Some(JobStatus::Failed));
/// assert_eq!(ProcessResult::NotFinished.terminal_status(), None);
/// assert_eq!(ProcessResult::InitializationFailed.terminal_status(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProcessResult {
    /// The scheduler reported a globally terminal status.
    Terminal(JobStatus),
    /// The JobMaster could not be created or started.
    InitializationFailed,
    /// The JobMaster failed while running (Flink completes the result future
    /// exceptionally).
    JobMasterFailed,
    /// The process terminated before the job finished (`JobNotFinishedException`).
    NotFinished,
}

impl ProcessResult {
    /// The terminal status, if this value is globally terminal.
    pub fn terminal_status(self) -> Option<JobStatus> {
        match self {
            ProcessResult::Terminal(status) => Some(status),
            _ => None,
        }
    }
}

/// The value a runner's result future completes with; the dispatcher consumes it.
///
/// ```
/// use steadfast::leadership::{JobStatus, ProcessResult, RunnerResult};
/// let r: RunnerResult = ProcessResult::Terminal(JobStatus::Canceled).into();
/// assert_eq!(r, RunnerResult::Terminal(JobStatus::Canceled));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RunnerResult {
    /// The job reached a globally terminal status.
    Terminal(JobStatus),
    /// The runner closed without a terminal result: the job must be recovered later.
    Suspended,
    /// A process reported that it terminated before the job finished.
    NotFinished,
    /// The JobResultStore already held an entry when leadership was granted.
    JobAlreadyDone,
    /// The process failed to initialise the JobMaster.
    InitializationFailed,
    /// The process's JobMaster failed while running.
    JobMasterFailed,
}

impl From<ProcessResult> for RunnerResult {
    fn from(value: ProcessResult) -> Self {
        match value {
            ProcessResult::Terminal(status) => RunnerResult::Terminal(status),
            ProcessResult::InitializationFailed => RunnerResult::InitializationFailed,
            ProcessResult::JobMasterFailed => RunnerResult::JobMasterFailed,
            ProcessResult::NotFinished => RunnerResult::NotFinished,
        }
    }
}

/// Runner lifecycle; transitions are one-way: Running→JobCompleted, Running→Stopped,
/// JobCompleted→Stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RunnerState {
    /// Accepting grants and forwarding process results.
    Running,
    /// The runner result is set; the process stays until the runner is closed.
    JobCompleted,
    /// Close was requested; the runner finishes once its process terminated.
    Stopped,
}

/// Process lifecycle: Running→Closing→Terminated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProcessState {
    /// The JobMaster service is running.
    Running,
    /// Close was requested; the service has not terminated yet.
    Closing,
    /// The service terminated.
    Terminated,
}

/// State of one job's entry in the JobResultStore.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JobResultEntry {
    /// No entry: the job is not known to be done.
    None,
    /// The result was written; cleanup has not finished yet.
    Dirty,
    /// The result was written and global cleanup finished.
    Clean,
}
