//! Unit tests of the jobs composition: with one job it is the one-job model, every
//! column's verdicts, a fatal error across jobs, the symmetry reduction, the view, and
//! which jobs a shared or an own step reaches. Apart because they check whole models
//! and take most of the file's length.

use super::*;
use crate::check::{try_check, CheckOptions, Strategy, Traces};

fn options(strategy: Strategy, symmetry: bool) -> CheckOptions {
    CheckOptions {
        strategy,
        traces: Traces::None,
        symmetry,
        threads: 2,
        ..CheckOptions::default()
    }
}

/// The model of `design` under a preset of either model plus overrides.
fn jobs(design: &str, preset: &[(&str, &str)], overrides: &[(&str, &str)]) -> Jobs {
    let mut all = preset.to_vec();
    all.extend_from_slice(overrides);
    Jobs::build(
        design,
        &Settings::parse(super::super::PARAMS, &all).unwrap(),
    )
    .unwrap()
}

/// A preset of the one-job model by name.
fn preset(name: &str) -> &'static [(&'static str, &'static str)] {
    Leadership::preset(name).unwrap()
}

#[test]
fn one_job_is_the_one_job_model() {
    // The composition adds nothing of its own with one job: the same reachable
    // states (counted) and the same verdicts, in every design and scenario.
    for design in DESIGN_NAMES {
        for scenario in Leadership::scenario_names() {
            let single = Leadership::scenario(design, scenario, &[]).unwrap();
            let one = jobs(design, preset(scenario), &[]);
            assert_eq!(one.jobs, 1);
            let a = try_check(&single, &options(Strategy::Bfs, false)).unwrap();
            let b = try_check(&one, &options(Strategy::Bfs, false)).unwrap();
            assert_eq!(a.unique_states, b.unique_states, "{design} {scenario}");
            assert_eq!(a.verdicts(), b.verdicts(), "{design} {scenario}");
        }
    }
}

#[test]
fn every_column_has_its_expected_verdicts_and_differs_from_one_job_only_where_a_fatal_error_kills()
{
    let table = Jobs::expectations();
    let mut counts = Vec::new();
    for (scenario, preset, _) in SCENARIOS {
        for design in DESIGN_NAMES {
            let m = jobs(design, preset, &[]);
            let report = try_check(&m, &options(Strategy::Bfs, false)).unwrap();
            let found = report.verdicts();
            let cells: Vec<&Expectation> = table
                .iter()
                .filter(|e| e.design == design && e.scenario == *scenario)
                .collect();
            // Every property of the run has a cell.
            assert_eq!(cells.len(), found.len(), "{design} {scenario}");
            for e in cells {
                assert_eq!(
                    found[e.property], e.expected,
                    "{design} {scenario} `{}`",
                    e.property
                );
            }
            counts.push(report.unique_states);
            // Against one job at the same bounds: every verdict equal. (A fatal
            // error of the other job kills a decision too, but one job's own
            // JobMaster failure after its decision already breaks the same rows:
            // `a_fatal_error_of_one_job_kills_another_jobs_decision` shows the
            // difference where failures come only before a decision.)
            let one = jobs(design, preset, &[("jobs", "1")]);
            let one = try_check(&one, &options(Strategy::Bfs, false))
                .unwrap()
                .verdicts();
            let changed: Vec<&str> = found
                .iter()
                .filter(|(name, v)| one[*name] != **v)
                .map(|(name, _)| *name)
                .collect();
            assert_eq!(changed, [] as [&str; 0], "{design} {scenario}");
        }
    }
    assert_eq!(
        counts,
        [
            272_660, 111_213, 53_779, 29_263, 57_503, // two-jobs
            5_365_727, 3_484_963, 863_146, 612_136, 1_009_684, // jobmaster-failures
            2_079_614, 929_518, 533_577, 302_373, 663_347, // dispatcher-overlap
        ]
    );
}

#[test]
fn a_fatal_error_of_one_job_kills_another_jobs_decision() {
    // Where JobMaster failures come only before a decision, the one-job column of
    // the fixed design holds, and two jobs differ, found by the checker: a fatal
    // JobMaster error of one job ends the JobManager, and with it another job's
    // decision that no JobResultStore entry recorded yet. The shape says so.
    let before_decision = [("failures-before-decision", "true")];
    let m = jobs("fixed", SCENARIOS[1].1, &before_decision);
    let report = try_check(
        &m,
        &CheckOptions {
            traces: Traces::Shortest,
            ..options(Strategy::Bfs, false)
        },
    )
    .unwrap();
    let p = report
        .properties
        .iter()
        .find(|p| p.name == property::NO_REANIMATION)
        .unwrap();
    assert_eq!(p.verdict, Verdict::Counterexample);
    let trace = p.trace.as_ref().unwrap();
    assert_eq!(
        trace.shape.as_deref(),
        Some("job 1: JobManager crash before the result was recorded")
    );
    let steps: Vec<&str> = trace.steps.iter().map(|s| s.description.as_str()).collect();
    assert_eq!(steps.len(), 10, "{steps:#?}");
    assert!(steps[2].starts_with("job 1: the scheduler of process 1 decides"));
    assert!(steps[6].starts_with("job 2: the dispatcher sees a JobMaster failure: a fatal error"));
    assert!(steps[9].starts_with(
        "job 1: the runner's chain runs the grant of session 2: it creates process 2 although"
    ));
    // The fixed design's one-job column holds.
    let single = Leadership::scenario("fixed", "jobmaster-failures-before-decision", &[]).unwrap();
    let r = try_check(&single, &options(Strategy::Bfs, false)).unwrap();
    assert_eq!(r.verdicts()[property::NO_REANIMATION], Verdict::Holds);
}

#[test]
fn reduced_and_unreduced_runs_agree_on_every_verdict() {
    // Jobs and each job's statuses are interchangeable: depth-first with and without
    // the representative, at small bounds, two and three jobs.
    let mut classes = Vec::new();
    for design in DESIGN_NAMES {
        for scenario in [
            "all",
            "jobmaster-crash",
            "jobmaster-failures",
            "dispatcher-overlap",
        ] {
            for (count, grants, epochs) in [("2", "1", "2"), ("3", "1", "1")] {
                let m = jobs(
                    design,
                    preset(scenario),
                    &[
                        ("jobs", count),
                        ("grants", grants),
                        ("epochs", epochs),
                        ("statuses", "2"),
                    ],
                );
                let plain = try_check(&m, &options(Strategy::Dfs, false)).unwrap();
                let reduced = try_check(&m, &options(Strategy::Dfs, true)).unwrap();
                assert_eq!(
                    plain.verdicts(),
                    reduced.verdicts(),
                    "{design} {scenario} jobs {count}"
                );
                assert!(reduced.unique_states < plain.unique_states);
                classes.push((plain.unique_states, reduced.unique_states));
            }
        }
    }
    // Per design, per scenario: (plain, classes) for two jobs, then three.
    #[rustfmt::skip]
    let pinned = [
            (32721, 5441), (167041, 5797), (33443, 5573), (167041, 5797),
            (120092, 23634), (1171484, 56292), (114941, 18527), (167041, 5797),
            (14275, 2612), (89084, 3266), (14725, 2702), (89084, 3266),
            (81176, 17137), (854325, 43504), (63430, 10736), (89084, 3266),
            (12736, 2206), (167041, 5797), (13314, 2316), (167041, 5797),
            (46355, 9851), (1169864, 56238), (50493, 8278), (167041, 5797),
            (7596, 1386), (89084, 3266), (7934, 1458), (89084, 3266),
            (35681, 7955), (852945, 43456), (33748, 5662), (89084, 3266),
            (11917, 2119), (113400, 3995), (12367, 2209), (113400, 3995),
            (52404, 11496), (960373, 47473), (50193, 8204), (113400, 3995),
        ];
    assert_eq!(classes, pinned);
}

#[test]
fn the_representative_is_one_per_class() {
    // Every reachable state's representative is idempotent, is a member of the
    // state's class, and is shared by the state's job permutations.
    let m = jobs(
        "fixed",
        preset("all"),
        &[("jobs", "3"), ("grants", "1"), ("epochs", "2")],
    );
    let mut seen = std::collections::HashSet::new();
    let mut todo = m.init_states();
    while let Some(s) = todo.pop() {
        if !seen.insert(s) {
            continue;
        }
        let r = s.canonical();
        assert_eq!(r.canonical(), r);
        let mut sorted_views: Vec<State> = s.jobs().iter().map(State::canonical_statuses).collect();
        sorted_views.sort_unstable_by_key(State::pack);
        assert_eq!(r.jobs(), &sorted_views[..]);
        for perm in [[1, 0, 2], [2, 1, 0], [0, 2, 1], [1, 2, 0]] {
            let mut t = s;
            for (to, from) in perm.into_iter().enumerate() {
                t.views[to] = s.views[from];
            }
            assert_eq!(t.canonical(), r);
        }
        let mut actions = Vec::new();
        m.actions(&s, &mut actions);
        todo.extend(actions.into_iter().map(|a| m.next_state(&s, a).unwrap()));
    }
    assert!(seen.len() > 1000, "{}", seen.len());
}

#[test]
fn the_view_shows_the_shared_parts_once_and_each_job_under_its_number() {
    let m = jobs("fixed", preset("all"), &[("jobs", "2")]);
    let mut s = m.init_states()[0];
    for a in [
        JobsAction::Shared(Action::GrantLeadership(1)),
        JobsAction::Job(2, Action::RunGrant(1)),
    ] {
        s = m.next_state(&s, a).unwrap();
    }
    assert_eq!(
        m.domain_view(&s),
        "election: session 1 issued (1 of 3 sessions issued)\n\
         dispatcher: epoch 1 of 3, leading\n\
         job 1:\n  \
         runner (epoch 1): running, result unset, chain [grant 1]\n  \
         scheduler: undecided\n  \
         stores: JobGraph stored, JobResultStore no entry; cleanup none\n\
         job 2:\n  \
         runner (epoch 1): running, result unset, current process 1 (leader session 1)\n  \
         process 1: running, session 1, epoch 1, result unset\n  \
         scheduler: undecided\n  \
         stores: JobGraph stored, JobResultStore no entry; cleanup none"
    );
}

#[test]
fn shared_steps_reach_every_job_and_own_steps_one() {
    let m = jobs("fixed", preset("all"), &[("jobs", "2")]);
    let s = m.init_states()[0];
    let mut actions = Vec::new();
    m.actions(&s, &mut actions);
    // Initially: the grant, and the dispatcher's failover; no job has a step.
    assert_eq!(
        actions,
        [
            JobsAction::Shared(Action::GrantLeadership(1)),
            JobsAction::Shared(Action::DispatcherFailover)
        ]
    );
    let granted = m.next_state(&s, actions[0]).unwrap();
    for v in granted.jobs() {
        assert_eq!(v.chain_len, 1);
        assert_eq!(v.issued, 1);
    }
    let run = m
        .next_state(&granted, JobsAction::Job(2, Action::RunGrant(1)))
        .unwrap();
    assert_eq!(run.job(1).process_count, 0);
    assert_eq!(run.job(2).process_count, 1);
    assert_eq!(
        m.describe_step(&granted, &JobsAction::Job(2, Action::RunGrant(1))),
        "job 2: the runner's chain runs the grant of session 1: it creates process 1"
    );
    // A job whose runner stopped sees the session change but no chain operation.
    let mut stopped = granted;
    stopped.views[0].runner = super::super::RunnerState::Stopped;
    stopped.views[0].chain_len = 0;
    stopped.views[0].chain = [super::super::ChainOp::Empty; super::super::CHAIN_CAPACITY];
    let revoked = m
        .next_state(&stopped, JobsAction::Shared(Action::RevokeLeadership(1)))
        .unwrap();
    assert_eq!((revoked.job(1).issued, revoked.job(1).chain_len), (0, 0));
    assert_eq!((revoked.job(2).issued, revoked.job(2).chain_len), (0, 2));
}
