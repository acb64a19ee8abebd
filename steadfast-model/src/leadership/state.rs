//! The leadership model's state: the election, the runner and its operation chain,
//! the processes, the scheduler's signal, the dispatcher and the JobResultStore, as
//! typed values, and their injective byte packing (the checker's fingerprint).

use serde::{Deserialize, Serialize};

use super::{CHAIN_CAPACITY, MAX_GRANTS};

/// A globally terminal job status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Status {
    /// The job finished.
    Finished,
    /// The job failed (the seed's end-to-end repro).
    Failed,
    /// The job was cancelled.
    Canceled,
}

impl Status {
    /// Every terminal status, in the order the `statuses` bound takes them.
    pub const ALL: [Status; 3] = [Status::Finished, Status::Failed, Status::Canceled];

    /// Flink's name of the status.
    pub fn word(self) -> &'static str {
        match self {
            Status::Finished => "FINISHED",
            Status::Failed => "FAILED",
            Status::Canceled => "CANCELED",
        }
    }
}

/// The value of a set-once result (a process's result future or the runner's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Outcome {
    /// Not completed yet.
    Unset,
    /// A globally terminal status.
    Terminal(Status),
    /// The runner's synthetic SUSPENDED (the job is not done; keep it for recovery).
    Suspended,
    /// A process closed before its job finished (`JobNotFinishedException`).
    NotFinished,
    /// The grant found a JobResultStore entry (`JobAlreadyDoneException`).
    AlreadyDone,
    /// The JobMaster could not be initialised (`JobManagerRunnerResult`'s
    /// initialisation failure).
    InitFailed,
    /// The JobMaster failed while running (the result future completed exceptionally).
    JobMasterFailed,
}

impl Outcome {
    /// Whether the result has been completed.
    pub fn is_set(self) -> bool {
        self != Outcome::Unset
    }

    /// The terminal status, when it is one.
    pub fn terminal(self) -> Option<Status> {
        match self {
            Outcome::Terminal(status) => Some(status),
            _ => None,
        }
    }

    /// The result in Flink's words.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Unset => "unset",
            Outcome::Terminal(status) => status.word(),
            Outcome::Suspended => "SUSPENDED",
            Outcome::NotFinished => "NotFinished",
            Outcome::AlreadyDone => "JobAlreadyDone",
            Outcome::InitFailed => "initialisation failure",
            Outcome::JobMasterFailed => "JobMaster failure",
        }
    }
}

/// The runner's lifecycle (one way: Running → JobCompleted → Stopped, or Running →
/// Stopped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum RunnerState {
    /// Waiting for or holding leadership.
    Running,
    /// A process result was forwarded (or a cached terminal result flushed by a grant).
    JobCompleted,
    /// Closed.
    Stopped,
}

/// A process's lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ProcessState {
    /// Its JobMaster runs the job.
    Running,
    /// Closed; its JobMaster service has not terminated yet.
    Closing,
    /// Its JobMaster service terminated.
    Terminated,
    /// Its JobManager process died (setting `jobmaster-crash`): gone without closing,
    /// its result as it was.
    Killed,
}

/// One process (`JobMasterServiceProcess`), created by one grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Process {
    /// Lifecycle state.
    pub state: ProcessState,
    /// The leader session that created it.
    pub session: u8,
    /// The dispatcher epoch (runner) it belongs to.
    pub epoch: u8,
    /// Its set-once result future.
    pub result: Outcome,
    /// The result completed and the runner's forward callback has not run yet.
    pub forward_pending: bool,
    /// The status its scheduler decided, once it did (each run's scheduler decides at
    /// most once).
    pub decision: Option<Status>,
}

impl Process {
    pub(super) const UNUSED: Process = Process {
        state: ProcessState::Terminated,
        session: 0,
        epoch: 0,
        result: Outcome::Unset,
        forward_pending: false,
        decision: None,
    };
}

/// An operation waiting in the runner's sequential chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ChainOp {
    /// Start a process for this session, if it is still the issued one.
    Grant(u8),
    /// Close the current process and wait for it to terminate.
    Revoke,
    /// Unused slot (keeps equal chains equal).
    Empty,
}

/// The JobResultStore entry of the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum JobResultEntry {
    /// No entry: the job is not known to be done.
    Absent,
    /// Written before cleanup.
    Dirty,
    /// Cleanup done.
    Clean,
}

/// The global cleanup step a dispatcher has asked the stores for and waits on: after
/// it wrote a dirty entry, found one at recovery, or learnt from its runner that the
/// job is already done. Each dispatcher runs its own cleanup; the stores' steps are
/// idempotent, so two dispatchers may clean up the same entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Cleanup {
    /// No cleanup request outstanding.
    Idle,
    /// The JobGraph's removal is asked for.
    RemovingJobGraph,
    /// Marking the entry clean is asked for.
    MarkingClean,
}

/// The dispatcher of the current epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum DispatcherState {
    /// Leader; runs the job's runner.
    Leading,
    /// Lost leadership; waits for its runner to terminate before the next leader starts.
    Stopping,
    /// Its JobManager process died (setting `jobmaster-crash`): nothing of this epoch
    /// runs any more, and the next leader starts without waiting.
    Crashed,
}

/// The previous epoch's runner while its dispatcher, on another host, is still stopping
/// after the next leader started (setting `dispatcher-overlap`): closed, its process
/// closing, its result not yet handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct OldRunner {
    /// Its set-once result.
    pub result: Outcome,
    /// Its cached terminal result (runner fix).
    pub pending_terminal: Option<Status>,
    /// Its current process (0: none).
    pub current: u8,
    /// Its current process leader (runner fix; 0: none).
    pub current_leader: u8,
    /// Its close completed.
    pub terminated: bool,
    /// Its dispatcher handled its result.
    pub result_handled: bool,
    /// Its dispatcher's cleanup step outstanding: a stopping dispatcher finishes the
    /// cleanup it started before its stop completes.
    pub cleanup: Cleanup,
}

/// The whole system: election, runner, processes, scheduler signal, dispatcher, stores
/// and ghost fields. Process and session identifiers are 1-based; 0 means "none".
///
/// `Hash` packs the state into bytes and hashes them in one write: the checker hashes
/// every generated state, and one write is several times cheaper than one per field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct State {
    /// The session the election currently issues to the runner (0: none).
    pub issued: u8,
    /// Sessions issued so far (the last one issued has this number).
    pub sessions: u8,

    /// The runner's lifecycle state.
    pub runner: RunnerState,
    /// The runner's set-once result, which the dispatcher consumes.
    pub runner_result: Outcome,
    /// Operations waiting in the chain, oldest first.
    pub chain: [ChainOp; CHAIN_CAPACITY],
    /// Number of operations in `chain`.
    pub chain_len: u8,
    /// The runner's current process (0: none yet).
    pub current: u8,
    /// `current_process_leader` of the fixed runner: the session of the last process it
    /// created; revoke does not clear it (0: none; always 0 without the runner fix).
    pub current_leader: u8,
    /// `pending_terminal` of the fixed runner: a terminal result cached for flushing.
    pub pending_terminal: Option<Status>,
    /// The runner's close completed (its process terminated).
    pub runner_terminated: bool,
    /// The previous epoch's runner, still stopping while this epoch runs (setting
    /// `dispatcher-overlap`); its processes are those of epoch `epoch - 1`.
    pub old: Option<OldRunner>,
    /// The latest runner died with its JobManager (setting `jobmaster-crash`), running
    /// or long terminated: none is left to receive anything until the next one starts.
    pub runner_killed: bool,

    /// Processes in creation order; `processes[i]` has id `i + 1`.
    pub processes: [Process; MAX_GRANTS],
    /// Processes created so far.
    pub process_count: u8,

    /// The process the scheduler's terminal signal is travelling to (0: none in flight).
    pub signal: u8,

    /// Dispatcher epoch, from 1; every failover starts the next one.
    pub epoch: u8,
    /// The current dispatcher's state.
    pub dispatcher: DispatcherState,
    /// Whether the current epoch runs a runner for the job.
    pub has_runner: bool,
    /// The dispatcher handled the runner's result.
    pub result_handled: bool,
    /// The JobGraph store holds the job.
    pub job_graph: bool,
    /// The job's JobResultStore entry.
    pub job_result: JobResultEntry,
    /// Epoch in which the JobResultStore entry was written (0: none).
    pub entry_epoch: u8,
    /// Epoch whose dispatcher started the latest runner (the submission's is 1).
    pub runner_epoch: u8,
    /// The current dispatcher's cleanup step outstanding.
    pub cleanup: Cleanup,

    /// Ghost: the status the first scheduler to decide decided, once one did.
    pub decided: Option<Status>,
    /// Ghost: the process whose scheduler decided first (0: none).
    pub decider: u8,
    /// Ghost: a JobResultStore entry was written, after a decision, with a status other
    /// than the first decision's.
    pub entry_not_first: bool,
    /// Ghost: a completion attempt carrying a terminal value was lost while the runner
    /// result was unset.
    pub lost_terminal: bool,
    /// Ghost: a JobManager crash killed a decision before any JobResultStore entry
    /// recorded it (Flink then runs the job again, by design: `specs/leadership.md`).
    pub crash_lost: bool,
    /// Ghost: a JobMaster failure reached the dispatcher as a fatal error and its
    /// JobManager process exited (setting `jobmaster-failures`).
    pub fatal_exit: bool,
}

/// Bytes of [`State::pack`].
pub(super) const PACKED_LEN: usize = 25 + CHAIN_CAPACITY + 4 * MAX_GRANTS;

impl Status {
    fn code(self) -> u8 {
        self as u8 + 1
    }
}

impl Outcome {
    fn code(self) -> u8 {
        match self {
            Outcome::Unset => 0,
            Outcome::Terminal(status) => status.code(),
            Outcome::Suspended => 4,
            Outcome::NotFinished => 5,
            Outcome::AlreadyDone => 6,
            Outcome::InitFailed => 7,
            Outcome::JobMasterFailed => 8,
        }
    }
}

impl State {
    /// An injective byte encoding (every field gets its own byte or bytes), so that
    /// equal encodings mean equal states and the fingerprint loses nothing but hash
    /// collisions; zeros after the used length ([`State::pack_into`]).
    pub(super) fn pack(&self) -> [u8; PACKED_LEN] {
        let mut b = [0u8; PACKED_LEN];
        self.pack_into(&mut b);
        b
    }

    /// [`State::pack`] into a zeroed buffer, returning the bytes used: only the chain's
    /// `chain_len` operations and the first `process_count` processes are written. The
    /// rest of both arrays is always unused (asserted), and the header holds both
    /// lengths, so the encoding stays injective and several of them side by side (one
    /// per job) stay injective too.
    pub(super) fn pack_into(&self, b: &mut [u8; PACKED_LEN]) -> usize {
        debug_assert!(self.chain[usize::from(self.chain_len)..]
            .iter()
            .all(|op| *op == ChainOp::Empty));
        debug_assert!(self.processes[usize::from(self.process_count)..]
            .iter()
            .all(|p| *p == Process::UNUSED));
        b[0] = self.issued;
        b[1] = self.sessions;
        b[2] = self.runner as u8;
        b[3] = self.runner_result.code();
        b[4] = self.chain_len;
        b[5] = self.current;
        b[6] = self.current_leader;
        b[7] = self.pending_terminal.map_or(0, Status::code);
        b[8] = self.runner_terminated as u8;
        b[9] = self.process_count;
        b[10] = self.signal;
        b[11] = self.epoch;
        b[12] = self.dispatcher as u8;
        b[13] = self.has_runner as u8;
        b[14] = self.result_handled as u8;
        b[15] = self.job_graph as u8;
        b[16] = self.job_result as u8;
        // Epochs are at most 4: a nibble each.
        b[17] = self.entry_epoch | self.runner_epoch << 4;
        b[18] = self.decided.map_or(0, Status::code);
        b[19] = self.decider;
        b[20] = self.lost_terminal as u8 | (self.entry_not_first as u8) << 1;
        b[21] = self.crash_lost as u8
            | (self.runner_killed as u8) << 1
            | (self.fatal_exit as u8) << 2
            | (self.cleanup as u8) << 3;
        if let Some(o) = self.old {
            b[22] = 1
                | (o.terminated as u8) << 1
                | (o.result_handled as u8) << 2
                | (o.cleanup as u8) << 3;
            b[23] = o.result.code() | o.pending_terminal.map_or(0, Status::code) << 4;
            // Process ids and sessions are at most MAX_GRANTS (10): a nibble each.
            b[24] = o.current | o.current_leader << 4;
        }
        let mut i = 25;
        for op in &self.chain[..usize::from(self.chain_len)] {
            b[i] = match op {
                ChainOp::Empty => 0,
                ChainOp::Revoke => 1,
                ChainOp::Grant(session) => 2 + session,
            };
            i += 1;
        }
        for p in &self.processes[..usize::from(self.process_count)] {
            b[i] = p.state as u8
                | (p.forward_pending as u8) << 4
                | p.decision.map_or(0, Status::code) << 5;
            b[i + 1] = p.session;
            b[i + 2] = p.epoch;
            b[i + 3] = p.result.code();
            i += 4;
        }
        i
    }
}

impl std::hash::Hash for State {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut b = [0u8; PACKED_LEN];
        let used = self.pack_into(&mut b);
        state.write(&b[..used]);
    }
}
