//! The runner over a toy model: two counters that each step up to 3; the state (3, 0)
//! is a "bug". Its shortest path has three steps, while the depth-first or overwritten
//! discovery of a whole-model run is longer. Its design `mirror` has only properties
//! that treat the two counters alike, and the representative that sorts them.
use super::*;
use crate::{Expectation, Param, ParamKind, Settings, SettingsError};

#[derive(Clone)]
struct Toy {
    design: &'static str,
    focus: Option<&'static str>,
    settings: Settings,
}

fn sorted(s: &(u8, u8)) -> (u8, u8) {
    (s.0.min(s.1), s.0.max(s.1))
}

const PARAMS: &[Param] = &[Param {
    name: "max",
    help: "counter limit",
    kind: ParamKind::Int {
        default: 3,
        min: 1,
        max: 9,
    },
}];

impl Model for Toy {
    type State = (u8, u8);
    type Action = u8;
    fn init_states(&self) -> Vec<(u8, u8)> {
        vec![(0, 0)]
    }
    fn actions(&self, s: &(u8, u8), actions: &mut Vec<u8>) {
        let max = self.settings.int("max") as u8;
        if s.1 < max {
            actions.push(1);
        }
        if s.0 < max {
            actions.push(0);
        }
    }
    fn next_state(&self, s: &(u8, u8), a: u8) -> Option<(u8, u8)> {
        Some(if a == 0 {
            (s.0 + 1, s.1)
        } else {
            (s.0, s.1 + 1)
        })
    }
    fn properties(&self) -> Vec<Property<Self>> {
        let all = if self.design == "mirror" {
            vec![
                Property::always("never (3, 3)", |_, s: &(u8, u8)| s.0.min(s.1) < 3),
                Property::always("sum below 9", |_, s: &(u8, u8)| s.0 + s.1 < 9),
                Property::sometimes("one at 2, one at 0", |_, s: &(u8, u8)| sorted(s) == (0, 2)),
                Property::sometimes("never seen", |_, s: &(u8, u8)| s.0.max(s.1) > 20),
            ]
        } else {
            vec![
                Property::always("never (3, x)", |_, s: &(u8, u8)| s.0 < 3),
                Property::always("sum below 9", |_, s: &(u8, u8)| s.0 + s.1 < 9),
                Property::sometimes("both move", |_, s: &(u8, u8)| s.0 > 0 && s.1 > 0),
                Property::sometimes("never seen", |_, s: &(u8, u8)| s.0 > 20),
            ]
        };
        select(all, self.focus)
    }
}

impl Spec for Toy {
    const NAME: &'static str = "toy";
    const SUMMARY: &'static str = "two counters";
    fn designs() -> &'static [&'static str] {
        &["only", "mirror"]
    }
    fn design_name(&self) -> &'static str {
        self.design
    }
    fn settings(&self) -> &Settings {
        &self.settings
    }
    fn params() -> &'static [Param] {
        PARAMS
    }
    fn build(design: &str, settings: &Settings) -> Result<Self, SettingsError> {
        let design = Toy::designs()
            .iter()
            .copied()
            .find(|d| *d == design)
            .ok_or_else(|| SettingsError(format!("unknown design `{design}`")))?;
        Ok(Toy {
            design,
            focus: None,
            settings: settings.clone(),
        })
    }
    fn focus(&self, property: Option<&str>) -> Result<Self, SettingsError> {
        let focus = match property {
            None => None,
            Some(name) => Some(
                Toy::build(self.design, &self.settings)?
                    .properties()
                    .iter()
                    .map(|p| p.name)
                    .find(|n| *n == name && *n != SENTINEL)
                    .ok_or_else(|| SettingsError(format!("unknown property `{name}`")))?,
            ),
        };
        Ok(Toy {
            focus,
            ..self.clone()
        })
    }
    fn describe_step(&self, _: &(u8, u8), a: &u8) -> String {
        format!("counter {a} steps")
    }
    fn expectations() -> Vec<Expectation> {
        Vec::new()
    }
    fn representative(&self) -> Option<fn(&(u8, u8)) -> (u8, u8)> {
        (self.design == "mirror").then_some(sorted as fn(&(u8, u8)) -> (u8, u8))
    }
}

fn toy() -> Toy {
    Toy::build("only", &Settings::defaults(PARAMS)).unwrap()
}

#[test]
fn verdicts_counts_and_shortest_traces() {
    for strategy in [Strategy::Bfs, Strategy::Dfs] {
        let report = check(
            &toy(),
            &CheckOptions {
                strategy,
                ..CheckOptions::default()
            },
        );
        // All 16 states are visited although "never (3, x)" is found early.
        assert_eq!(report.unique_states, 16, "{strategy:?}");
        assert_eq!(report.max_depth, 7, "{strategy:?}");
        assert_eq!(
            report.verdict("never (3, x)"),
            Some(Verdict::Counterexample)
        );
        assert_eq!(report.verdict("sum below 9"), Some(Verdict::Holds));
        assert_eq!(report.verdict("both move"), Some(Verdict::Reached));
        assert_eq!(report.verdict("never seen"), Some(Verdict::Unreached));
        assert_eq!(
            report.verdict(SENTINEL),
            None,
            "the sentinel is not reported"
        );
        assert!(!report.all_good());
        let bug = report.property("never (3, x)").unwrap();
        let steps: Vec<&str> = bug
            .trace
            .as_ref()
            .unwrap()
            .steps
            .iter()
            .map(|s| s.description.as_str())
            .collect();
        assert_eq!(steps, ["counter 0 steps"; 3], "{strategy:?}");
        // Counter 0 is the second enabled action while counter 1 can move.
        assert_eq!(bug.explorer_path.as_deref(), Some("0/1/1/1"));
    }
}

#[test]
fn an_explorer_path_decodes_to_its_actions_and_a_bad_one_says_why() {
    let m = toy();
    assert_eq!(
        decode_explorer_path(&m, "0/1/1/1"),
        Ok(((0, 0), vec![0, 0, 0]))
    );
    assert_eq!(decode_explorer_path(&m, "0"), Ok(((0, 0), vec![])));
    assert_eq!(
        decode_explorer_path(&m, "0/x"),
        Err(BadPath::NotANumber("x".into()))
    );
    assert_eq!(
        decode_explorer_path(&m, "1"),
        Err(BadPath::NoInitialState { index: 1, count: 1 })
    );
    assert_eq!(
        decode_explorer_path(&m, "0/0/2"),
        Err(BadPath::NoAction {
            step: 2,
            index: 2,
            offered: 2
        })
    );
}

#[test]
fn merged_and_separate_properties_agree() {
    // The merged run (no traces, or shortest ones from focused runs) and the run that
    // hands stateright every property give the same counts and verdicts; only the
    // latter carries the run's own traces.
    for strategy in [Strategy::Bfs, Strategy::Dfs] {
        let run = |traces| {
            check(
                &toy(),
                &CheckOptions {
                    strategy,
                    traces,
                    ..CheckOptions::default()
                },
            )
        };
        let own = run(Traces::OfTheRun);
        for traces in [Traces::None, Traces::Shortest] {
            let merged = run(traces);
            assert_eq!(merged.unique_states, own.unique_states, "{traces:?}");
            assert_eq!(merged.generated_states, own.generated_states, "{traces:?}");
            let verdicts = |r: &CheckReport| -> Vec<_> {
                r.properties.iter().map(|p| (p.name, p.verdict)).collect()
            };
            assert_eq!(verdicts(&merged), verdicts(&own), "{traces:?}");
        }
        let bug = |r: &CheckReport| r.property("never (3, x)").unwrap().trace.clone();
        assert!(bug(&run(Traces::None)).is_none());
        let mine = bug(&own).expect("the run's own counterexample");
        let shortest = bug(&run(Traces::Shortest)).unwrap();
        assert_eq!(shortest.steps.len(), 3);
        assert!(mine.steps.len() >= 3, "{strategy:?}");
        assert!(mine.last_state.starts_with("(3, "), "{}", mine.last_state);
    }
}

#[test]
fn settings_shape_the_space_and_reach_the_report() {
    let small = Toy::build("only", &Settings::parse(PARAMS, &[("max", "2")]).unwrap()).unwrap();
    let report = check(&small, &CheckOptions::default());
    assert_eq!(report.unique_states, 9);
    assert_eq!(report.verdict("never (3, x)"), Some(Verdict::Holds));
    assert!(report.property("never (3, x)").unwrap().trace.is_none());
    assert_eq!(report.settings, vec![("max".to_string(), "2".to_string())]);
}

fn mirror() -> Toy {
    Toy::build("mirror", &Settings::defaults(PARAMS)).unwrap()
}

fn dfs(symmetry: bool) -> CheckOptions {
    CheckOptions {
        strategy: Strategy::Dfs,
        symmetry,
        ..CheckOptions::default()
    }
}

fn verdicts(report: &CheckReport) -> Vec<(&'static str, Verdict)> {
    report
        .properties
        .iter()
        .map(|p| (p.name, p.verdict))
        .collect()
}

#[test]
fn symmetry_counts_classes_and_keeps_verdicts() {
    let plain = try_check(&mirror(), &dfs(false)).unwrap();
    let reduced = try_check(&mirror(), &dfs(true)).unwrap();
    assert!(!plain.symmetry);
    assert!(reduced.symmetry);
    // 16 ordered pairs of counters 0..=3, 10 unordered ones.
    assert_eq!(plain.unique_states, 16);
    assert_eq!(reduced.unique_states, 10);
    assert_eq!(reduced.max_depth, 7);
    assert_eq!(verdicts(&plain), verdicts(&reduced));
    assert_eq!(
        verdicts(&reduced),
        [
            ("never (3, 3)", Verdict::Counterexample),
            ("sum below 9", Verdict::Holds),
            ("one at 2, one at 0", Verdict::Reached),
            ("never seen", Verdict::Unreached),
        ]
    );
    // The shortest trace comes from an unreduced BFS run: six single steps.
    let bug = reduced.property("never (3, 3)").unwrap();
    assert_eq!(bug.trace.as_ref().unwrap().steps.len(), 6);
    assert_eq!(bug.trace.as_ref().unwrap().last_state, "(3, 3)");
}

#[test]
fn reduced_discoveries_are_paths_of_the_unreduced_model() {
    // Without the shortest-trace runs the trace is the reduced DFS run's own; it must
    // still be a run of the model (stateright continues from the state it generated,
    // not from its representative).
    let report = try_check(
        &mirror(),
        &CheckOptions {
            traces: Traces::OfTheRun,
            ..dfs(true)
        },
    )
    .unwrap();
    let model = mirror();
    for name in ["never (3, 3)", "one at 2, one at 0"] {
        let p = report.property(name).unwrap();
        let path = p.explorer_path.as_deref().unwrap();
        let mut indices = path.split('/').map(|i| i.parse::<usize>().unwrap());
        let mut state = model.init_states()[indices.next().unwrap()];
        for i in indices {
            let mut actions = Vec::new();
            model.actions(&state, &mut actions);
            state = model.next_state(&state, actions[i]).unwrap();
        }
        assert_eq!(format!("{state:?}"), p.trace.as_ref().unwrap().last_state);
        let found = match name {
            "never (3, 3)" => state == (3, 3),
            _ => sorted(&state) == (0, 2),
        };
        assert!(found, "{name}: {state:?}");
    }
}

#[test]
fn symmetry_that_cannot_be_honoured_is_an_error() {
    let bfs = CheckOptions {
        symmetry: true,
        ..CheckOptions::default()
    };
    assert_eq!(
        try_check(&mirror(), &bfs).unwrap_err(),
        CheckError::SymmetryNeedsDfs
    );
    let e = try_check(&toy(), &dfs(true)).unwrap_err();
    assert_eq!(
        e,
        CheckError::NoSymmetry {
            model: "toy",
            design: "only",
            settings: "max=3".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        "model toy (design only, max=3) has no interchangeable components to reduce by symmetry"
    );
    // Without symmetry the same options are fine, and the report says it was off.
    let report = try_check(&toy(), &dfs(false)).unwrap();
    assert!(!report.symmetry);
    assert_eq!(report.unique_states, 16);
}
