//! Typed errors for event sequences the leadership machines refuse.
//!
//! Every refusal leaves the machine's state exactly as it was before the event, so a
//! driver can report the problem and carry on. The sequences refused here are the ones
//! Flink's runner, process and dispatcher never see (FLINK-39704, apache/flink PR 28201):
//! leader election delivers grant and revoke alternately on one ordered channel, a
//! service only terminates after it was closed, and a runner stops once.

use super::types::{JobId, Session};
use thiserror::Error;

/// Why an event was refused. The machine that returned it is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum LeadershipError {
    /// A grant arrived while an earlier grant was not yet revoked.
    #[error("grant of {granted} while {held} is still granted (missing revoke)")]
    GrantWithoutRevoke {
        /// The session still granted.
        held: Session,
        /// The session in the refused grant.
        granted: Session,
    },
    /// A grant carried a session not larger than an earlier one.
    #[error("grant of {granted} is not newer than the earlier grant {previous}")]
    StaleSession {
        /// The largest session granted before.
        previous: Session,
        /// The session in the refused grant.
        granted: Session,
    },
    /// A revoke arrived while nothing was granted.
    #[error("revoke without a preceding grant")]
    RevokeWithoutGrant,
    /// Leader election events after the runner terminated (its election is closed).
    #[error("{event} after the runner terminated")]
    RunnerTerminated {
        /// Name of the refused event.
        event: &'static str,
    },
    /// A second close request.
    #[error("close requested twice")]
    AlreadyClosed,
    /// An event named a process this runner never created.
    #[error("no process for session {session}")]
    UnknownProcess {
        /// The session named by the event.
        session: Session,
    },
    /// A process reported service termination although it was never closed.
    #[error("service of process {session} terminated but the process was never closed")]
    ServiceTerminatedWhileRunning {
        /// The process session.
        session: Session,
    },
    /// A process reported service termination twice.
    #[error("service of process {session} already terminated")]
    AlreadyTerminated {
        /// The process session.
        session: Session,
    },
    /// Close was requested for a process that is already closing or terminated.
    #[error("process {session} is already closing or terminated")]
    ProcessAlreadyClosing {
        /// The process session.
        session: Session,
    },
    /// `NotFinished` is declared by the process itself after its service terminated;
    /// it cannot be supplied from outside.
    #[error("process {session}: NotFinished is set only by the process on termination")]
    NotFinishedIsInternal {
        /// The process session.
        session: Session,
    },
    /// A forward callback arrived for a process whose result has not completed, or
    /// whose callback already ran.
    #[error("no forward callback pending for process {session}")]
    NoForwardPending {
        /// The process session.
        session: Session,
    },
    /// A JobResultStore answer arrived while no lookup was outstanding.
    #[error("JobResultStore answer without an outstanding lookup")]
    UnexpectedStoreAnswer,
    /// A leadership confirmation arrived for a session the runner did not ask about.
    #[error("leadership confirmation for {session} without an outstanding check")]
    UnexpectedConfirmation {
        /// The session in the answer.
        session: Session,
    },
    /// The dispatcher gained leadership while already leader.
    #[error("dispatcher is already leader")]
    DispatcherAlreadyLeader,
    /// The dispatcher lost leadership, or was asked to accept a job, while not leader.
    #[error("dispatcher is not leader")]
    DispatcherNotLeader,
    /// A new dispatcher leader would start while a runner of the previous one is live
    /// (the environment guarantees the old runner terminated first).
    #[error("runner for {job} of the previous dispatcher epoch is still live")]
    RunnerStillLive {
        /// The job whose runner is still live.
        job: JobId,
    },
    /// A runner event named a job without a live runner.
    #[error("no live runner for {job}")]
    NoLiveRunner {
        /// The job named by the event.
        job: JobId,
    },
    /// A runner delivered a second result.
    #[error("runner for {job} already delivered its result")]
    DuplicateRunnerResult {
        /// The job.
        job: JobId,
    },
    /// A job was submitted twice.
    #[error("{job} is already known to the JobGraph store or the JobResultStore")]
    DuplicateJob {
        /// The job.
        job: JobId,
    },
    /// A JobResultStore entry was written twice.
    #[error("JobResultStore already has an entry for {job}")]
    EntryExists {
        /// The job.
        job: JobId,
    },
    /// A JobResultStore entry was marked clean but does not exist.
    #[error("JobResultStore has no entry for {job}")]
    NoEntry {
        /// The job.
        job: JobId,
    },
    /// The driver was asked to act on a runner it does not have.
    #[error("no runner exists")]
    NoRunner,
    /// The driver's leader election was asked for an impossible step.
    #[error("leader election: {0}")]
    Election(&'static str),
    /// The driver was asked to answer a query while none is pending.
    #[error("no query pending")]
    NoPendingQuery,
    /// A store answer reached the dispatcher that it has no request outstanding for.
    #[error("dispatcher: {answer} without an outstanding request")]
    UnexpectedDispatcherAnswer {
        /// Name of the refused answer event.
        answer: &'static str,
    },
    /// A job was submitted while the dispatcher is still recovering its jobs.
    #[error("dispatcher is still recovering its jobs")]
    RecoveryInProgress,
    /// The driver was asked to answer a store request while none is pending.
    #[error("no store request pending")]
    NoPendingStoreRequest,
    /// The driver was asked to deliver a runner result while none is pending.
    #[error("no runner result pending")]
    NoPendingRunnerResult,
    /// The stores refused a write of a dispatcher that is no longer leader.
    #[error("the stores refuse a write of dispatcher epoch {epoch}: epoch {leader_epoch} leads (fenced)")]
    Fenced {
        /// The epoch of the dispatcher that asked.
        epoch: u32,
        /// The epoch of the current leader.
        leader_epoch: u32,
    },
    /// The driver was asked to act on a stopping JobManager beside the leader while it
    /// runs none.
    #[error("no JobManager is stopping beside the leader")]
    NoStoppingJobManager,
}
