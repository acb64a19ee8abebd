//! The structured events each model step makes the runtime emit: the expectation
//! [`check_log`](super::check_log) compares the collected log against.

use super::*;

/// Whether process `id` belongs to the runner the driver holds (the latest one), which
/// is the one the binding's events reach.
pub(crate) fn of_latest_runner(s: &State, id: u8) -> bool {
    let p = &s.processes[usize::from(id) - 1];
    // A crash took its runner with it: the driver holds none for it.
    !s.runner_killed && p.epoch == s.runner_epoch
}

/// Whether process `id` belongs to the old JobManager's runner, still stopping beside
/// the leader.
pub(crate) fn of_old_runner(s: &State, id: u8) -> bool {
    s.old.is_some() && s.processes[usize::from(id) - 1].epoch + 1 == s.epoch
}

/// The structured events the runtime must emit when the binding realises `action` at
/// `before`: the model takes it, or (`refused`) the model forbids it and the runtime
/// refuses it. Every expectation reads the model: its state before (settled, as the
/// runtime is), the action, and its settled state after.
pub fn expected_log(
    model: &Leadership,
    before: &State,
    action: &Action,
    refused: bool,
) -> Vec<LogRecord> {
    let mut out = Vec::new();
    expected_log_into(model, before, action, refused, &mut out);
    out
}

pub(crate) fn expected_log_into(
    model: &Leadership,
    before: &State,
    action: &Action,
    refused: bool,
    out: &mut Vec<LogRecord>,
) {
    out.clear();
    if refused {
        // The runtime took its own steps (closes) already.
        refusal_log(&settle(model, before), action, out);
        return;
    }
    match *action {
        // The election notices the issue or revoke at once; the runner sees it later.
        Action::GrantLeadership(s) => out.push(election_record("issue", s, "issued")),
        Action::RevokeLeadership(s) => out.push(election_record("revoke", s, "revoked")),
        // No runtime event.
        Action::DecideTerminal(_) | Action::CloseRunner => {}
        // The new leader asks the stores for its jobs; their answer is the recovery.
        Action::RecoverJob => {
            // A new dispatcher elsewhere fences the stores: they refuse the old one's
            // outstanding request.
            let b = settle(model, before);
            if model.fenced_result_store && model.leaves_old_stopping(&b) {
                if let Some(request) = cleanup_request(b.cleanup) {
                    out.push(refused_record(request, b.epoch));
                }
            }
            for event in [
                DispatcherEvent::LeadershipGained,
                DispatcherEvent::JobsRecovered {
                    epoch: 0,
                    jobs: Vec::new(),
                },
            ] {
                out.push(dispatcher_record(&event, before.epoch + 1, "applied"));
            }
        }
        Action::RemoveJobGraph => out.push(dispatcher_record(
            &DispatcherEvent::JobGraphRemoved { job: JOB },
            before.epoch,
            "applied",
        )),
        Action::MarkResultClean => out.push(dispatcher_record(
            &DispatcherEvent::EntryMarkedClean {
                job: JOB,
                status: JobStatus::Finished,
            },
            before.epoch,
            "applied",
        )),
        Action::CrashJobManager => out.push(crash_record(before.epoch)),
        Action::OldRemoveJobGraph => out.push(dispatcher_record(
            &DispatcherEvent::JobGraphRemoved { job: JOB },
            before.epoch - 1,
            "applied",
        )),
        Action::OldMarkResultClean => out.push(dispatcher_record(
            &DispatcherEvent::EntryMarkedClean {
                job: JOB,
                status: JobStatus::Finished,
            },
            before.epoch - 1,
            "applied",
        )),
        _ => step_log(model, before, action, out),
    }
}

/// The events that set up the model's initial situation ([`Runtime::started`]): the
/// dispatcher gains leadership and reads empty stores, then accepts the job's
/// submission once its JobGraph is stored.
pub fn start_log(init: &State) -> Vec<LogRecord> {
    [
        DispatcherEvent::LeadershipGained,
        DispatcherEvent::JobsRecovered {
            epoch: 1,
            jobs: Vec::new(),
        },
        DispatcherEvent::JobSubmitted { job: JOB },
        DispatcherEvent::JobGraphStored { job: JOB },
    ]
    .iter()
    .map(|event| dispatcher_record(event, init.epoch, "applied"))
    .collect()
}

/// The events a forbidden step produces when the runtime refuses it: the refusal of the
/// event the binding delivered, and nothing else.
pub(crate) fn refusal_log(before: &State, action: &Action, out: &mut Vec<LogRecord>) {
    // After a crash the driver holds no runner, nor when the latest one stops in the old
    // JobManager beside a leader that started none: it refuses every runner event
    // before any machine sees it.
    // Events about the old JobManager's processes reach its runner.
    let runner_gone = before.runner_killed || (before.old.is_some() && !before.has_runner);
    match *action {
        Action::RunGrant(_) | Action::RunRevoke if runner_gone => {}
        Action::TerminateService(id) | Action::CheckLeadershipInForward(id)
            if runner_gone && !of_old_runner(before, id) => {}
        Action::RunGrant(s) => out.push(runner_refusal(Event::LeadershipGranted {
            session: Session(u32::from(s)),
        })),
        Action::RunRevoke => out.push(runner_refusal(Event::LeadershipRevoked)),
        Action::TerminateService(id) => {
            let session = process_session(before, id);
            // A process of the driver's runner (or the old one's) refuses it itself
            // first; a process of a replaced runner is unknown to the runner.
            if of_latest_runner(before, id) || of_old_runner(before, id) {
                out.push(process_record(
                    ProcessEvent::ServiceTerminated,
                    session,
                    REJECTED,
                ));
            }
            out.push(runner_refusal(Event::ProcessServiceTerminated { session }));
        }
        Action::CheckLeadershipInForward(id) => out.push(runner_refusal(Event::ForwardCallback {
            session: process_session(before, id),
        })),
        Action::DispatcherFailover => out.push(dispatcher_record(
            &DispatcherEvent::LeadershipLost,
            before.epoch,
            REJECTED,
        )),
        // The driver refuses a third leader while an old one still stops, before any
        // machine sees it.
        Action::RecoverJob
            if before.old.is_some() && before.dispatcher != DispatcherState::Leading => {}
        Action::RecoverJob => out.push(dispatcher_record(
            &DispatcherEvent::LeadershipGained,
            before.epoch,
            REJECTED,
        )),
        // The election refuses before it notices anything, and the driver refuses to
        // deliver a runner result or answer a store request it does not hold before any
        // machine sees it; the other actions are never offered as probes.
        _ => {}
    }
}

/// Processes the step closed: Running before, Closing after.
pub(crate) fn closes(b: &State, a: &State, out: &mut Vec<LogRecord>) {
    for (p, q) in b.processes[..usize::from(b.process_count)]
        .iter()
        .zip(&a.processes)
    {
        if p.state == model::ProcessState::Running && q.state == model::ProcessState::Closing {
            out.push(process_record(
                ProcessEvent::Close,
                Session(u32::from(p.session)),
                "closing",
            ));
        }
    }
}

/// The runner and process events of an enabled step, then what the runtime does by
/// itself in the same call: the dispatcher handling a runner result that became set,
/// the runner's close it requests, the runner's close completing.
pub(crate) fn step_log(
    model: &Leadership,
    before: &State,
    action: &Action,
    out: &mut Vec<LogRecord>,
) {
    let b = settle(model, before);
    let next = model
        .next_state(before, *action)
        .expect("the model's enabled actions always have a next state");
    let a = settle(model, &next);
    // Steps on the old JobManager's processes reach its runner, which is closed.
    let old_process = |id| of_old_runner(&b, id);
    match *action {
        Action::RunGrant(s) => grant_log(model, &b, s, out),
        Action::RunRevoke => {
            closes(&b, &a, out);
            out.push(runner_record(
                Event::LeadershipRevoked,
                RunnerOutcome::Queued,
            ));
        }
        // A process whose runner is gone receives nothing.
        Action::DeliverTerminalSignal(id) if of_latest_runner(&b, id) || old_process(id) => {
            signal_log(&b, id, out)
        }
        Action::CheckLeadershipInForward(id) if old_process(id) => {
            old_forward_log(&b, &next, id, out)
        }
        Action::CheckLeadershipInForward(id) => forward_log(&b, &a, id, out),
        Action::TerminateService(id) => terminate_log(&b, id, out),
        Action::FailInitialization | Action::FailJobMaster => {
            let (session, value) = failure(&b, action);
            out.push(process_record(
                ProcessEvent::Completed(value),
                session,
                "completed",
            ));
            out.push(runner_record(
                Event::ProcessResultCompleted { session, value },
                RunnerOutcome::ForwardScheduled,
            ));
        }
        Action::DispatcherFailover => out.push(dispatcher_record(
            &DispatcherEvent::LeadershipLost,
            b.epoch,
            "applied",
        )),
        Action::HandleRunnerResult => out.push(dispatcher_record(
            &DispatcherEvent::RunnerCompleted {
                job: JOB,
                result: runner_result(b.runner_result).unwrap_or(RunnerResult::Suspended),
            },
            b.epoch,
            "applied",
        )),
        Action::OldDispatcherHandlesResult => old_result_log(model, &b, out),
        _ => {}
    }
    settled_log(&b, &a, action, out);
}

/// `RunGrant(s)`: the runner queues the grant; a running runner asks the result store,
/// then whether session `s` is the issued one, and acts on the answer.
fn grant_log(model: &Leadership, b: &State, s: u8, out: &mut Vec<LogRecord>) {
    let session = Session(u32::from(s));
    out.push(runner_record(
        Event::LeadershipGranted { session },
        RunnerOutcome::Queued,
    ));
    // A runner that is not running drops the grant without asking anything.
    if b.runner != model::RunnerState::Running {
        return;
    }
    let has_entry = b.job_result != model::JobResultEntry::Absent;
    out.push(runner_record(
        Event::JobResultStoreAnswered { has_entry },
        RunnerOutcome::CheckingLeadership,
    ));
    let held = b.issued == s;
    let outcome = if !held {
        RunnerOutcome::GrantSkippedNotLeader
    } else if has_entry {
        RunnerOutcome::JobAlreadyDone
    } else if b.pending_terminal.is_some() && model.design.runner_fix() {
        RunnerOutcome::FlushedOnGrant
    } else {
        RunnerOutcome::ProcessStarted
    };
    out.push(runner_record(
        Event::LeadershipConfirmed { session, held },
        outcome,
    ));
}

/// `DeliverTerminalSignal(id)` to a process whose runner is there: the process completes
/// its result unless it has one, and the runner schedules the forward if it did.
fn signal_log(b: &State, id: u8, out: &mut Vec<LogRecord>) {
    let session = process_session(b, id);
    let process = &b.processes[usize::from(id) - 1];
    let status = status(
        process
            .decision
            .expect("a signal follows its scheduler's decision"),
    );
    let completes = process.result == Outcome::Unset;
    out.push(process_record(
        ProcessEvent::TerminalSignal(status),
        session,
        if completes {
            "completed"
        } else {
            "already_completed"
        },
    ));
    out.push(runner_record(
        Event::TerminalSignalDelivered { session, status },
        if completes {
            RunnerOutcome::ForwardScheduled
        } else {
            RunnerOutcome::Ignored
        },
    ));
}

/// `CheckLeadershipInForward(id)` of the old JobManager's process: its closed runner
/// caches the result or drops it.
fn old_forward_log(b: &State, next: &State, id: u8, out: &mut Vec<LogRecord>) {
    let session = process_session(b, id);
    let cache = |s: &State| s.old.and_then(|o| o.pending_terminal);
    // Read before the close the forward may let complete, which spends the
    // cache (and may retire the old JobManager).
    let cached = cache(b).is_none() && cache(next).is_some();
    out.push(runner_record(
        Event::ForwardCallback { session },
        if cached {
            RunnerOutcome::Cached
        } else {
            RunnerOutcome::DroppedNotRunning
        },
    ));
}

/// `CheckLeadershipInForward(id)` of the driver's runner: the forward caches the result
/// or not, and a running runner asks whether the process's session is the issued one.
fn forward_log(b: &State, a: &State, id: u8, out: &mut Vec<LogRecord>) {
    let session = process_session(b, id);
    let running = b.runner == model::RunnerState::Running;
    // The forward caches exactly when the runner's cached result goes from unset
    // to set.
    let cached = b.pending_terminal.is_none() && a.pending_terminal.is_some();
    let outcome = match (cached, running) {
        (true, true) => RunnerOutcome::CachedCheckingLeadership,
        (false, true) => RunnerOutcome::CheckingLeadership,
        (true, false) => RunnerOutcome::Cached,
        (false, false) => RunnerOutcome::DroppedNotRunning,
    };
    out.push(runner_record(Event::ForwardCallback { session }, outcome));
    // A running runner asks whether the session is the issued one.
    if running {
        let held = b.issued == b.processes[usize::from(id) - 1].session;
        out.push(runner_record(
            Event::LeadershipConfirmed { session, held },
            if held {
                RunnerOutcome::Forwarded
            } else {
                RunnerOutcome::DroppedNotLeader
            },
        ));
    }
}

/// `TerminateService(id)`: the process ends (completing NotFinished without a result
/// yet), and the runner schedules the forward if it completed.
fn terminate_log(b: &State, id: u8, out: &mut Vec<LogRecord>) {
    let session = process_session(b, id);
    // Without a result yet, the process completes it NotFinished as it ends.
    let completes = b.processes[usize::from(id) - 1].result == Outcome::Unset;
    out.push(process_record(
        ProcessEvent::ServiceTerminated,
        session,
        if completes {
            "terminated_not_finished"
        } else {
            "terminated"
        },
    ));
    out.push(runner_record(
        Event::ProcessServiceTerminated { session },
        if completes {
            RunnerOutcome::ForwardScheduled
        } else {
            RunnerOutcome::ProcessTerminated
        },
    ));
}

/// `OldDispatcherHandlesResult`: the old dispatcher handles its runner's result and
/// writes the dirty entry (if missing), or the fenced stores refuse its request.
fn old_result_log(model: &Leadership, b: &State, out: &mut Vec<LogRecord>) {
    let result = b.old.map_or(Outcome::Unset, |o| o.result);
    let epoch = b.epoch - 1;
    out.push(dispatcher_record(
        &DispatcherEvent::RunnerCompleted {
            job: JOB,
            result: runner_result(result).unwrap_or(RunnerResult::Suspended),
        },
        epoch,
        "applied",
    ));
    // A submitted job's initialisation failure is written as FAILED, as a terminal
    // status is.
    let written_status = match result {
        Outcome::Terminal(decided) => Some(decided),
        Outcome::InitFailed if epoch == 1 => Some(model::Status::Failed),
        _ => None,
    };
    match (result, written_status) {
        // Written if missing: an entry already there stays, and the answer is the same.
        (_, Some(_)) if !model.fenced_result_store => {
            out.push(dispatcher_record(
                &DispatcherEvent::DirtyEntryWritten { job: JOB },
                epoch,
                "applied",
            ));
        }
        (_, Some(decided)) => out.push(refused_record(
            DispatcherEffect::WriteDirtyEntry {
                job: JOB,
                status: status(decided),
            },
            epoch,
        )),
        (Outcome::AlreadyDone, _) if model.fenced_result_store => out.push(refused_record(
            DispatcherEffect::RemoveJobGraph { job: JOB },
            epoch,
        )),
        _ => {}
    }
}

/// Whether `action` at `b` is the old dispatcher's fatal error, which ends the old
/// JobManager: a JobMaster failure, or a recovered job's initialisation failure.
fn old_exits(b: &State, action: &Action) -> bool {
    let result = b.old.map_or(Outcome::Unset, |o| o.result);
    *action == Action::OldDispatcherHandlesResult
        && (result == Outcome::JobMasterFailed || (result == Outcome::InitFailed && b.epoch > 2))
}

/// What the runtime does by itself after the step's own events, from the settled states
/// before (`b`) and after (`a`): the old runner's close completing, a crash, the runner's
/// close and termination, the dirty entry written for a handled result.
fn settled_log(b: &State, a: &State, action: &Action, out: &mut Vec<LogRecord>) {
    // The old runner's close completes once its process terminated and its forward
    // settled: its dispatcher hears of it.
    if let Some(o) = b.old {
        if !o.terminated && a.old.is_none_or(|ao| ao.terminated) && !old_exits(b, action) {
            out.push(dispatcher_record(
                &DispatcherEvent::RunnerTerminated { job: JOB },
                b.epoch - 1,
                "applied",
            ));
        }
    }
    // A fatal error exits the JobManager process inside the step: nothing follows.
    if b.dispatcher != DispatcherState::Crashed && a.dispatcher == DispatcherState::Crashed {
        out.push(crash_record(b.epoch));
        return;
    }
    if !b.has_runner || a.epoch != b.epoch {
        return;
    }
    let close_requested =
        b.runner != model::RunnerState::Stopped && a.runner == model::RunnerState::Stopped;
    let terminated = !b.runner_terminated && a.runner_terminated;
    // Only a lost leadership and a handled result close the runner; a close that
    // completes at once reports the runner terminated to the dispatcher. A result the
    // runner completes waits on its way to the dispatcher (`HandleRunnerResult`).
    if close_requested {
        closes(b, a, out);
        out.push(runner_record(
            Event::CloseRequested,
            if terminated {
                RunnerOutcome::Terminated
            } else {
                RunnerOutcome::Stopping
            },
        ));
    }
    if terminated {
        out.push(dispatcher_record(
            &DispatcherEvent::RunnerTerminated { job: JOB },
            b.epoch,
            "applied",
        ));
    }
    // The dirty entry the dispatcher asked for while handling a terminal result is
    // written (if missing: an entry already there stays), and answered, within the
    // same step.
    let written = b.job_result == model::JobResultEntry::Absent
        && a.job_result == model::JobResultEntry::Dirty;
    if *action == Action::HandleRunnerResult
        && (written || matches!(b.runner_result, Outcome::Terminal(_)))
    {
        out.push(dispatcher_record(
            &DispatcherEvent::DirtyEntryWritten { job: JOB },
            b.epoch,
            "applied",
        ));
    }
}
