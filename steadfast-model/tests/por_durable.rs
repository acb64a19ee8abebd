//! Partial-order reduction of the durable model ([`steadfast_model::por`]): its
//! footprint audited against the model over the first states, breadth first, of every
//! design and scenario (over the whole default graph of `fixed` too, a test left out of
//! the default run for its 40 seconds), every verdict of the specification's table
//! unchanged under the reduction (with symmetry, and alone at the default bounds),
//! counterexamples found under it replayed on the unreduced model, and the reduced
//! state counts pinned.

use std::collections::BTreeMap;

use stateright::Model;
use steadfast_model::check::{self, CheckOptions, Strategy, Traces};
use steadfast_model::durable::{Design, Durable, DESIGNS};
use steadfast_model::{por, Settings, Spec, Verdict};

/// Reduced DFS runs at the default settings, unique states.
const PIN_REDUCED_FIXED: usize = 1_481_883;
const PIN_REDUCED_UNPATCHED: usize = 2_784_642;

fn model(design: &str, overrides: &[(&str, &str)]) -> Durable {
    Durable::build(
        design,
        &Settings::parse(Durable::params(), overrides).unwrap(),
    )
    .unwrap()
}

/// One exhaustive run without traces.
fn run(model: &Durable, por: bool, symmetry: bool) -> check::CheckReport {
    let options = CheckOptions {
        threads: 1,
        strategy: Strategy::Dfs,
        traces: Traces::None,
        progress_after: None,
        symmetry,
        por,
    };
    check::try_check(model, &options).unwrap_or_else(|e| panic!("{e}"))
}

/// The table's expected verdicts, per (design, scenario).
fn table() -> BTreeMap<(&'static str, &'static str), BTreeMap<&'static str, Verdict>> {
    let mut table: BTreeMap<_, BTreeMap<_, _>> = BTreeMap::new();
    for e in Durable::expectations() {
        table
            .entry((e.design, e.scenario))
            .or_default()
            .insert(e.property, e.expected);
    }
    table
}

#[test]
fn footprint_holds_at_every_design() {
    for design in DESIGNS {
        let audit = por::audit(&Durable::new(design), 60_000)
            .unwrap_or_else(|e| panic!("{}: {e}", design.name()));
        assert!(audit.states >= 60_000, "{audit:?}");
        assert!(
            audit.independent_pairs > 0 && audit.absorptions > 0,
            "{audit:?}"
        );
        assert!(
            audit.disablings > 0 && audit.invisible_steps > 0,
            "{audit:?}"
        );
    }
}

#[test]
#[ignore = "40 s: run with --ignored"]
fn footprint_holds_over_the_whole_default_graph() {
    let audit =
        por::audit(&Durable::new(Design::Fixed), usize::MAX).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(audit.states, 1_647_487);
}

#[test]
fn footprint_holds_in_every_scenario() {
    for scenario in Durable::scenario_names() {
        for design in [Design::Unpatched, Design::Fixed] {
            let model = Durable::scenario(design, scenario).unwrap();
            let audit = por::audit(&model, 25_000)
                .unwrap_or_else(|e| panic!("{scenario} / {}: {e}", design.name()));
            assert!(audit.steps > audit.states, "{scenario}: {audit:?}");
        }
    }
}

/// Every cell of the specification's table, checked under the reduction (with symmetry
/// where the model has a representative, which halves the time), is what the table (and
/// so the unreduced check, which `tests/durable.rs` holds to it) says.
#[test]
fn reduced_verdicts_are_the_tables() {
    for ((design, scenario), expected) in table() {
        let model = model(design, Durable::preset(scenario).unwrap());
        let symmetry = model.representative().is_some();
        let verdicts = run(&model, true, symmetry).verdicts();
        for (property, verdict) in expected {
            assert_eq!(
                verdicts[property], verdict,
                "{design} / {scenario} / {property}"
            );
        }
    }
}

/// The reduction alone, without symmetry, in every design at the default bounds; and
/// with symmetry it stores fewer states than symmetry alone.
#[test]
fn reduction_alone_keeps_the_default_verdicts() {
    for ((design, scenario), expected) in table() {
        if scenario != "default" {
            continue;
        }
        let model = model(design, &[]);
        let alone = run(&model, true, false);
        for (property, verdict) in expected {
            assert_eq!(
                alone.verdict(property),
                Some(verdict),
                "{design} / {property}"
            );
        }
    }
    let fixed = Durable::new(Design::Fixed);
    let (both, symmetry) = (run(&fixed, true, true), run(&fixed, false, true));
    assert!(both.unique_states < symmetry.unique_states);
}

/// The shortest trace of every discovery under the reduction is a path of the
/// unreduced model: each step is enabled there and leads to the trace's next state.
#[test]
fn reduced_traces_replay_unreduced() {
    let full = Durable::new(Design::Unpatched);
    let reduced = full.reduced().unwrap();
    let report = run(&full, true, false);
    let found: Vec<_> = report
        .properties
        .iter()
        .filter(|p| matches!(p.verdict, Verdict::Counterexample | Verdict::Reached))
        .collect();
    assert!(found.len() >= 5, "{} discoveries", found.len());
    for p in found {
        let path = check::shortest(&reduced, p.name).expect("a discovery has a path");
        let steps = path.into_vec();
        assert_eq!(full.init_states(), vec![steps[0].0.clone()]);
        for pair in steps.windows(2) {
            let ((state, Some(action)), (next, _)) = (&pair[0], &pair[1]) else {
                panic!("a step without an action in {}", p.name);
            };
            let mut enabled = Vec::new();
            full.actions(state, &mut enabled);
            assert!(enabled.contains(action), "{}: {action:?}", p.name);
            assert_eq!(full.next_state(state, *action).as_ref(), Some(next));
        }
    }
}

#[test]
fn reduced_state_counts_are_pinned() {
    for (design, pin) in [
        (Design::Fixed, PIN_REDUCED_FIXED),
        (Design::Unpatched, PIN_REDUCED_UNPATCHED),
    ] {
        let report = run(&Durable::new(design), true, false);
        assert_eq!(report.unique_states, pin, "{}", design.name());
        let (full, part) = report
            .expansions
            .expect("a reduced run counts its expansions");
        assert!(part > 0 && full > part, "{full} full, {part} in part");
    }
}

/// An unreduced run reports no reduction.
#[test]
fn unreduced_run_counts_no_expansions() {
    let report = run(&Durable::new(Design::Fixed), false, false);
    assert_eq!(report.expansions, None);
    assert!(!report.por);
}
