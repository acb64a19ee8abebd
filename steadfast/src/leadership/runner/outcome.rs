//! What the runner did with an event it accepted ([`RunnerOutcome`]), returned with
//! the event's effects ([`Handled`]) and logged.

use serde::{Deserialize, Serialize};

use super::Effect;

/// What a [`Runner`](super::Runner) did with an event it accepted: returned with its effects by
/// [`Runner::step`](super::Runner::step), and the `outcome` field of its structured log record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RunnerOutcome {
    /// A grant or revoke joined the operation chain.
    Queued,
    /// Close started; the runner waits for its process to terminate.
    Stopping,
    /// Close completed at once: the runner terminated.
    Terminated,
    /// A process's result completed; its forward callback is scheduled.
    ForwardScheduled,
    /// A process's service terminated with its result already set.
    ProcessTerminated,
    /// The event changed nothing the runner tracks.
    Ignored,
    /// The forward cached a terminal result; the runner does not run, so no check.
    Cached,
    /// The runner asked whether the session is still the leader.
    CheckingLeadership,
    /// The forward cached a terminal result and asked about leadership.
    CachedCheckingLeadership,
    /// The forward was dropped: the runner no longer runs.
    DroppedNotRunning,
    /// A grant was skipped: the runner stopped meanwhile.
    GrantSkippedNotRunning,
    /// A grant was skipped: its session is no longer the leader.
    GrantSkippedNotLeader,
    /// The grant found a JobResultStore entry: the job is done already.
    JobAlreadyDone,
    /// The grant flushed a cached terminal result instead of starting a process.
    FlushedOnGrant,
    /// The grant started a process.
    ProcessStarted,
    /// The forward completed the runner's result.
    Forwarded,
    /// The forward was dropped: its session is no longer the leader.
    DroppedNotLeader,
}

impl RunnerOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [RunnerOutcome; 17] = [
        RunnerOutcome::Queued,
        RunnerOutcome::Stopping,
        RunnerOutcome::Terminated,
        RunnerOutcome::ForwardScheduled,
        RunnerOutcome::ProcessTerminated,
        RunnerOutcome::Ignored,
        RunnerOutcome::Cached,
        RunnerOutcome::CheckingLeadership,
        RunnerOutcome::CachedCheckingLeadership,
        RunnerOutcome::DroppedNotRunning,
        RunnerOutcome::GrantSkippedNotRunning,
        RunnerOutcome::GrantSkippedNotLeader,
        RunnerOutcome::JobAlreadyDone,
        RunnerOutcome::FlushedOnGrant,
        RunnerOutcome::ProcessStarted,
        RunnerOutcome::Forwarded,
        RunnerOutcome::DroppedNotLeader,
    ];

    /// The outcome's word in the structured log.
    pub fn name(self) -> &'static str {
        match self {
            RunnerOutcome::Queued => "queued",
            RunnerOutcome::Stopping => "stopping",
            RunnerOutcome::Terminated => "terminated",
            RunnerOutcome::ForwardScheduled => "forward_scheduled",
            RunnerOutcome::ProcessTerminated => "process_terminated",
            RunnerOutcome::Ignored => "ignored",
            RunnerOutcome::Cached => "cached",
            RunnerOutcome::CheckingLeadership => "checking_leadership",
            RunnerOutcome::CachedCheckingLeadership => "cached_checking_leadership",
            RunnerOutcome::DroppedNotRunning => "dropped_not_running",
            RunnerOutcome::GrantSkippedNotRunning => "grant_skipped_not_running",
            RunnerOutcome::GrantSkippedNotLeader => "grant_skipped_not_leader",
            RunnerOutcome::JobAlreadyDone => "job_already_done",
            RunnerOutcome::FlushedOnGrant => "flushed_on_grant",
            RunnerOutcome::ProcessStarted => "process_started",
            RunnerOutcome::Forwarded => "forwarded",
            RunnerOutcome::DroppedNotLeader => "dropped_not_leader",
        }
    }
}

/// What [`Runner::step`](super::Runner::step) returns for an accepted event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handled {
    /// The effects to execute, in order.
    pub effects: Vec<Effect>,
    /// What the runner did.
    pub outcome: RunnerOutcome,
}
