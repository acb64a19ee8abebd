//! Unit tests of the dispatcher, run against the in-memory stores.

use super::*;
use crate::leadership::harness::Environment;
use crate::leadership::store::{JobGraphStore, JobResultStore};

const JOB: JobId = JobId(1);

/// Feeds `event`, then executes every store request it causes against `env` and
/// feeds the answers back, until none is left; returns every effect, in order.
fn run(d: &mut Dispatcher, env: &mut Environment, event: DispatcherEvent) -> Vec<DispatcherEffect> {
    let mut all = Vec::new();
    let mut events = vec![event];
    while let Some(event) = events.pop() {
        for effect in d.handle(event).unwrap() {
            if effect.is_store_request() {
                events.push(env.execute(effect).unwrap());
            }
            all.push(effect);
        }
    }
    all
}

fn setup() -> (Dispatcher, Environment) {
    let (mut d, mut env) = (Dispatcher::new(), Environment::default());
    run(&mut d, &mut env, DispatcherEvent::LeadershipGained);
    run(&mut d, &mut env, DispatcherEvent::JobSubmitted { job: JOB });
    (d, env)
}

#[test]
fn suspended_keeps_the_job_graph_and_recovery_restarts_it() {
    let (mut d, mut env) = setup();
    let fx = run(&mut d, &mut env, DispatcherEvent::LeadershipLost);
    assert_eq!(fx, vec![DispatcherEffect::CloseRunner { job: JOB }]);
    let completed = DispatcherEvent::RunnerCompleted {
        job: JOB,
        result: RunnerResult::Suspended,
    };
    assert_eq!(
        run(&mut d, &mut env, completed),
        vec![DispatcherEffect::LocalCleanup { job: JOB }]
    );
    assert!(env.graphs.contains(JOB));
    assert_eq!(
        d.handle(DispatcherEvent::LeadershipGained),
        Err(LeadershipError::RunnerStillLive { job: JOB })
    );
    run(
        &mut d,
        &mut env,
        DispatcherEvent::RunnerTerminated { job: JOB },
    );
    let fx = run(&mut d, &mut env, DispatcherEvent::LeadershipGained);
    assert_eq!(
        fx,
        vec![
            DispatcherEffect::RecoverJobs { epoch: 2 },
            DispatcherEffect::StartRunner { job: JOB }
        ]
    );
    assert_eq!((d.epoch(), d.runners_started()), (2, 2));
    assert_eq!(d.result_received(JOB), Some(false));
}

#[test]
fn terminal_result_cleans_up_globally_one_request_at_a_time() {
    let (mut d, mut env) = setup();
    let status = JobStatus::Canceled;
    let fx = d
        .handle(DispatcherEvent::RunnerCompleted {
            job: JOB,
            result: RunnerResult::Terminal(status),
        })
        .unwrap();
    assert_eq!(
        fx,
        vec![
            DispatcherEffect::WriteDirtyEntry { job: JOB, status },
            DispatcherEffect::CloseRunner { job: JOB }
        ]
    );
    // Each answer is refused until its request is the outstanding one.
    for early in [
        DispatcherEvent::JobGraphRemoved { job: JOB },
        DispatcherEvent::EntryMarkedClean { job: JOB, status },
        DispatcherEvent::JobGraphStored { job: JOB },
    ] {
        let before = d.clone();
        assert!(matches!(
            d.handle(early),
            Err(LeadershipError::UnexpectedDispatcherAnswer { .. })
        ));
        assert_eq!(d, before);
    }
    let answer = env.execute(fx[0]).unwrap();
    assert_eq!(answer, DispatcherEvent::DirtyEntryWritten { job: JOB });
    assert_eq!(
        d.handle(answer).unwrap(),
        vec![DispatcherEffect::RemoveJobGraph { job: JOB }]
    );
    assert_eq!(env.results.entry(JOB), JobResultEntry::Dirty);
    let removed = env
        .execute(DispatcherEffect::RemoveJobGraph { job: JOB })
        .unwrap();
    assert_eq!(
        run(&mut d, &mut env, removed),
        vec![
            DispatcherEffect::MarkEntryClean { job: JOB },
            DispatcherEffect::GlobalCleanup { job: JOB, status }
        ]
    );
    assert!(!env.graphs.contains(JOB));
    assert_eq!(env.results.entry(JOB), JobResultEntry::Clean);
    // The runner is closing already: losing leadership closes nothing more.
    assert_eq!(
        run(&mut d, &mut env, DispatcherEvent::LeadershipLost),
        vec![]
    );
    run(
        &mut d,
        &mut env,
        DispatcherEvent::RunnerTerminated { job: JOB },
    );
    let fx = run(&mut d, &mut env, DispatcherEvent::LeadershipGained);
    assert_eq!(fx, vec![DispatcherEffect::RecoverJobs { epoch: 2 }]);
    assert_eq!(d.runners_started(), 1);
    // The job stays known: submitting it again is a duplicate.
    assert_eq!(
        d.handle(DispatcherEvent::JobSubmitted { job: JOB }),
        Err(LeadershipError::DuplicateJob { job: JOB })
    );
}

#[test]
fn a_cleanup_under_way_at_failover_is_finished_once_by_its_own_answers() {
    let (mut d, mut env) = setup();
    let status = JobStatus::Finished;
    let fx = run(
        &mut d,
        &mut env,
        DispatcherEvent::RunnerCompleted {
            job: JOB,
            result: RunnerResult::Terminal(status),
        },
    );
    assert_eq!(
        fx.last(),
        Some(&DispatcherEffect::GlobalCleanup { job: JOB, status })
    );

    // Again, but the removal is still outstanding when leadership moves on.
    let (mut d, mut env) = setup();
    let write = d
        .handle(DispatcherEvent::RunnerCompleted {
            job: JOB,
            result: RunnerResult::Terminal(status),
        })
        .unwrap()[0];
    let remove = d.handle(env.execute(write).unwrap()).unwrap()[0];
    d.handle(DispatcherEvent::LeadershipLost).unwrap();
    d.handle(DispatcherEvent::RunnerTerminated { job: JOB })
        .unwrap();
    assert_eq!(
        d.handle(DispatcherEvent::LeadershipGained).unwrap(),
        vec![DispatcherEffect::RecoverJobs { epoch: 2 }]
    );
    let read = env
        .execute(DispatcherEffect::RecoverJobs { epoch: 2 })
        .unwrap();
    assert_eq!(
        read,
        DispatcherEvent::JobsRecovered {
            epoch: 2,
            jobs: vec![RecoveredJob {
                job: JOB,
                job_graph: true,
                entry: JobResultEntry::Dirty
            }]
        }
    );
    // The dirty entry's cleanup is under way: no second request, no runner.
    assert_eq!(d.handle(read).unwrap(), vec![]);
    let removed = env.execute(remove).unwrap();
    let fx = run(&mut d, &mut env, removed);
    assert_eq!(
        fx,
        vec![
            DispatcherEffect::MarkEntryClean { job: JOB },
            DispatcherEffect::GlobalCleanup { job: JOB, status }
        ]
    );
}

#[test]
fn recovery_finishes_a_cleanup_it_finds_interrupted() {
    let mut env = Environment::default();
    env.graphs.put(JOB).unwrap();
    env.results.create_dirty(JOB, JobStatus::Failed).unwrap();
    env.graphs.put(JobId(2)).unwrap();
    let mut d = Dispatcher::new();
    let fx = run(&mut d, &mut env, DispatcherEvent::LeadershipGained);
    assert_eq!(
        fx,
        vec![
            DispatcherEffect::RecoverJobs { epoch: 1 },
            DispatcherEffect::RemoveJobGraph { job: JOB },
            DispatcherEffect::StartRunner { job: JobId(2) },
            DispatcherEffect::MarkEntryClean { job: JOB },
            DispatcherEffect::GlobalCleanup {
                job: JOB,
                status: JobStatus::Failed
            },
        ]
    );
    assert!(!env.graphs.contains(JOB) && env.graphs.contains(JobId(2)));
    assert_eq!(env.results.entry(JOB), JobResultEntry::Clean);
}

#[test]
fn an_answer_for_an_epoch_that_is_over_is_discarded() {
    let mut d = Dispatcher::new();
    d.handle(DispatcherEvent::LeadershipGained).unwrap();
    assert_eq!(
        d.handle(DispatcherEvent::JobSubmitted { job: JOB }),
        Err(LeadershipError::RecoveryInProgress)
    );
    d.handle(DispatcherEvent::LeadershipLost).unwrap();
    let stale = DispatcherEvent::JobsRecovered {
        epoch: 1,
        jobs: vec![RecoveredJob {
            job: JOB,
            job_graph: true,
            entry: JobResultEntry::None,
        }],
    };
    let before = d.clone();
    assert_eq!(d.handle(stale.clone()), Ok(vec![]));
    assert_eq!(d, before);
    d.handle(DispatcherEvent::LeadershipGained).unwrap();
    assert_eq!(d.handle(stale), Ok(vec![]));
    assert!(d.is_recovering() && d.runners_started() == 0);
}

#[test]
fn a_recovery_answer_out_of_order_or_with_a_job_twice_is_refused_unchanged() {
    let job = |j| RecoveredJob {
        job: JobId(j),
        job_graph: true,
        entry: JobResultEntry::None,
    };
    let mut d = Dispatcher::new();
    d.handle(DispatcherEvent::LeadershipGained).unwrap();
    let before = d.clone();
    for jobs in [vec![job(2), job(1)], vec![job(1), job(1)]] {
        let answer = DispatcherEvent::JobsRecovered { epoch: 1, jobs };
        assert!(matches!(
            d.handle(answer),
            Err(LeadershipError::DuplicateJob { .. })
        ));
        assert_eq!(d, before);
    }
    let answer = DispatcherEvent::JobsRecovered {
        epoch: 1,
        jobs: vec![job(1), job(2)],
    };
    assert_eq!(d.handle(answer).unwrap().len(), 2);
}

/// Dispatcher and stores share their trees with their copies until one side
/// changes: a change to the original never shows in a copy taken before it.
#[test]
fn copies_taken_before_a_change_keep_what_they_had() {
    let (mut d, mut env) = setup();
    assert!(d.is_live(JOB) && !d.is_live(JobId(2)));
    assert_eq!((d.live_count(), d.live_runners()), (1, vec![JOB]));
    let (d0, env0) = (d.clone(), env.clone());
    let done = RunnerResult::Terminal(JobStatus::Failed);
    run(
        &mut d,
        &mut env,
        DispatcherEvent::RunnerCompleted {
            job: JOB,
            result: done,
        },
    );
    run(
        &mut d,
        &mut env,
        DispatcherEvent::RunnerTerminated { job: JOB },
    );
    assert!(!d.is_live(JOB));
    assert_eq!((d.live_count(), d.live_runners()), (0, vec![]));
    assert!(!env.graphs.contains(JOB));
    // The copies still hold the live runner, the JobGraph and no entry.
    assert!(d0.is_live(JOB) && env0.graphs.contains(JOB));
    assert_eq!(env0.results.entry(JOB), JobResultEntry::None);
    assert_eq!((d0, env0), setup());
}

#[test]
fn refusals_leave_the_dispatcher_unchanged() {
    let (mut d, mut env) = setup();
    run(
        &mut d,
        &mut env,
        DispatcherEvent::RunnerCompleted {
            job: JOB,
            result: RunnerResult::Suspended,
        },
    );
    let before = d.clone();
    let refused = [
        (
            DispatcherEvent::RunnerCompleted {
                job: JOB,
                result: RunnerResult::Terminal(JobStatus::Failed),
            },
            LeadershipError::DuplicateRunnerResult { job: JOB },
        ),
        (
            DispatcherEvent::JobSubmitted { job: JOB },
            LeadershipError::DuplicateJob { job: JOB },
        ),
        (
            DispatcherEvent::LeadershipGained,
            LeadershipError::DispatcherAlreadyLeader,
        ),
        (
            DispatcherEvent::RunnerTerminated { job: JobId(9) },
            LeadershipError::NoLiveRunner { job: JobId(9) },
        ),
        (
            DispatcherEvent::JobsRecovered {
                epoch: 1,
                jobs: vec![],
            },
            LeadershipError::UnexpectedDispatcherAnswer {
                answer: "jobs_recovered",
            },
        ),
    ];
    for (event, error) in refused {
        assert_eq!(d.handle(event), Err(error));
        assert_eq!(d, before);
    }
}
