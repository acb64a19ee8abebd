//! What the leadership model never sends, handed to the production machines in
//! situations the model reaches: each machine refuses it with its typed error and is left
//! unchanged (its `Debug` form, which shows every field, compared before and after).
//!
//! Each situation is reached by driving the runtime along a shortest path of the fixed
//! model to a state with the named property ([`reach`]), the projections compared at
//! every step ([`drive`]); the refused event is then handed to a copy of the machine.
//!
//! The last tests pin what the runner does between steps the model takes atomically
//! (its model gaps, listed in `specs/conformance.md`): a close between a grant's store
//! question and its answer, and election messages that reach a runner that no longer
//! runs.

use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;

use stateright::Model;
use steadfast::leadership::{
    DispatcherEffect, DispatcherEvent, Effect, Event, Harness, JobGraphStore, JobId,
    JobResultEntry, JobResultStore, JobStatus, LeadershipError, Process, ProcessEvent,
    ProcessResult, RecoveredJob, Runner, RunnerOutcome, RunnerResult, RunnerState, Session,
};
use steadfast_conformance::leadership::{drive, Runtime, JOB};
use steadfast_model::leadership::{self as model, Action, Leadership, State};

fn fixed() -> Leadership {
    Leadership::scenario("fixed", "default", &[]).expect("valid settings")
}

/// A shortest path of `m` from its initial state to a state where `goal` holds.
fn reach(m: &Leadership, goal: impl Fn(&State) -> bool) -> Vec<Action> {
    let init = m.init_states()[0];
    let mut parent: HashMap<State, (State, Action)> = HashMap::new();
    let mut queue = VecDeque::from([init]);
    let mut actions = Vec::new();
    while let Some(s) = queue.pop_front() {
        if goal(&s) {
            let mut path = Vec::new();
            let mut at = s;
            while let Some((prev, a)) = parent.get(&at) {
                path.push(*a);
                at = *prev;
            }
            path.reverse();
            return path;
        }
        actions.clear();
        m.actions(&s, &mut actions);
        for a in &actions {
            if let Some(next) = m.next_state(&s, *a) {
                if next != init && !parent.contains_key(&next) {
                    parent.insert(next, (s, *a));
                    queue.push_back(next);
                }
            }
        }
    }
    panic!("the model never reaches the goal")
}

/// The runtime at the first state of the fixed model where `goal` holds.
fn at(goal: impl Fn(&State) -> bool) -> Runtime {
    let m = fixed();
    let path = reach(&m, goal);
    drive(&m, &path).1
}

/// Hands `event` to a copy of `machine` through `handle`: it must fail with an error
/// `expected` accepts and leave the copy as it was.
fn refuses<M: Clone + Debug, E: Debug, T: Debug>(
    machine: &M,
    handle: impl FnOnce(&mut M) -> Result<T, E>,
    expected: impl FnOnce(&E) -> bool,
) -> E {
    let mut copy = machine.clone();
    let before = format!("{copy:?}");
    let error = match handle(&mut copy) {
        Ok(effects) => panic!("accepted, with {effects:?}"),
        Err(e) => e,
    };
    assert!(expected(&error), "refused with {error:?}");
    assert_eq!(
        before,
        format!("{copy:?}"),
        "changed by the refused {error:?}"
    );
    error
}

#[test]
fn a_leading_dispatcher_refuses_answers_it_never_asked_for_and_a_second_submission() {
    let rt = at(|s| s.sessions == 1 && s.issued == 1);
    let d = rt.driver.dispatcher();
    assert!(d.is_leader() && !d.is_recovering());
    assert_eq!(d.live_runners(), vec![JOB]);
    let epoch = d.epoch();
    let e = refuses(
        d,
        |d| {
            d.handle(DispatcherEvent::JobsRecovered {
                epoch,
                jobs: vec![],
            })
        },
        |e| {
            matches!(
                e,
                LeadershipError::UnexpectedDispatcherAnswer {
                    answer: "jobs_recovered"
                }
            )
        },
    );
    assert_eq!(
        e.to_string(),
        "dispatcher: jobs_recovered without an outstanding request"
    );
    refuses(
        d,
        |d| d.handle(DispatcherEvent::JobSubmitted { job: JOB }),
        |e| *e == LeadershipError::DuplicateJob { job: JOB },
    );
    for answer in [
        DispatcherEvent::DirtyEntryWritten { job: JOB },
        DispatcherEvent::JobGraphRemoved { job: JOB },
        DispatcherEvent::EntryMarkedClean {
            job: JOB,
            status: JobStatus::Finished,
        },
    ] {
        refuses(
            d,
            |d| d.handle(answer.clone()),
            |e| matches!(e, LeadershipError::UnexpectedDispatcherAnswer { .. }),
        );
    }
    let other = JobId(7);
    refuses(
        d,
        |d| d.handle(DispatcherEvent::RunnerTerminated { job: other }),
        |e| *e == LeadershipError::NoLiveRunner { job: other },
    );
    // An answer of an earlier epoch is discarded: no effect, nothing changes.
    let mut copy = d.clone();
    let before = format!("{copy:?}");
    let stale = DispatcherEvent::JobsRecovered {
        epoch: epoch - 1,
        jobs: vec![],
    };
    assert_eq!(copy.handle(stale), Ok(vec![]));
    assert_eq!(before, format!("{copy:?}"));
}

#[test]
fn a_dispatcher_refuses_submissions_before_it_leads_and_while_it_recovers() {
    let rt = at(|s| s.sessions == 1 && s.issued == 1);
    let next = rt.driver.dispatcher().successor();
    assert!(!next.is_leader());
    refuses(
        &next,
        |d| d.handle(DispatcherEvent::JobSubmitted { job: JobId(2) }),
        |e| *e == LeadershipError::DispatcherNotLeader,
    );
    let mut recovering = next.clone();
    let read = recovering
        .handle(DispatcherEvent::LeadershipGained)
        .unwrap();
    let epoch = recovering.epoch();
    assert_eq!(read, vec![DispatcherEffect::RecoverJobs { epoch }]);
    assert!(recovering.is_recovering());
    refuses(
        &recovering,
        |d| d.handle(DispatcherEvent::JobSubmitted { job: JobId(2) }),
        |e| *e == LeadershipError::RecoveryInProgress,
    );
    let job = |job: JobId| RecoveredJob {
        job,
        job_graph: true,
        entry: JobResultEntry::None,
    };
    refuses(
        &recovering,
        |d| {
            d.handle(DispatcherEvent::JobsRecovered {
                epoch,
                jobs: vec![job(JOB), job(JOB)],
            })
        },
        |e| *e == LeadershipError::DuplicateJob { job: JOB },
    );
    // A job neither store holds anything for is no job: nothing starts for it.
    let mut copy = recovering.clone();
    let nothing = RecoveredJob {
        job: JobId(2),
        job_graph: false,
        entry: JobResultEntry::None,
    };
    let effects = copy
        .handle(DispatcherEvent::JobsRecovered {
            epoch,
            jobs: vec![job(JOB), nothing],
        })
        .unwrap();
    assert_eq!(effects, vec![DispatcherEffect::StartRunner { job: JOB }]);
    assert_eq!(copy.live_runners(), vec![JOB]);
}

#[test]
fn a_dispatcher_refuses_a_second_result_of_a_runner() {
    let rt = at(|s| s.result_handled);
    let d = rt.driver.dispatcher();
    assert_eq!(d.result_received(JOB), Some(true));
    refuses(
        d,
        |d| {
            d.handle(DispatcherEvent::RunnerCompleted {
                job: JOB,
                result: RunnerResult::Terminal(JobStatus::Finished),
            })
        },
        |e| *e == LeadershipError::DuplicateRunnerResult { job: JOB },
    );
}

#[test]
fn a_runner_refuses_answers_it_never_asked_for() {
    let rt = at(|s| s.process_count == 1 && s.issued == 1);
    let runner = rt.driver.runner().expect("a runner");
    assert!(runner.is_idle());
    assert_eq!(runner.job(), JOB);
    refuses(
        runner,
        |r| r.handle(Event::JobResultStoreAnswered { has_entry: false }),
        |e| *e == LeadershipError::UnexpectedStoreAnswer,
    );
    for session in [Session(1), Session(9)] {
        refuses(
            runner,
            |r| {
                r.handle(Event::LeadershipConfirmed {
                    session,
                    held: true,
                })
            },
            |e| *e == LeadershipError::UnexpectedConfirmation { session },
        );
    }
    let e = refuses(
        runner,
        |r| {
            r.handle(Event::ProcessResultCompleted {
                session: Session(1),
                value: ProcessResult::NotFinished,
            })
        },
        |e| {
            *e == LeadershipError::NotFinishedIsInternal {
                session: Session(1),
            }
        },
    );
    assert!(e.to_string().contains("s1"), "{e}");
}

#[test]
fn a_stopped_runner_refuses_a_close_and_a_terminated_one_a_revoke() {
    let rt = at(|s| s.runner == model::RunnerState::Stopped && s.runner_terminated);
    let runner = rt.driver.runner().expect("a runner");
    assert_eq!(runner.state(), RunnerState::Stopped);
    refuses(
        runner,
        |r| r.handle(Event::CloseRequested),
        |e| *e == LeadershipError::AlreadyClosed,
    );
    refuses(
        runner,
        |r| r.handle(Event::LeadershipRevoked),
        |e| {
            *e == LeadershipError::RunnerTerminated {
                event: "leadership_revoked",
            }
        },
    );
}

#[test]
fn the_stores_refuse_a_second_job_graph_a_second_entry_and_cleaning_none() {
    let rt = at(|s| s.job_result == model::JobResultEntry::Dirty);
    let env = rt.driver.environment();
    assert_eq!(env.results.entry(JOB), JobResultEntry::Dirty);
    let status = env
        .results
        .status(JOB)
        .expect("a dirty entry records its status");
    refuses(
        &env.results,
        |r| r.create_dirty(JOB, status),
        |e| *e == LeadershipError::EntryExists { job: JOB },
    );
    let other = JobId(7);
    refuses(
        &env.results,
        |r| r.mark_clean(other),
        |e| *e == LeadershipError::NoEntry { job: other },
    );
    let rt = at(|s| s.sessions == 1);
    let graphs = &rt.driver.environment().graphs;
    assert!(graphs.contains(JOB));
    refuses(
        graphs,
        |g| g.put(JOB),
        |e| *e == LeadershipError::DuplicateJob { job: JOB },
    );
}

#[test]
fn a_driver_refuses_answers_and_deliveries_with_nothing_pending() {
    let rt = at(|s| s.sessions == 1 && s.issued == 1);
    let driver: &Harness = &rt.driver;
    assert_eq!(driver.next_query(), None);
    refuses(
        driver,
        |d| d.answer_query(),
        |e| *e == LeadershipError::NoPendingQuery,
    );
    refuses(
        driver,
        |d| d.deliver_runner_result(),
        |e| *e == LeadershipError::NoPendingRunnerResult,
    );
    refuses(
        driver,
        |d| d.answer_store_request(DispatcherEffect::RemoveJobGraph { job: JOB }),
        |e| *e == LeadershipError::NoPendingStoreRequest,
    );
    refuses(
        driver,
        |d| d.old_runner_event(Event::LeadershipRevoked),
        |e| *e == LeadershipError::NoStoppingJobManager,
    );
    refuses(
        &driver.environment().clone(),
        |env| env.execute(DispatcherEffect::StartRunner { job: JOB }),
        |e| *e == LeadershipError::NoPendingStoreRequest,
    );
}

#[test]
fn a_process_refuses_not_finished_from_outside_and_a_second_close() {
    let mut process = Process::new(Session(1));
    refuses(
        &process,
        |p| p.handle(ProcessEvent::Completed(ProcessResult::NotFinished)),
        |e| {
            *e == LeadershipError::NotFinishedIsInternal {
                session: Session(1),
            }
        },
    );
    process.handle(ProcessEvent::Close).unwrap();
    refuses(
        &process,
        |p| p.handle(ProcessEvent::Close),
        |e| {
            *e == LeadershipError::ProcessAlreadyClosing {
                session: Session(1),
            }
        },
    );
}

#[test]
fn a_runner_asking_about_one_session_refuses_a_confirmation_of_another() {
    let mut runner = Runner::new(JOB);
    let s1 = Session(1);
    runner
        .handle(Event::LeadershipGranted { session: s1 })
        .unwrap();
    let asked = runner
        .handle(Event::JobResultStoreAnswered { has_entry: false })
        .unwrap();
    assert_eq!(asked, vec![Effect::ConfirmLeadership { session: s1 }]);
    let s2 = Session(2);
    refuses(
        &runner,
        |r| {
            r.handle(Event::LeadershipConfirmed {
                session: s2,
                held: true,
            })
        },
        |e| *e == LeadershipError::UnexpectedConfirmation { session: s2 },
    );
}

/// A runner for [`JOB`] whose first process (session 1) forwarded FINISHED: the job
/// completed, and the election's session 1 is still granted to it.
fn completed_runner() -> Runner {
    let mut runner = Runner::new(JOB);
    let s1 = Session(1);
    for event in [
        Event::LeadershipGranted { session: s1 },
        Event::JobResultStoreAnswered { has_entry: false },
        Event::LeadershipConfirmed {
            session: s1,
            held: true,
        },
        Event::TerminalSignalDelivered {
            session: s1,
            status: JobStatus::Finished,
        },
        Event::ForwardCallback { session: s1 },
        Event::LeadershipConfirmed {
            session: s1,
            held: true,
        },
    ] {
        runner.handle(event).unwrap();
    }
    assert_eq!(runner.state(), RunnerState::JobCompleted);
    assert_eq!(
        runner.result(),
        Some(RunnerResult::Terminal(JobStatus::Finished))
    );
    runner
}

/// Model gap: the model's chain takes a grant or revoke only while the runner runs, so
/// it never delivers one to a completed runner; the runtime queues it and skips it.
#[test]
fn election_messages_reaching_a_completed_runner_are_queued_and_skipped() {
    let mut runner = completed_runner();
    let before = format!("{:?}", runner.projection());
    for event in [
        Event::LeadershipRevoked,
        Event::LeadershipGranted {
            session: Session(2),
        },
    ] {
        let handled = runner.step(event).unwrap();
        assert_eq!(handled.outcome, RunnerOutcome::Queued, "{event:?}");
        assert_eq!(handled.effects, vec![], "{event:?}");
        assert!(runner.is_idle(), "{event:?}");
    }
    assert_eq!(before, format!("{:?}", runner.projection()));
}

/// Model gap: the model's `RunGrant` asks the JobResultStore and the election in one
/// step; the runtime asks one at a time, and a close between the store's question and
/// its answer makes the grant a no-op (Flink's `runIfStateRunning` around the answer).
#[test]
fn a_close_between_a_grants_store_question_and_its_answer_skips_the_grant() {
    let mut runner = Runner::new(JOB);
    let asked = runner
        .handle(Event::LeadershipGranted {
            session: Session(1),
        })
        .unwrap();
    assert_eq!(asked, vec![Effect::QueryJobResultStore]);
    runner.handle(Event::CloseRequested).unwrap();
    let handled = runner
        .step(Event::JobResultStoreAnswered { has_entry: false })
        .unwrap();
    assert_eq!(handled.outcome, RunnerOutcome::GrantSkippedNotRunning);
    assert!(
        !handled.effects.iter().any(|e| matches!(
            e,
            Effect::ConfirmLeadership { .. } | Effect::StartProcess { .. }
        )),
        "{:?}",
        handled.effects
    );
    assert_eq!(runner.processes().count(), 0);
    assert_eq!(runner.state(), RunnerState::Stopped);
}
