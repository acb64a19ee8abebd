//! Partial-order reduction of the leadership models ([`steadfast_model::por`]): the
//! footprint of the one-job model and of several jobs passes the audit in every design,
//! in the scenarios with the most faults; reduced checks give the expected verdicts of
//! both tables (breadth first, and depth first with symmetry) in the columns of each
//! kind of fault; a reduced run never has more states than the unreduced one;
//! counterexamples found under reduction replay step by step on the unreduced model;
//! and the reduced state counts are pinned. The scenarios are a sample, not all of
//! them: every property together reads every component, so no step is invisible and a
//! reduced run of all properties visits every state (pinned below); the whole tables
//! took over ten minutes.

use stateright::{Checker, Model};
use steadfast_model::check::{self, CheckOptions, CheckReport, Strategy, Traces};
use steadfast_model::leadership::{Jobs, Leadership};
use steadfast_model::por::{self, Audit};
use steadfast_model::{Expectation, Settings, Spec, Verdict};

/// The most states an audit visits.
const MAX_STATES: usize = 60_000;

/// The one-job scenarios audited and checked: every ordering, one alone, and each kind
/// of fault.
const SCENARIOS: [&str; 4] = [
    "all",
    "ordering-a",
    "jobmaster-failures",
    "dispatcher-overlap",
];

/// The one-job scenario with the most faults, audited in full at [`SMALL`] bounds.
const LARGEST: &str = "dispatcher-overlap-jobmaster-failures";

/// The smallest bounds at which the fault scenarios keep their counterexamples.
const SMALL: [(&str, &str); 3] = [("grants", "2"), ("epochs", "3"), ("statuses", "1")];

/// The one-job model of `design` under `scenario` plus `overrides`.
fn leadership(design: &str, scenario: &str, overrides: &[(&str, &str)]) -> Leadership {
    Leadership::scenario(design, scenario, overrides).expect("valid settings")
}

/// The several-jobs model of `design` under `scenario` (a preset of either model) plus
/// `overrides`.
fn jobs(design: &str, scenario: &str, overrides: &[(&str, &str)]) -> Jobs {
    let mut all = Jobs::preset(scenario).expect("known scenario").to_vec();
    all.extend_from_slice(overrides);
    Jobs::build(
        design,
        &Settings::parse(Jobs::params(), &all).expect("valid"),
    )
    .expect("valid settings")
}

/// Breadth first (or depth first, with symmetry), reduced or not, no traces.
fn options(por: bool, strategy: Strategy, symmetry: bool) -> CheckOptions {
    CheckOptions {
        strategy,
        symmetry,
        por,
        traces: Traces::None,
        threads: 2,
        ..CheckOptions::default()
    }
}

/// Every property's verdict in a report, by name.
fn verdicts(report: &CheckReport) -> Vec<(&'static str, Verdict)> {
    report
        .properties
        .iter()
        .map(|p| (p.name, p.verdict))
        .collect()
}

/// The names of `model`'s properties (the sentinel of unfocused runs left out).
fn names<M: Model>(model: &M) -> Vec<&'static str> {
    model
        .properties()
        .into_iter()
        .map(|p| p.name)
        .filter(|name| *name != check::SENTINEL)
        .collect()
}

/// The audit of `model`, which must pass.
fn audited<M>(model: &M, what: &str) -> Audit
where
    M: por::Footprint,
    M::State: Clone + std::fmt::Debug + std::hash::Hash,
    M::Action: Clone + std::fmt::Debug + Eq + std::hash::Hash,
{
    por::audit(model, MAX_STATES).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Runs `each` on every design, two designs at a time.
fn per_design(each: impl Fn(&'static str) + Sync) {
    let designs = Leadership::designs();
    std::thread::scope(|scope| {
        for pair in designs.chunks(designs.len().div_ceil(2)) {
            let each = &each;
            scope.spawn(move || pair.iter().for_each(|d| each(d)));
        }
    });
}

#[test]
fn the_one_job_footprint_passes_the_audit_in_every_design_and_scenario() {
    per_design(|design| {
        for scenario in SCENARIOS {
            let m = leadership(design, scenario, &[]);
            let a = audited(&m, &format!("{design} {scenario}"));
            assert!(a.states > 1_000, "{design} {scenario}: {a:?}");
            assert!(a.steps >= a.states, "{design} {scenario}: {a:?}");
            assert!(a.independent_pairs > 0, "{design} {scenario}: {a:?}");
            assert!(a.disablings > 0, "{design} {scenario}: {a:?}");
            // Every property together reads every component (`a decided job ends with
            // a clean entry` asks whether any step is enabled): no step is invisible.
            assert_eq!(a.invisible_steps, 0, "{design} {scenario}: {a:?}");
        }
        let m = leadership(design, LARGEST, &SMALL);
        let a = audited(&m, &format!("{design} {LARGEST} small"));
        assert!(a.states > 1_000, "{design} {LARGEST}: {a:?}");
    });
}

#[test]
fn the_footprint_focused_on_each_property_passes_the_audit() {
    // Focused, a model observes only its property's components: the audit checks the
    // steps it then calls invisible.
    per_design(|design| {
        for scenario in ["default", LARGEST] {
            let m = leadership(design, scenario, &SMALL);
            let mut invisible = 0;
            for p in names(&m) {
                let focused = m.focus(Some(p)).expect("a property of the model");
                let a = audited(&focused, &format!("{design} {scenario} `{}`", p));
                invisible += a.invisible_steps;
            }
            assert!(invisible > 0, "{design} {scenario}");
        }
    });
}

#[test]
fn the_several_jobs_footprint_passes_the_audit() {
    let columns = [
        "two-jobs",
        "two-jobs-jobmaster-failures",
        "two-jobs-dispatcher-overlap",
    ];
    per_design(|design| {
        for scenario in columns {
            let m = jobs(design, scenario, &[("grants", "1")]);
            let a = audited(&m, &format!("{design} {scenario}"));
            assert!(a.independent_pairs > 0, "{design} {scenario}: {a:?}");
            assert!(a.disablings > 0, "{design} {scenario}: {a:?}");
            assert_eq!(a.invisible_steps, 0, "{design} {scenario}: {a:?}");
        }
    });
    for scenario in ["jobmaster-crash"] {
        let m = jobs(
            "unpatched",
            scenario,
            &[
                ("jobs", "2"),
                ("grants", "1"),
                ("epochs", "2"),
                ("statuses", "1"),
            ],
        );
        for p in names(&m) {
            let focused = m.focus(Some(p)).expect("a property of the model");
            audited(&focused, &format!("{scenario} `{}`", p));
        }
    }
}

/// Every cell of `table` for `design` in `scenarios`, against a reduced check of its
/// model.
fn assert_cells<M: Spec>(
    table: &[Expectation],
    (build, scenarios): (impl Fn(&str, &str) -> M, &[&str]),
    design: &str,
    options: &CheckOptions,
) {
    for &scenario in scenarios {
        let m = build(design, scenario);
        if options.symmetry && m.representative().is_none() {
            continue;
        }
        let report = check::check(&m, options);
        let cells: Vec<_> = table
            .iter()
            .filter(|e| e.design == design && e.scenario == scenario)
            .collect();
        assert!(
            !cells.is_empty(),
            "{design} {scenario}: no cell in the table"
        );
        for e in cells {
            assert_eq!(
                report.verdict(e.property),
                Some(e.expected),
                "{design} {scenario} `{}` {:?} symmetry {}",
                e.property,
                options.strategy,
                options.symmetry
            );
        }
    }
}

#[test]
fn reduced_checks_give_every_expected_verdict_of_one_job() {
    let table = Leadership::expectations();
    per_design(|design| {
        let build = (|d: &str, s: &str| leadership(d, s, &[]), &SCENARIOS[..]);
        assert_cells(&table, build, design, &options(true, Strategy::Bfs, false));
        assert_cells(&table, build, design, &options(true, Strategy::Dfs, true));
    });
}

#[test]
fn reduced_checks_give_every_expected_verdict_of_several_jobs() {
    let table = Jobs::expectations();
    per_design(|design| {
        let build = (|d: &str, s: &str| jobs(d, s, &[]), &["two-jobs"][..]);
        assert_cells(&table, build, design, &options(true, Strategy::Bfs, false));
        assert_cells(&table, build, design, &options(true, Strategy::Dfs, true));
    });
}

/// Unique states and whether `property` is discovered, in a breadth-first run of
/// `model` focused on it (exhaustive unless it discovers the property).
fn focused_run<M: Spec>(model: &M, property: &'static str) -> (usize, bool) {
    let focused = model
        .focus(Some(property))
        .expect("a property of the model");
    let run = focused
        .checker()
        .threads(2)
        .finish_when(stateright::HasDiscoveries::All)
        .spawn_bfs()
        .join();
    (run.unique_state_count(), run.discovery(property).is_some())
}

#[test]
fn reduced_and_unreduced_runs_agree_and_the_reduced_ones_are_no_larger() {
    for (design, scenario) in [("fixed", "default"), ("unpatched", "all")] {
        let m = leadership(design, scenario, &[]);
        let plain = check::check(&m, &options(false, Strategy::Bfs, false));
        let reduced = check::check(&m, &options(true, Strategy::Bfs, false));
        assert_eq!(verdicts(&plain), verdicts(&reduced), "{design} {scenario}");
        // The properties together observe every component: nothing is reduced.
        assert_eq!(reduced.unique_states, plain.unique_states);
        let (_, in_part) = reduced.expansions.expect("a reduced run tallies");
        assert_eq!(in_part, 0, "{design} {scenario}");
        // One property at a time, a reduced run is smaller where it holds.
        let r = m.reduced().expect("the leadership model has a footprint");
        for p in names(&m) {
            let (full, found) = focused_run(&m, p);
            let (fewer, found_reduced) = focused_run(&r, p);
            assert_eq!(found, found_reduced, "{design} {scenario} `{}`", p);
            // A run that discovers its property stops there; one that does not is
            // exhaustive.
            assert!(found || fewer <= full, "{design} {scenario} `{}`", p);
        }
    }
    let m = jobs("unpatched", "two-jobs", &[("grants", "1")]);
    let r = m.reduced().expect("the several-jobs model has a footprint");
    for p in names(&m) {
        let (full, found) = focused_run(&m, p);
        let (fewer, found_reduced) = focused_run(&r, p);
        assert_eq!(found, found_reduced, "two jobs `{}`", p);
        assert!(found || fewer <= full, "two jobs `{}`", p);
    }
}

/// Replays a path found on a reduced model on the unreduced `model`: it starts at an
/// initial state, each step is among the unreduced model's at its state and leads to
/// the path's next state.
fn assert_replays<M: Spec>(model: &M, path: &[(M::State, Option<M::Action>)], what: &str) {
    assert!(
        model.init_states().contains(&path[0].0),
        "{what}: starts elsewhere"
    );
    for (i, pair) in path.windows(2).enumerate() {
        let (state, action) = (&pair[0].0, pair[0].1.clone().expect("a step"));
        let mut enabled = Vec::new();
        model.actions(state, &mut enabled);
        assert!(enabled.contains(&action), "{what}: step {i} {action:?}");
        assert_eq!(
            model.next_state(state, action).as_ref(),
            Some(&pair[1].0),
            "{what}: step {i}"
        );
    }
}

#[test]
fn counterexamples_found_under_reduction_replay_on_the_unreduced_model() {
    let mut replayed = 0;
    for design in Leadership::designs() {
        for scenario in ["default", "jobmaster-failures"] {
            let m = leadership(design, scenario, &[]);
            let r = m.reduced().expect("the leadership model has a footprint");
            for p in names(&m) {
                if let Some(path) = check::shortest(&r, p) {
                    assert_replays(&m, &path.into_vec(), &format!("{design} {scenario}"));
                    replayed += 1;
                }
            }
        }
    }
    for design in Jobs::designs() {
        let m = jobs(design, "two-jobs", &[("grants", "1")]);
        let r = m.reduced().expect("the several-jobs model has a footprint");
        for p in names(&m) {
            if let Some(path) = check::shortest(&r, p) {
                assert_replays(&m, &path.into_vec(), &format!("{design} two jobs"));
                replayed += 1;
            }
        }
    }
    assert!(replayed > 40, "{replayed}");
}

#[test]
fn reduced_state_counts_are_pinned() {
    let states = |m: &Leadership| check::check(m, &options(true, Strategy::Bfs, false));
    let fixed = states(&leadership("fixed", "default", &[]));
    let unpatched = states(&leadership("unpatched", "default", &[]));
    assert_eq!(
        (fixed.unique_states, unpatched.unique_states),
        (6_786, 34_967)
    );
    // Focused on a safety property that holds, the reduction follows fewer steps.
    let m = leadership("fixed", "default", &[]).reduced().unwrap();
    let focused: Vec<usize> = [
        "no reanimation",
        "one live process",
        "stores agree",
        "a decided job ends with a clean entry",
    ]
    .into_iter()
    .map(|p| focused_run(&m, p).0)
    .collect();
    assert_eq!(focused, [6_588, 6_588, 6_084, 6_786]);
}

#[test]
fn reduced_state_counts_of_several_jobs_are_pinned() {
    // Three jobs, one grant, one epoch, one status: every property together observes
    // every component, so the reduction keeps every state; focused on one property
    // that holds, it skips the interleavings of the jobs' steps the property does not
    // see.
    let settings = [
        ("jobs", "3"),
        ("grants", "1"),
        ("epochs", "1"),
        ("statuses", "1"),
    ];
    let m = jobs("fixed", "all", &settings);
    let report = check::check(&m, &options(true, Strategy::Bfs, false));
    assert_eq!(report.unique_states, 17_370);
    let r = m.reduced().expect("the several-jobs model has a footprint");
    let focused: Vec<usize> = [
        "no reanimation",
        "stores agree",
        "a dispatcher failover recovers a job",
    ]
    .into_iter()
    .map(|p| focused_run(&r, p).0)
    .collect();
    assert_eq!(focused, [4_075, 4_187, 3_066]);
    // Three jobs, two grants, one epoch, three statuses, depth first with symmetry.
    let settings = [("jobs", "3"), ("grants", "2"), ("epochs", "1")];
    let m = jobs("fixed", "all", &settings);
    let report = check::check(&m, &options(true, Strategy::Dfs, true));
    assert_eq!(report.unique_states, 98_670);
}
