//! What both sides are compared in: the runner, the processes, the dispatcher and the
//! stores as an [`Observation`], filled from the model's state or from the runtime, and
//! the conversions between the model's values and the runtime's.

use super::*;

/// One process as both sides observe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ProcessView {
    /// The leader session that created it.
    pub session: Session,
    /// Running, Closing or Terminated.
    pub state: ProcessState,
    /// Its set-once result.
    pub result: Option<ProcessResult>,
    /// Its result completed and the runner's forward callback has not run yet.
    pub forward_pending: bool,
}

/// The runner of the current dispatcher epoch as both sides observe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RunnerView {
    /// Running, JobCompleted or Stopped.
    pub state: RunnerState,
    /// The set-once runner result the dispatcher consumes.
    pub result: Option<RunnerResult>,
    /// A cached terminal status not yet published as the runner result.
    pub pending_terminal: Option<JobStatus>,
    /// The session of the runner's current process (kept across revoke).
    pub current_process_leader: Option<Session>,
    /// The runner finished closing.
    pub terminated: bool,
    /// The dispatcher consumed the runner's result.
    pub result_handled: bool,
}

/// The old JobManager still stopping beside the leader (`dispatcher-overlap`), as both
/// sides observe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OldView {
    /// Its runner (closed).
    pub runner: RunnerView,
    /// The runner's result is on its way to the old dispatcher.
    pub result_in_flight: bool,
    /// The old dispatcher's store request waiting for an answer, if any.
    pub store_request: Option<DispatcherEffect>,
    /// How many of its store requests wait.
    pub store_requests: usize,
}

/// The observable value both sides produce after every step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Observation {
    /// The session the job's leader election currently issues.
    pub issued_session: Option<Session>,
    /// The runner of the current epoch; `None` when this epoch's dispatcher recovered
    /// nothing.
    pub runner: Option<RunnerView>,
    /// Every process of every runner, in creation order.
    pub processes: Vec<ProcessView>,
    /// The JobGraph store holds the job.
    pub job_graph_present: bool,
    /// The job's JobResultStore entry.
    pub job_result_entry: JobResultEntry,
    /// Dispatcher epoch (leadership gains), from 1.
    pub dispatcher_epoch: u32,
    /// The dispatcher of this epoch is still leader.
    pub dispatcher_leader: bool,
    /// The dispatcher counts the job's runner as live (started, not terminated).
    pub live_runner: bool,
    /// Runners the dispatcher started, over all epochs.
    pub runners_started: u32,
    /// The runner's result is on its way to the dispatcher, not yet handled.
    pub result_in_flight: bool,
    /// The dispatcher's store request waiting for an answer after the step, if any:
    /// the next step of global cleanup.
    pub store_request: Option<DispatcherEffect>,
    /// How many store requests wait (at most one in this single-job model).
    pub store_requests: usize,
    /// The old JobManager, while it stops beside the leader.
    pub old: Option<OldView>,
    /// Where the structured log the runtime emitted in the step that led here disagrees
    /// with the log the model's step implies, one `; `-separated item per difference;
    /// empty when they agree, and always empty on the model side ([`check_log`]).
    pub log: String,
}

pub(super) fn status(s: Status) -> JobStatus {
    match s {
        Status::Finished => JobStatus::Finished,
        Status::Failed => JobStatus::Failed,
        Status::Canceled => JobStatus::Canceled,
    }
}

pub(super) fn process_result(o: Outcome) -> Option<ProcessResult> {
    match o {
        Outcome::Unset => None,
        Outcome::Terminal(s) => Some(ProcessResult::Terminal(status(s))),
        Outcome::InitFailed => Some(ProcessResult::InitializationFailed),
        Outcome::JobMasterFailed => Some(ProcessResult::JobMasterFailed),
        // A process's result is never SUSPENDED or "already done" in the model: those
        // are the runner's.
        Outcome::NotFinished | Outcome::Suspended | Outcome::AlreadyDone => {
            Some(ProcessResult::NotFinished)
        }
    }
}

pub(super) fn runner_result(o: Outcome) -> Option<RunnerResult> {
    match o {
        Outcome::Unset => None,
        Outcome::Terminal(s) => Some(RunnerResult::Terminal(status(s))),
        Outcome::Suspended => Some(RunnerResult::Suspended),
        Outcome::NotFinished => Some(RunnerResult::NotFinished),
        Outcome::AlreadyDone => Some(RunnerResult::JobAlreadyDone),
        Outcome::InitFailed => Some(RunnerResult::InitializationFailed),
        Outcome::JobMasterFailed => Some(RunnerResult::JobMasterFailed),
    }
}

/// The current process's session and the value its JobMaster failure completes its
/// result with (`FailInitialization`, `FailJobMaster`).
pub(super) fn failure(before: &State, action: &Action) -> (Session, ProcessResult) {
    let value = if *action == Action::FailInitialization {
        ProcessResult::InitializationFailed
    } else {
        ProcessResult::JobMasterFailed
    };
    (process_session(before, before.current), value)
}

pub(super) fn session(s: u8) -> Option<Session> {
    (s != 0).then_some(Session(u32::from(s)))
}

pub(super) fn process_session(state: &State, id: u8) -> Session {
    Session(u32::from(state.processes[usize::from(id) - 1].session))
}

/// The model side of the observation, of a settled state of `design`.
pub(super) fn observe_model(s: &State, design: Design) -> Observation {
    let mut out = Observation::blank();
    observe_model_into(s, design, &mut out);
    out
}

/// [`observe_model`] written over `out`, reusing the room of its list and text.
pub(super) fn observe_model_into(s: &State, design: Design, out: &mut Observation) {
    let mut processes = std::mem::take(&mut out.processes);
    processes.clear();
    processes.extend(
        s.processes[..usize::from(s.process_count)]
            .iter()
            .map(|p| ProcessView {
                session: Session(u32::from(p.session)),
                state: match p.state {
                    model::ProcessState::Running => ProcessState::Running,
                    model::ProcessState::Closing => ProcessState::Closing,
                    // The runtime keeps a killed process on record as terminated.
                    model::ProcessState::Terminated | model::ProcessState::Killed => {
                        ProcessState::Terminated
                    }
                },
                result: process_result(p.result),
                forward_pending: p.forward_pending,
            }),
    );
    let mut log = std::mem::take(&mut out.log);
    log.clear();
    let live = s.has_runner && !s.runner_terminated;
    let store_request = model_store_request(s);
    // The session of the runner's current process, which the runtime keeps as its
    // current process leader. Designs with the runner fix keep it in `current_leader`
    // too, and the `revoke-clears-leader` mutant clears that at a revoke; designs without
    // the fix keep none, and the runtime's (the fix's) is then the current process's.
    let current = (s.has_runner && s.current != 0)
        .then(|| process_session(s, s.current))
        .filter(|_| s.processes[usize::from(s.current) - 1].epoch == s.epoch)
        .filter(|_| !design.runner_fix() || s.current_leader != 0);
    *out = Observation {
        issued_session: session(s.issued).filter(|_| live),
        // A crashed JobManager's runner is gone; the runtime holds none.
        runner: (s.has_runner && !s.runner_killed).then(|| RunnerView {
            state: match s.runner {
                model::RunnerState::Running => RunnerState::Running,
                model::RunnerState::JobCompleted => RunnerState::JobCompleted,
                model::RunnerState::Stopped => RunnerState::Stopped,
            },
            result: runner_result(s.runner_result),
            // Once the result is set the cache is dead in the model; the runtime
            // clears it when it publishes.
            pending_terminal: s
                .pending_terminal
                .filter(|_| !s.runner_result.is_set())
                .map(status),
            current_process_leader: current,
            terminated: s.runner_terminated,
            result_handled: s.result_handled,
        }),
        processes,
        job_graph_present: s.job_graph,
        job_result_entry: match s.job_result {
            model::JobResultEntry::Absent => JobResultEntry::None,
            model::JobResultEntry::Dirty => JobResultEntry::Dirty,
            model::JobResultEntry::Clean => JobResultEntry::Clean,
        },
        dispatcher_epoch: u32::from(s.epoch),
        dispatcher_leader: s.dispatcher == DispatcherState::Leading,
        live_runner: live,
        runners_started: u32::from(s.runner_epoch),
        result_in_flight: s.has_runner && s.runner_result.is_set() && !s.result_handled,
        store_request,
        store_requests: usize::from(store_request.is_some()),
        old: s.old.map(|o| {
            let store_request = cleanup_request(o.cleanup);
            OldView {
                runner: RunnerView {
                    state: RunnerState::Stopped,
                    result: runner_result(o.result),
                    pending_terminal: o
                        .pending_terminal
                        .filter(|_| !o.result.is_set())
                        .map(status),
                    current_process_leader: (o.current != 0)
                        .then(|| process_session(s, o.current))
                        .filter(|_| !design.runner_fix() || o.current_leader != 0),
                    terminated: o.terminated,
                    result_handled: o.result_handled,
                },
                result_in_flight: o.result.is_set() && !o.result_handled,
                store_request,
                store_requests: usize::from(store_request.is_some()),
            }
        }),
        log,
    };
}

/// The store request the model's state has the current dispatcher wait on: the next
/// step of its global cleanup.
pub(super) fn model_store_request(s: &State) -> Option<DispatcherEffect> {
    cleanup_request(s.cleanup)
}

/// The store request a dispatcher at cleanup step `cleanup` waits on.
pub(super) fn cleanup_request(cleanup: Cleanup) -> Option<DispatcherEffect> {
    match cleanup {
        Cleanup::Idle => None,
        Cleanup::RemovingJobGraph => Some(DispatcherEffect::RemoveJobGraph { job: JOB }),
        Cleanup::MarkingClean => Some(DispatcherEffect::MarkEntryClean { job: JOB }),
    }
}

/// The runtime side of the observation.
pub fn observe_runtime(rt: &Runtime) -> Observation {
    let mut out = Observation::blank();
    observe_runtime_into(rt, &mut out);
    out
}

/// [`observe_runtime`] written over `out`, reusing the room of its list and text. It
/// reads the driver in place rather than through its projection, which would copy every
/// process.
pub(super) fn observe_runtime_into(rt: &Runtime, out: &mut Observation) {
    let d = &rt.driver;
    let env = d.environment();
    let latest = d.runner();
    let dispatcher = d.dispatcher();
    let runners_started = dispatcher.runners_started();
    let dispatcher_epoch = dispatcher.epoch();
    let mut processes = std::mem::take(&mut out.processes);
    processes.clear();
    // A retired process's session is looked up in the latest runner's forwards too, as
    // every process's was: sessions are never reused, so a hit would be a fault to show.
    let forward_pending = |session| latest.is_some_and(|r| r.forward_scheduled(session));
    processes.extend(d.retired_processes().iter().map(|q| ProcessView {
        session: q.session,
        state: q.state,
        result: q.result,
        forward_pending: forward_pending(q.session),
    }));
    if let Some(r) = d.old_runner() {
        processes.extend(r.processes().map(|q| ProcessView {
            session: q.session(),
            state: q.state(),
            result: q.result(),
            forward_pending: r.forward_scheduled(q.session()),
        }));
        // A crash of the leader retired later processes while these still run:
        // creation order is session order.
        processes.sort_by_key(|p| p.session);
    }
    if let Some(r) = latest {
        processes.extend(r.processes().map(|q| ProcessView {
            session: q.session(),
            state: q.state(),
            result: q.result(),
            forward_pending: r.forward_scheduled(q.session()),
        }));
    }
    let mut log = std::mem::take(&mut out.log);
    log.clone_from(&rt.log);
    *out = Observation {
        issued_session: env.issued,
        runner: latest
            .filter(|_| runners_started == dispatcher_epoch)
            .map(|r| RunnerView {
                state: r.state(),
                result: r.result(),
                pending_terminal: r.pending_terminal(),
                current_process_leader: r.current_process_leader(),
                terminated: r.is_terminated(),
                result_handled: dispatcher.result_received(JOB) == Some(true),
            }),
        processes,
        job_graph_present: env.graphs.contains(JOB),
        job_result_entry: env.results.entry(JOB),
        dispatcher_epoch,
        dispatcher_leader: dispatcher.is_leader(),
        live_runner: dispatcher.is_live(JOB) && dispatcher.live_count() == 1,
        runners_started,
        result_in_flight: d.next_runner_result().is_some(),
        store_request: d.store_requests().next().copied(),
        store_requests: d.store_requests().len(),
        old: d
            .old_runner()
            .zip(d.old_dispatcher())
            .map(|(r, od)| OldView {
                runner: RunnerView {
                    state: r.state(),
                    result: r.result(),
                    pending_terminal: r.pending_terminal(),
                    current_process_leader: r.current_process_leader(),
                    terminated: r.is_terminated(),
                    result_handled: od.result_received(JOB) == Some(true),
                },
                result_in_flight: d.next_old_runner_result().is_some(),
                store_request: d.old_store_requests().next().copied(),
                store_requests: d.old_store_requests().count(),
            }),
        log,
    };
}

impl Observation {
    /// An observation to fill ([`observe_model_into`], [`observe_runtime_into`]).
    pub(super) fn blank() -> Observation {
        Observation {
            issued_session: None,
            runner: None,
            processes: Vec::new(),
            job_graph_present: false,
            job_result_entry: JobResultEntry::None,
            dispatcher_epoch: 0,
            dispatcher_leader: false,
            live_runner: false,
            runners_started: 0,
            result_in_flight: false,
            store_request: None,
            store_requests: 0,
            old: None,
            log: String::new(),
        }
    }
}
