//! Refused event sequences: each returns a typed error and leaves the machine unchanged
//! (FLINK-39704, apache/flink PR 28201, fixed runner and process).

use steadfast::leadership::{
    Effect, Event, Harness, JobId, JobStatus, LeadershipError, ProcessResult, Runner, Session,
};

const JOB: JobId = JobId(3);
const S1: Session = Session(1);

/// Applies `event`, expects `expected`, and checks that neither the projection nor the
/// full runner state changed.
fn refused(r: &mut Runner, event: Event, expected: LeadershipError) {
    let projection = r.projection();
    let whole = r.clone();
    assert_eq!(r.handle(event), Err(expected), "{event:?}");
    assert_eq!(r.projection(), projection, "{event:?}");
    assert_eq!(*r, whole, "{event:?}");
}

fn with_process() -> Runner {
    let mut r = Runner::new(JOB);
    r.handle(Event::LeadershipGranted { session: S1 }).unwrap();
    r.handle(Event::JobResultStoreAnswered { has_entry: false })
        .unwrap();
    assert_eq!(
        r.handle(Event::LeadershipConfirmed {
            session: S1,
            held: true
        })
        .unwrap(),
        vec![Effect::StartProcess { session: S1 }]
    );
    r
}

#[test]
fn result_for_an_unknown_process() {
    let mut r = with_process();
    let s9 = Session(9);
    refused(
        &mut r,
        Event::ProcessResultCompleted {
            session: s9,
            value: ProcessResult::Terminal(JobStatus::Finished),
        },
        LeadershipError::UnknownProcess { session: s9 },
    );
    refused(
        &mut r,
        Event::TerminalSignalDelivered {
            session: s9,
            status: JobStatus::Failed,
        },
        LeadershipError::UnknownProcess { session: s9 },
    );
    refused(
        &mut r,
        Event::ForwardCallback { session: s9 },
        LeadershipError::UnknownProcess { session: s9 },
    );
}

#[test]
fn second_grant_without_revoke_and_stale_sessions() {
    let mut r = with_process();
    refused(
        &mut r,
        Event::LeadershipGranted {
            session: Session(2),
        },
        LeadershipError::GrantWithoutRevoke {
            held: S1,
            granted: Session(2),
        },
    );
    r.handle(Event::LeadershipRevoked).unwrap();
    refused(
        &mut r,
        Event::LeadershipRevoked,
        LeadershipError::RevokeWithoutGrant,
    );
    refused(
        &mut r,
        Event::LeadershipGranted { session: S1 },
        LeadershipError::StaleSession {
            previous: S1,
            granted: S1,
        },
    );
}

#[test]
fn service_terminated_for_a_never_closed_process_and_twice() {
    let mut r = with_process();
    refused(
        &mut r,
        Event::ProcessServiceTerminated { session: S1 },
        LeadershipError::ServiceTerminatedWhileRunning { session: S1 },
    );
    r.handle(Event::LeadershipRevoked).unwrap();
    r.handle(Event::ProcessServiceTerminated { session: S1 })
        .unwrap();
    refused(
        &mut r,
        Event::ProcessServiceTerminated { session: S1 },
        LeadershipError::AlreadyTerminated { session: S1 },
    );
}

#[test]
fn not_finished_cannot_be_supplied_from_outside() {
    let mut r = with_process();
    refused(
        &mut r,
        Event::ProcessResultCompleted {
            session: S1,
            value: ProcessResult::NotFinished,
        },
        LeadershipError::NotFinishedIsInternal { session: S1 },
    );
}

#[test]
fn forward_callback_without_a_completed_result_or_twice() {
    let mut r = with_process();
    refused(
        &mut r,
        Event::ForwardCallback { session: S1 },
        LeadershipError::NoForwardPending { session: S1 },
    );
    r.handle(Event::TerminalSignalDelivered {
        session: S1,
        status: JobStatus::Failed,
    })
    .unwrap();
    r.handle(Event::ForwardCallback { session: S1 }).unwrap();
    refused(
        &mut r,
        Event::ForwardCallback { session: S1 },
        LeadershipError::NoForwardPending { session: S1 },
    );
}

#[test]
fn answers_nobody_asked_for() {
    let mut r = with_process();
    refused(
        &mut r,
        Event::JobResultStoreAnswered { has_entry: true },
        LeadershipError::UnexpectedStoreAnswer,
    );
    refused(
        &mut r,
        Event::LeadershipConfirmed {
            session: S1,
            held: true,
        },
        LeadershipError::UnexpectedConfirmation { session: S1 },
    );
    refused(
        &mut r,
        Event::LeadershipConfirmed {
            session: Session(7),
            held: false,
        },
        LeadershipError::UnexpectedConfirmation {
            session: Session(7),
        },
    );
}

#[test]
fn events_after_the_runner_stopped() {
    let mut r = with_process();
    r.handle(Event::CloseRequested).unwrap();
    refused(
        &mut r,
        Event::CloseRequested,
        LeadershipError::AlreadyClosed,
    );
    r.handle(Event::ProcessServiceTerminated { session: S1 })
        .unwrap();
    assert_eq!(
        r.handle(Event::ForwardCallback { session: S1 }).unwrap(),
        vec![
            Effect::CompleteResult {
                value: steadfast::leadership::RunnerResult::Suspended
            },
            Effect::RunnerTerminated
        ]
    );
    assert!(r.is_terminated());
    refused(
        &mut r,
        Event::LeadershipRevoked,
        LeadershipError::RunnerTerminated {
            event: "leadership_revoked",
        },
    );
    refused(
        &mut r,
        Event::LeadershipGranted {
            session: Session(2),
        },
        LeadershipError::RunnerTerminated {
            event: "leadership_granted",
        },
    );
    refused(
        &mut r,
        Event::CloseRequested,
        LeadershipError::AlreadyClosed,
    );
}

#[test]
fn driver_refusals_leave_the_projection_unchanged() {
    let mut d = Harness::new(JOB, true);
    let before = d.projection();
    assert_eq!(d.elect(), Err(LeadershipError::NoRunner));
    assert_eq!(d.submit_job(), Err(LeadershipError::DispatcherNotLeader));
    assert_eq!(
        d.dispatcher_lose_leadership(),
        Err(LeadershipError::DispatcherNotLeader)
    );
    assert_eq!(d.projection(), before);
    d.dispatcher_gain_leadership().unwrap();
    d.submit_job().unwrap();
    let s = d.grant().unwrap();
    let before = d.projection();
    assert_eq!(d.answer_query(), Err(LeadershipError::NoPendingQuery));
    assert_eq!(
        d.elect(),
        Err(LeadershipError::Election("a session is already issued"))
    );
    assert_eq!(
        d.runner_event(Event::ProcessServiceTerminated { session: s }),
        Err(LeadershipError::ServiceTerminatedWhileRunning { session: s })
    );
    assert_eq!(
        d.dispatcher_gain_leadership(),
        Err(LeadershipError::DispatcherAlreadyLeader)
    );
    assert_eq!(d.projection(), before);
}

/// A runner closed directly, whose result then reaches the dispatcher: the dispatcher's
/// own close request finds it closing and leaves it to finish (closing is idempotent, as
/// Flink's `JobManagerRunner.closeAsync` is). Before, the driver applied the result and
/// then returned `AlreadyClosed`, with the dispatcher and stores already changed.
#[test]
fn a_dispatcher_close_of_a_runner_closed_already_is_no_refusal() {
    let mut d = Harness::new(JOB, true);
    d.dispatcher_gain_leadership().unwrap();
    d.submit_job().unwrap();
    let s = d.grant().unwrap();
    d.runner_event(Event::CloseRequested).unwrap();
    d.runner_event(Event::ProcessServiceTerminated { session: s })
        .unwrap();
    d.runner_event(Event::ForwardCallback { session: s })
        .unwrap();
    let p = d.projection();
    assert_eq!(
        p.runner_result,
        Some(steadfast::leadership::RunnerResult::Suspended)
    );
    assert!(p.job_graph_present, "SUSPENDED keeps the JobGraph");
    assert!(d.runner().unwrap().is_terminated());
}

/// A driver event refused part-way leaves every machine and store as it was: the whole
/// driver, not only its projection.
#[test]
fn a_driver_event_refused_part_way_changes_nothing() {
    let mut d = Harness::new(JOB, true);
    d.dispatcher_gain_leadership().unwrap();
    d.submit_job().unwrap();
    let s = d.grant().unwrap();
    let before = format!("{d:?}");
    assert_eq!(
        d.runner_event(Event::ProcessServiceTerminated { session: s }),
        Err(LeadershipError::ServiceTerminatedWhileRunning { session: s })
    );
    assert_eq!(format!("{d:?}"), before);
}
