//! The observable projection of the leadership lifecycle.
//!
//! Plain data with public fields, so a conformance check can compare it with the
//! projection of a formal model of FLINK-39704 (apache/flink PR 28201) after every step
//! and print both on a mismatch.

use super::process::Process;
use super::types::{
    JobResultEntry, JobStatus, ProcessResult, ProcessState, RunnerResult, RunnerState, Session,
};
use serde::{Deserialize, Serialize};

/// One process as observed from outside.
///
/// ```
/// use steadfast::leadership::{Process, ProcessProjection, ProcessState, Session};
/// let p = ProcessProjection::of(&Process::new(Session(2)));
/// assert_eq!(p, ProcessProjection { session: Session(2), state: ProcessState::Running, result: None });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessProjection {
    /// The leader session the process was created for.
    pub session: Session,
    /// Its lifecycle state.
    pub state: ProcessState,
    /// Its result, once completed.
    pub result: Option<ProcessResult>,
}

impl ProcessProjection {
    /// Projects a process.
    pub fn of(process: &Process) -> Self {
        ProcessProjection {
            session: process.session(),
            state: process.state(),
            result: process.result(),
        }
    }
}

/// One runner as observed from outside.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RunnerProjection {
    /// Lifecycle state.
    pub state: RunnerState,
    /// The runner result, once set.
    pub result: Option<RunnerResult>,
    /// A cached globally terminal status waiting to be flushed.
    pub pending_terminal: Option<JobStatus>,
    /// The session of the most recently created process.
    pub current_process_leader: Option<Session>,
    /// The runner's processes in creation order.
    pub processes: Vec<ProcessProjection>,
}

/// The whole lifecycle of one job: leader election, the latest runner, every process of
/// every runner, the HA stores and the dispatcher.
///
/// ```
/// use steadfast::leadership::{Harness, JobId, JobResultEntry};
/// let mut d = Harness::new(JobId(1), true);
/// d.dispatcher_gain_leadership().unwrap();
/// d.submit_job().unwrap();
/// let p = d.projection();
/// assert!(p.job_graph_present);
/// assert_eq!(p.job_result_entry, JobResultEntry::None);
/// assert_eq!((p.dispatcher_epoch, p.runners_started), (1, 1));
/// let json = serde_json::to_string(&p).unwrap();
/// assert_eq!(serde_json::from_str::<steadfast::leadership::LeadershipProjection>(&json).unwrap(), p);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LeadershipProjection {
    /// The leader session currently issued by the job's leader election.
    pub issued_session: Option<Session>,
    /// State of the latest runner; `None` before any runner was started.
    pub runner_state: Option<RunnerState>,
    /// Result of the latest runner.
    pub runner_result: Option<RunnerResult>,
    /// `pending_terminal` of the latest runner.
    pub pending_terminal: Option<JobStatus>,
    /// `current_process_leader` of the latest runner.
    pub current_process_leader: Option<Session>,
    /// Every process of every runner of the job, in creation order.
    pub processes: Vec<ProcessProjection>,
    /// Whether the JobGraph store holds the job.
    pub job_graph_present: bool,
    /// The job's JobResultStore entry.
    pub job_result_entry: JobResultEntry,
    /// How many times the dispatcher gained leadership.
    pub dispatcher_epoch: u32,
    /// How many runners the dispatcher started, over all epochs.
    pub runners_started: u32,
}
