//! Scenario tests for the fixed leadership lifecycle of FLINK-39704 (apache/flink PR
//! 28201): the tests the fix names, and orderings A1, A2 and B end to end through the
//! runner, the dispatcher and the HA stores.

use steadfast::leadership::{
    DispatcherEffect, Effect, Event, Harness, HarnessEffect, JobId, JobResultEntry, JobResultStore,
    JobStatus, Process, ProcessEffect, ProcessEvent, ProcessProjection, ProcessResult,
    ProcessState, Runner, RunnerResult, RunnerState, Session,
};

const JOB: JobId = JobId(1);
const ALL: [JobStatus; 3] = [JobStatus::Failed, JobStatus::Finished, JobStatus::Canceled];

/// A dispatcher leader with the job submitted and its first process started.
fn running(auto_answer: bool) -> (Harness, Session) {
    let mut d = Harness::new(JOB, auto_answer);
    d.dispatcher_gain_leadership().unwrap();
    assert_eq!(
        d.submit_job().unwrap(),
        vec![
            HarnessEffect::Dispatcher(DispatcherEffect::PutJobGraph { job: JOB }),
            HarnessEffect::Dispatcher(DispatcherEffect::StartRunner { job: JOB }),
        ]
    );
    let s = d.grant().unwrap();
    if !auto_answer {
        d.answer_query().unwrap();
        d.answer_query().unwrap();
    }
    assert_eq!(
        d.projection().processes,
        vec![ProcessProjection {
            session: s,
            state: ProcessState::Running,
            result: None
        }]
    );
    (d, s)
}

fn runner_effects(effects: &[HarnessEffect]) -> Vec<Effect> {
    effects
        .iter()
        .filter_map(|e| match e {
            HarnessEffect::Runner(fx) => Some(*fx),
            HarnessEffect::Dispatcher(_) => None,
        })
        .collect()
}

fn started_processes(effects: &[HarnessEffect]) -> usize {
    runner_effects(effects)
        .iter()
        .filter(|e| matches!(e, Effect::StartProcess { .. }))
        .count()
}

/// The dispatcher fails over: it loses leadership (closing the runner) and gains it
/// again, recovering whatever it finds. Returns every effect.
fn fail_over(d: &mut Harness) -> Vec<HarnessEffect> {
    let mut all = d.dispatcher_lose_leadership().unwrap();
    all.extend(d.dispatcher_gain_leadership().unwrap());
    all
}

/// Asserts the fixed outcome: the terminal status reported, global cleanup done, and
/// nothing recovered by the next dispatcher leader.
fn assert_cleaned_and_not_recovered(d: &mut Harness, status: JobStatus) {
    let p = d.projection();
    assert_eq!(p.runner_result, Some(RunnerResult::Terminal(status)));
    assert_eq!(p.pending_terminal, None);
    assert!(!p.job_graph_present);
    assert_eq!(p.job_result_entry, JobResultEntry::Clean);
    assert_eq!(d.environment().results.status(JOB), Some(status));
    let processes_before = p.processes.len();
    let epoch = p.dispatcher_epoch;
    if d.dispatcher().is_leader() {
        d.dispatcher_lose_leadership().unwrap();
    }
    let fx = d.dispatcher_gain_leadership().unwrap();
    let epoch_read = DispatcherEffect::RecoverJobs { epoch: epoch + 1 };
    assert_eq!(
        fx,
        vec![HarnessEffect::Dispatcher(epoch_read)],
        "recovered something"
    );
    let p = d.projection();
    assert_eq!(p.dispatcher_epoch, epoch + 1);
    assert_eq!(p.runners_started, 1);
    assert_eq!(p.processes.len(), processes_before);
}

#[test]
fn terminal_result_published_during_process_close_wins_over_not_finished() {
    // Process level, as in the fix's process test: service termination held open.
    let mut p = Process::new(Session(1));
    assert_eq!(
        p.handle(ProcessEvent::Close).unwrap(),
        vec![ProcessEffect::CloseService]
    );
    assert_eq!(p.result(), None);
    assert_eq!(
        p.handle(ProcessEvent::TerminalSignal(JobStatus::Failed))
            .unwrap(),
        vec![ProcessEffect::ResultCompleted(ProcessResult::Terminal(
            JobStatus::Failed
        ))]
    );
    assert_eq!(
        p.handle(ProcessEvent::ServiceTerminated).unwrap(),
        vec![ProcessEffect::Terminated]
    );
    assert_eq!(p.result(), Some(ProcessResult::Terminal(JobStatus::Failed)));

    // And through the runner: the result reaches the runner as FAILED.
    let (mut d, s) = running(true);
    let fx = d.revoke().unwrap();
    assert_eq!(
        runner_effects(&fx),
        vec![Effect::CloseProcess { session: s }]
    );
    let fx = d
        .runner_event(Event::TerminalSignalDelivered {
            session: s,
            status: JobStatus::Failed,
        })
        .unwrap();
    assert_eq!(
        runner_effects(&fx),
        vec![Effect::ForwardScheduled { session: s }]
    );
    d.runner_event(Event::ProcessServiceTerminated { session: s })
        .unwrap();
    d.runner_event(Event::ForwardCallback { session: s })
        .unwrap();
    assert_eq!(
        d.projection().processes[0].result,
        Some(ProcessResult::Terminal(JobStatus::Failed))
    );
    let fx = d.dispatcher_lose_leadership().unwrap();
    assert_eq!(
        runner_effects(&fx),
        vec![
            Effect::CompleteResult {
                value: RunnerResult::Terminal(JobStatus::Failed)
            },
            Effect::RunnerTerminated
        ]
    );
    assert_cleaned_and_not_recovered(&mut d, JobStatus::Failed);
}

#[test]
fn runner_close_flushes_terminal_result_cached_after_revoke() {
    let mut r = Runner::new(JOB);
    let s = Session(1);
    r.handle(Event::LeadershipGranted { session: s }).unwrap();
    r.handle(Event::JobResultStoreAnswered { has_entry: false })
        .unwrap();
    r.handle(Event::LeadershipConfirmed {
        session: s,
        held: true,
    })
    .unwrap();
    assert_eq!(
        r.handle(Event::LeadershipRevoked).unwrap(),
        vec![Effect::CloseProcess { session: s }]
    );
    // Revoke kept the leader id, so the late terminal completion still matches.
    assert_eq!(r.current_process_leader(), Some(s));
    r.handle(Event::TerminalSignalDelivered {
        session: s,
        status: JobStatus::Finished,
    })
    .unwrap();
    assert_eq!(
        r.handle(Event::ForwardCallback { session: s }).unwrap(),
        vec![Effect::ConfirmLeadership { session: s }]
    );
    assert_eq!(r.pending_terminal(), Some(JobStatus::Finished));
    assert_eq!(
        r.handle(Event::LeadershipConfirmed {
            session: s,
            held: false
        })
        .unwrap(),
        vec![]
    );
    assert_eq!(r.result(), None);
    r.handle(Event::ProcessServiceTerminated { session: s })
        .unwrap();
    assert_eq!(
        r.handle(Event::CloseRequested).unwrap(),
        vec![
            Effect::CompleteResult {
                value: RunnerResult::Terminal(JobStatus::Finished)
            },
            Effect::RunnerTerminated
        ]
    );
    assert_eq!(r.state(), RunnerState::Stopped);
    assert_eq!(
        r.result(),
        Some(RunnerResult::Terminal(JobStatus::Finished))
    );
    assert_eq!(r.pending_terminal(), None);
}

#[test]
fn regrant_flushes_terminal_result_observed_after_revoke_and_starts_no_process() {
    let (mut d, s1) = running(true);
    d.revoke().unwrap();
    d.runner_event(Event::TerminalSignalDelivered {
        session: s1,
        status: JobStatus::Canceled,
    })
    .unwrap();
    d.runner_event(Event::ForwardCallback { session: s1 })
        .unwrap();
    assert_eq!(d.projection().pending_terminal, Some(JobStatus::Canceled));
    d.runner_event(Event::ProcessServiceTerminated { session: s1 })
        .unwrap();
    let s2 = d.elect().unwrap();
    assert_eq!(s2, Session(2));
    let fx = d.deliver_election().unwrap();
    assert_eq!(started_processes(&fx), 0);
    // The grant checks the store and its leadership, as for creating a process, then
    // flushes while the runner still runs; the dispatcher then cleans up and closes
    // the runner, whose process has terminated already.
    assert_eq!(
        fx,
        vec![
            HarnessEffect::Runner(Effect::QueryJobResultStore),
            HarnessEffect::Runner(Effect::ConfirmLeadership { session: s2 }),
            HarnessEffect::Runner(Effect::CompleteResult {
                value: RunnerResult::Terminal(JobStatus::Canceled)
            }),
            // Global cleanup is three store requests, each sent once the one before
            // it was answered; the runner's close runs meanwhile.
            HarnessEffect::Dispatcher(DispatcherEffect::WriteDirtyEntry {
                job: JOB,
                status: JobStatus::Canceled
            }),
            HarnessEffect::Dispatcher(DispatcherEffect::CloseRunner { job: JOB }),
            HarnessEffect::Dispatcher(DispatcherEffect::RemoveJobGraph { job: JOB }),
            HarnessEffect::Runner(Effect::RunnerTerminated),
            HarnessEffect::Dispatcher(DispatcherEffect::MarkEntryClean { job: JOB }),
            HarnessEffect::Dispatcher(DispatcherEffect::GlobalCleanup {
                job: JOB,
                status: JobStatus::Canceled
            }),
        ]
    );
    let p = d.projection();
    assert_eq!(p.runner_state, Some(RunnerState::Stopped));
    assert_eq!(p.processes.len(), 1);
    assert_eq!(p.current_process_leader, Some(s1));
    assert_cleaned_and_not_recovered(&mut d, JobStatus::Canceled);
}

#[test]
fn terminal_observed_before_revoke_then_close_yields_that_status() {
    for status in ALL {
        let (mut d, s) = running(true);
        // The process result completes while leader; the callback has not run yet.
        d.runner_event(Event::TerminalSignalDelivered { session: s, status })
            .unwrap();
        d.revoke().unwrap();
        d.runner_event(Event::ProcessServiceTerminated { session: s })
            .unwrap();
        let fx = d
            .runner_event(Event::ForwardCallback { session: s })
            .unwrap();
        assert_eq!(
            runner_effects(&fx),
            vec![Effect::ConfirmLeadership { session: s }],
            "{status:?}"
        );
        assert_eq!(d.projection().pending_terminal, Some(status));
        assert_eq!(d.projection().runner_result, None);
        let fx = d.dispatcher_lose_leadership().unwrap();
        assert_eq!(
            runner_effects(&fx),
            vec![
                Effect::CompleteResult {
                    value: RunnerResult::Terminal(status)
                },
                Effect::RunnerTerminated
            ],
            "{status:?}"
        );
        assert_eq!(d.projection().runner_state, Some(RunnerState::Stopped));
        assert_cleaned_and_not_recovered(&mut d, status);
    }
}

#[test]
fn close_with_no_terminal_result_yields_suspended_and_the_job_is_recovered() {
    let (mut d, s) = running(true);
    let fx = d.dispatcher_lose_leadership().unwrap();
    assert_eq!(
        fx,
        vec![
            HarnessEffect::Dispatcher(DispatcherEffect::CloseRunner { job: JOB }),
            HarnessEffect::Runner(Effect::CloseProcess { session: s }),
        ]
    );
    assert_eq!(d.projection().runner_result, None);
    let fx = d
        .runner_event(Event::ProcessServiceTerminated { session: s })
        .unwrap();
    assert_eq!(
        runner_effects(&fx),
        vec![Effect::ForwardScheduled { session: s }]
    );
    let fx = d
        .runner_event(Event::ForwardCallback { session: s })
        .unwrap();
    assert_eq!(
        fx,
        vec![
            HarnessEffect::Runner(Effect::CompleteResult {
                value: RunnerResult::Suspended
            }),
            HarnessEffect::Runner(Effect::RunnerTerminated),
            HarnessEffect::Dispatcher(DispatcherEffect::LocalCleanup { job: JOB }),
        ]
    );
    let p = d.projection();
    assert_eq!(p.processes[0].result, Some(ProcessResult::NotFinished));
    assert!(p.job_graph_present);
    assert_eq!(p.job_result_entry, JobResultEntry::None);
    let fx = d.dispatcher_gain_leadership().unwrap();
    assert_eq!(
        fx,
        vec![
            HarnessEffect::Dispatcher(DispatcherEffect::RecoverJobs { epoch: 2 }),
            HarnessEffect::Dispatcher(DispatcherEffect::StartRunner { job: JOB }),
        ]
    );
    assert_eq!(d.projection().runners_started, 2);
    // The recovered job gets a fresh session and a new process.
    let s2 = d.grant().unwrap();
    assert_eq!(s2, Session(2));
    assert_eq!(d.projection().processes.len(), 2);
}

#[test]
fn ordering_a1_callback_delayed_while_session_still_issued() {
    let (mut d, s) = running(true);
    d.runner_event(Event::TerminalSignalDelivered {
        session: s,
        status: JobStatus::Failed,
    })
    .unwrap();
    // The callback is delayed; the session is still issued at this point.
    assert_eq!(d.projection().issued_session, Some(s));
    assert_eq!(d.runner().unwrap().pending_forwards(), vec![s]);
    assert!(d.runner().unwrap().forward_scheduled(s));
    assert!(!d.runner().unwrap().forward_scheduled(Session(s.0 + 1)));
    d.revoke().unwrap();
    d.runner_event(Event::ProcessServiceTerminated { session: s })
        .unwrap();
    // Unpatched, the check fails here and FAILED is dropped; fixed, it is cached.
    d.runner_event(Event::ForwardCallback { session: s })
        .unwrap();
    assert_eq!(d.projection().pending_terminal, Some(JobStatus::Failed));
    // A regrant now must not start a process.
    d.elect().unwrap();
    let fx = d.deliver_election().unwrap();
    assert_eq!(started_processes(&fx), 0);
    assert_cleaned_and_not_recovered(&mut d, JobStatus::Failed);
}

#[test]
fn ordering_a2_result_reaches_running_process_after_election_revoked() {
    let (mut d, s) = running(false);
    // The election revokes; the runner has not been told yet.
    d.unelect().unwrap();
    assert_eq!(d.pending_election(), vec![Event::LeadershipRevoked]);
    assert_eq!(d.projection().processes[0].state, ProcessState::Running);
    d.runner_event(Event::TerminalSignalDelivered {
        session: s,
        status: JobStatus::Finished,
    })
    .unwrap();
    d.runner_event(Event::ForwardCallback { session: s })
        .unwrap();
    assert_eq!(
        d.pending_queries(),
        vec![steadfast::leadership::Query::Leadership(s)]
    );
    assert_eq!(
        d.next_query(),
        Some(steadfast::leadership::Query::Leadership(s))
    );
    assert_eq!(d.projection().pending_terminal, Some(JobStatus::Finished));
    let fx = d.answer_query().unwrap();
    assert!(runner_effects(&fx).is_empty(), "{fx:?}");
    assert_eq!(d.projection().runner_result, None);
    // Now the chain closes the process.
    let fx = d.deliver_election().unwrap();
    assert_eq!(
        runner_effects(&fx),
        vec![Effect::CloseProcess { session: s }]
    );
    d.runner_event(Event::ProcessServiceTerminated { session: s })
        .unwrap();
    let fx = fail_over(&mut d);
    assert!(fx.contains(&HarnessEffect::Dispatcher(
        DispatcherEffect::GlobalCleanup {
            job: JOB,
            status: JobStatus::Finished
        }
    )));
    assert_eq!(started_processes(&fx), 0);
    assert_eq!(d.projection().runners_started, 1);
    assert_cleaned_and_not_recovered(&mut d, JobStatus::Finished);
}

#[test]
fn ordering_b_revoke_lands_while_terminal_signal_in_flight() {
    for status in ALL {
        let (mut d, s) = running(true);
        // The scheduler decided `status`; its signal is still in flight.
        let fx = d.revoke().unwrap();
        assert_eq!(
            runner_effects(&fx),
            vec![Effect::CloseProcess { session: s }]
        );
        // Fix part 1: close left the process result open.
        assert_eq!(d.projection().processes[0].result, None);
        d.runner_event(Event::TerminalSignalDelivered { session: s, status })
            .unwrap();
        d.runner_event(Event::ProcessServiceTerminated { session: s })
            .unwrap();
        assert_eq!(
            d.projection().processes[0],
            ProcessProjection {
                session: s,
                state: ProcessState::Terminated,
                result: Some(ProcessResult::Terminal(status))
            }
        );
        d.runner_event(Event::ForwardCallback { session: s })
            .unwrap();
        // Fix part 2: cached although leadership is gone.
        assert_eq!(d.projection().pending_terminal, Some(status));
        let fx = fail_over(&mut d);
        assert_eq!(started_processes(&fx), 0);
        assert!(fx.contains(&HarnessEffect::Dispatcher(
            DispatcherEffect::GlobalCleanup { job: JOB, status }
        )));
        assert_cleaned_and_not_recovered(&mut d, status);
    }
}

#[test]
fn runner_close_while_terminal_signal_in_flight_reports_the_status() {
    let (mut d, s) = running(true);
    d.dispatcher_lose_leadership().unwrap();
    d.runner_event(Event::TerminalSignalDelivered {
        session: s,
        status: JobStatus::Failed,
    })
    .unwrap();
    d.runner_event(Event::ProcessServiceTerminated { session: s })
        .unwrap();
    // Stopped: the callback caches without asking for leadership, then close finishes.
    let fx = d
        .runner_event(Event::ForwardCallback { session: s })
        .unwrap();
    assert_eq!(
        runner_effects(&fx),
        vec![
            Effect::CompleteResult {
                value: RunnerResult::Terminal(JobStatus::Failed)
            },
            Effect::RunnerTerminated
        ]
    );
    assert_cleaned_and_not_recovered(&mut d, JobStatus::Failed);
}

#[test]
fn terminal_forwarded_while_leader_completes_the_job() {
    let (mut d, s) = running(true);
    d.runner_event(Event::TerminalSignalDelivered {
        session: s,
        status: JobStatus::Finished,
    })
    .unwrap();
    let fx = d
        .runner_event(Event::ForwardCallback { session: s })
        .unwrap();
    assert_eq!(
        fx,
        vec![
            HarnessEffect::Runner(Effect::ConfirmLeadership { session: s }),
            HarnessEffect::Runner(Effect::CompleteResult {
                value: RunnerResult::Terminal(JobStatus::Finished)
            }),
            HarnessEffect::Dispatcher(DispatcherEffect::WriteDirtyEntry {
                job: JOB,
                status: JobStatus::Finished
            }),
            // Done with the job, the dispatcher closes its runner and so its process.
            HarnessEffect::Dispatcher(DispatcherEffect::CloseRunner { job: JOB }),
            HarnessEffect::Dispatcher(DispatcherEffect::RemoveJobGraph { job: JOB }),
            HarnessEffect::Runner(Effect::CloseProcess { session: s }),
            HarnessEffect::Dispatcher(DispatcherEffect::MarkEntryClean { job: JOB }),
            HarnessEffect::Dispatcher(DispatcherEffect::GlobalCleanup {
                job: JOB,
                status: JobStatus::Finished
            }),
        ]
    );
    let p = d.projection();
    assert_eq!(p.runner_state, Some(RunnerState::Stopped));
    assert_eq!(p.pending_terminal, None);
    // A closing runner ignores revoke, and a leadership loss closes nothing more.
    assert_eq!(runner_effects(&d.revoke().unwrap()), vec![]);
    let fx = d.dispatcher_lose_leadership().unwrap();
    assert_eq!(runner_effects(&fx), vec![]);
    let fx = d
        .runner_event(Event::ProcessServiceTerminated { session: s })
        .unwrap();
    assert_eq!(runner_effects(&fx), vec![Effect::RunnerTerminated]);
    assert_cleaned_and_not_recovered(&mut d, JobStatus::Finished);
}

#[test]
fn initialization_failure_is_not_cached() {
    let (mut d, s) = running(true);
    d.revoke().unwrap();
    d.runner_event(Event::ProcessResultCompleted {
        session: s,
        value: ProcessResult::InitializationFailed,
    })
    .unwrap();
    d.runner_event(Event::ProcessServiceTerminated { session: s })
        .unwrap();
    d.runner_event(Event::ForwardCallback { session: s })
        .unwrap();
    assert_eq!(d.projection().pending_terminal, None);
    // The regrant starts a new process instead of flushing.
    let s2 = d.grant().unwrap();
    assert_eq!(d.projection().processes.len(), 2);
    assert_eq!(d.projection().current_process_leader, Some(s2));
}

#[test]
fn grant_with_job_result_entry_reports_job_already_done() {
    let mut r = Runner::new(JOB);
    let s = Session(5);
    r.handle(Event::LeadershipGranted { session: s }).unwrap();
    r.handle(Event::JobResultStoreAnswered { has_entry: true })
        .unwrap();
    assert_eq!(
        r.handle(Event::LeadershipConfirmed {
            session: s,
            held: true
        })
        .unwrap(),
        vec![Effect::CompleteResult {
            value: RunnerResult::JobAlreadyDone
        }]
    );
    assert_eq!(r.processes().count(), 0);
    assert_eq!(
        r.handle(Event::CloseRequested).unwrap(),
        vec![Effect::RunnerTerminated]
    );
}

#[test]
fn grant_whose_leadership_is_gone_starts_no_process() {
    let (mut d, _) = running(true);
    d.revoke().unwrap();
    d.runner_event(Event::ProcessServiceTerminated {
        session: Session(1),
    })
    .unwrap();
    d.runner_event(Event::ForwardCallback {
        session: Session(1),
    })
    .unwrap();
    let mut d2 = d.clone();
    // Grant issued and revoked by the election before the runner runs the grant.
    d2.elect().unwrap();
    d2.unelect().unwrap();
    let fx = d2.deliver_election().unwrap();
    assert_eq!(started_processes(&fx), 0);
    d2.deliver_election().unwrap();
    assert_eq!(d2.projection().processes.len(), 1);
    assert_eq!(d2.projection().runner_state, Some(RunnerState::Running));
}

#[test]
fn next_grant_waits_for_previous_process_and_its_forwarding() {
    let mut r = Runner::new(JOB);
    let (s1, s2) = (Session(1), Session(2));
    r.handle(Event::LeadershipGranted { session: s1 }).unwrap();
    r.handle(Event::JobResultStoreAnswered { has_entry: false })
        .unwrap();
    r.handle(Event::LeadershipConfirmed {
        session: s1,
        held: true,
    })
    .unwrap();
    r.handle(Event::LeadershipRevoked).unwrap();
    // Queued behind the revoke: nothing happens yet.
    assert_eq!(
        r.handle(Event::LeadershipGranted { session: s2 }).unwrap(),
        vec![]
    );
    assert_eq!(
        r.handle(Event::ProcessServiceTerminated { session: s1 })
            .unwrap(),
        vec![Effect::ForwardScheduled { session: s1 }]
    );
    // Still waiting: the forward of s1 has not settled.
    assert_eq!(
        r.handle(Event::ForwardCallback { session: s1 }).unwrap(),
        vec![Effect::ConfirmLeadership { session: s1 }]
    );
    assert_eq!(
        r.handle(Event::LeadershipConfirmed {
            session: s1,
            held: false
        })
        .unwrap(),
        vec![Effect::QueryJobResultStore]
    );
    r.handle(Event::JobResultStoreAnswered { has_entry: false })
        .unwrap();
    assert_eq!(
        r.handle(Event::LeadershipConfirmed {
            session: s2,
            held: true
        })
        .unwrap(),
        vec![Effect::StartProcess { session: s2 }]
    );
    assert_eq!(r.current_process_leader(), Some(s2));
}

#[test]
fn residual_window_signal_after_service_termination_is_lost() {
    // Characterises the environment assumption of the fix: a terminal signal that
    // reaches the process only after its service terminated cannot be saved.
    let (mut d, s) = running(true);
    d.revoke().unwrap();
    d.runner_event(Event::ProcessServiceTerminated { session: s })
        .unwrap();
    let fx = d
        .runner_event(Event::TerminalSignalDelivered {
            session: s,
            status: JobStatus::Failed,
        })
        .unwrap();
    assert!(fx.is_empty());
    d.runner_event(Event::ForwardCallback { session: s })
        .unwrap();
    fail_over(&mut d);
    let p = d.projection();
    assert_eq!(p.runners_started, 2);
    assert!(p.job_graph_present);
}

#[test]
fn events_effects_and_projection_round_trip_through_json() {
    let (mut d, s) = running(true);
    let event = Event::TerminalSignalDelivered {
        session: s,
        status: JobStatus::Canceled,
    };
    let json = serde_json::to_string(&event).unwrap();
    assert_eq!(serde_json::from_str::<Event>(&json).unwrap(), event);
    let effects = d.runner_event(event).unwrap();
    let json = serde_json::to_string(&effects).unwrap();
    assert_eq!(
        serde_json::from_str::<Vec<HarnessEffect>>(&json).unwrap(),
        effects
    );
    let p = d.projection();
    let json = serde_json::to_string(&p).unwrap();
    assert_eq!(
        serde_json::from_str::<steadfast::leadership::LeadershipProjection>(&json).unwrap(),
        p
    );
}
