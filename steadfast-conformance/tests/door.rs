//! The generic conformance machinery on a small door (open, close, lock, unlock): full
//! coverage agrees with stateright's own transition count, injected runtime bugs are
//! reported at their first step, and trace files round-trip through JSON and ITF.

use serde::{Deserialize, Serialize};
use stateright::{Checker, Model, Property};
use steadfast_conformance::trace::{self, TraceError};
use steadfast_conformance::{cover::cover, walk::walk, Binding, Problem};
use steadfast_model::check::select;
use steadfast_model::{Expectation, Param, ParamKind, Settings, SettingsError, Spec};

#[derive(Clone, Debug, Hash, PartialEq, Eq, Serialize, Deserialize)]
struct Door {
    open: bool,
    locked: bool,
    openings: u8,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, Serialize, Deserialize)]
enum Act {
    Open,
    Close,
    Lock,
    Unlock,
}

#[derive(Clone)]
struct DoorModel {
    settings: Settings,
    focus: Option<&'static str>,
}

const PARAMS: &[Param] = &[Param {
    name: "openings",
    help: "how often the door may open",
    kind: ParamKind::Int {
        default: 2,
        min: 1,
        max: 5,
    },
}];

impl Model for DoorModel {
    type State = Door;
    type Action = Act;
    fn init_states(&self) -> Vec<Door> {
        vec![Door {
            open: false,
            locked: false,
            openings: 0,
        }]
    }
    fn actions(&self, s: &Door, actions: &mut Vec<Act>) {
        if !s.open && !s.locked && u64::from(s.openings) < self.settings.int("openings") {
            actions.push(Act::Open);
        }
        if s.open {
            actions.push(Act::Close);
        }
        if !s.open && !s.locked {
            actions.push(Act::Lock);
        }
        if s.locked {
            actions.push(Act::Unlock);
        }
    }
    fn next_state(&self, s: &Door, a: Act) -> Option<Door> {
        let mut next = s.clone();
        match a {
            Act::Open => {
                next.open = true;
                next.openings += 1;
            }
            Act::Close => next.open = false,
            Act::Lock => next.locked = true,
            Act::Unlock => next.locked = false,
        }
        Some(next)
    }
    fn properties(&self) -> Vec<Property<Self>> {
        select(
            vec![Property::always("never open and locked", |_, s: &Door| {
                !(s.open && s.locked)
            })],
            self.focus,
        )
    }
}

impl Spec for DoorModel {
    const NAME: &'static str = "door";
    const SUMMARY: &'static str = "a door";
    fn designs() -> &'static [&'static str] {
        &["plain"]
    }
    fn design_name(&self) -> &'static str {
        "plain"
    }
    fn settings(&self) -> &Settings {
        &self.settings
    }
    fn params() -> &'static [Param] {
        PARAMS
    }
    fn build(design: &str, settings: &Settings) -> Result<Self, SettingsError> {
        match design {
            "plain" => Ok(DoorModel {
                settings: settings.clone(),
                focus: None,
            }),
            other => Err(SettingsError(format!("unknown design `{other}`"))),
        }
    }
    fn focus(&self, property: Option<&str>) -> Result<Self, SettingsError> {
        let focus = match property {
            None => None,
            Some("never open and locked") => Some("never open and locked"),
            Some(other) => return Err(SettingsError(format!("unknown property `{other}`"))),
        };
        Ok(DoorModel {
            focus,
            ..self.clone()
        })
    }
    fn describe_step(&self, _: &Door, a: &Act) -> String {
        format!("{a:?} the door")
    }
    fn expectations() -> Vec<Expectation> {
        Vec::new()
    }
}

/// The "production" door, with switchable bugs.
#[derive(Clone, Debug)]
struct RealDoor {
    open: bool,
    locked: bool,
    openings: u8,
    /// Bug 1: a locked door opens anyway.
    opens_when_locked: bool,
    /// Bug 2: the second opening is not counted.
    forgets_second_opening: bool,
}

impl RealDoor {
    fn handle(&mut self, a: &Act) -> Result<(), String> {
        match a {
            Act::Open if self.open => Err("already open".into()),
            Act::Open if self.locked && !self.opens_when_locked => Err("locked".into()),
            Act::Open => {
                self.open = true;
                if !(self.forgets_second_opening && self.openings == 1) {
                    self.openings += 1;
                }
                Ok(())
            }
            Act::Close if !self.open => Err("not open".into()),
            Act::Close => {
                self.open = false;
                Ok(())
            }
            Act::Lock if self.open || self.locked => Err("cannot lock".into()),
            Act::Lock => {
                self.locked = true;
                Ok(())
            }
            Act::Unlock if !self.locked => Err("not locked".into()),
            Act::Unlock => {
                self.locked = false;
                Ok(())
            }
        }
    }
}

#[derive(Serialize, PartialEq, Debug)]
struct View {
    open: bool,
    locked: bool,
    openings: u8,
}

macro_rules! binding {
    ($name:ident, $locked_bug:expr, $count_bug:expr) => {
        struct $name;
        impl Binding for $name {
            type Model = DoorModel;
            type State = Door;
            type Action = Act;
            type Runtime = RealDoor;
            type Projection = View;
            type Rejection = String;
            fn start(_: &DoorModel, _: &Door) -> RealDoor {
                RealDoor {
                    open: false,
                    locked: false,
                    openings: 0,
                    opens_when_locked: $locked_bug,
                    forgets_second_opening: $count_bug,
                }
            }
            fn model_view(_: &DoorModel, s: &Door) -> View {
                View {
                    open: s.open,
                    locked: s.locked,
                    openings: s.openings,
                }
            }
            fn runtime_view(r: &RealDoor) -> View {
                View {
                    open: r.open,
                    locked: r.locked,
                    openings: r.openings,
                }
            }
            fn step(_: &DoorModel, r: &mut RealDoor, _: &Door, a: &Act) -> Result<(), String> {
                r.handle(a)
            }
            fn probes(m: &DoorModel, s: &Door) -> Vec<Act> {
                let mut enabled = Vec::new();
                m.actions(s, &mut enabled);
                // Opening beyond the bound is the model's limit, not the door's rule.
                [Act::Open, Act::Close, Act::Lock, Act::Unlock]
                    .into_iter()
                    .filter(|a| !enabled.contains(a))
                    .filter(|a| !(*a == Act::Open && !s.open && !s.locked))
                    .collect()
            }
        }
    };
}

binding!(Correct, false, false);
binding!(OpensWhenLocked, true, false);
binding!(ForgetsSecond, false, true);

fn model(openings: &str) -> DoorModel {
    let settings = Settings::parse(PARAMS, &[("openings", openings)]).unwrap();
    DoorModel::build("plain", &settings).unwrap()
}

#[test]
fn coverage_takes_every_transition_stateright_generates() {
    let m = model("3");
    let c = cover::<Correct>(&m).expect("the correct door conforms");
    let checker = m.clone().checker().spawn_bfs().join();
    assert_eq!(c.unique_states, checker.unique_state_count());
    // stateright counts the initial state among generated states.
    assert_eq!(c.transitions, checker.state_count() - 1);
    assert_eq!(c.transitions, trace::trace_set(&m).len());
    assert_eq!(
        c.kinds.len(),
        4,
        "every action kind is taken: {:?}",
        c.kinds
    );
    assert!(c.probes > 0);
    assert_eq!(c.steps, c.transitions + c.probes);
}

#[test]
fn an_accepted_forbidden_event_is_reported() {
    let d = cover::<OpensWhenLocked>(&model("2")).unwrap_err();
    assert_eq!(d.problem, Problem::Accepted);
    assert_eq!(d.action, "Open");
    // Breadth-first coverage reports the shortest way in.
    assert_eq!(d.trace, vec!["Lock", "Open"]);
    assert_eq!(d.step, 2);
}

#[test]
fn a_projection_difference_is_reported_at_its_first_step() {
    let d = cover::<ForgetsSecond>(&model("2")).unwrap_err();
    assert_eq!(d.trace, vec!["Open", "Close", "Open"]);
    assert_eq!(d.step, 3);
    assert_eq!(
        d.problem,
        Problem::Projection(vec!["openings: 2 | 1".to_string()])
    );
    let text = d.to_string();
    assert!(text.contains("diverge at step 3 (Open)"), "{text}");
    assert!(text.contains("openings: 2 | 1"), "{text}");
    let w = walk::<ForgetsSecond>(&model("2"), 7, 50, 20).unwrap_err();
    assert!(matches!(w.problem, Problem::Projection(_)));
}

#[test]
fn walks_are_reproducible() {
    let a = walk::<Correct>(&model("5"), 42, 20, 30).unwrap();
    let b = walk::<Correct>(&model("5"), 42, 20, 30).unwrap();
    assert_eq!(
        (a.steps, a.probes, a.longest),
        (b.steps, b.probes, b.longest)
    );
    assert_eq!(a.walks, 20);
    assert!(a.steps > 0);
}

#[test]
fn json_and_itf_traces_round_trip_and_replay() {
    let m = model("2");
    let (init, actions) = trace::trace_set(&m).pop().unwrap();
    let json = serde_json::to_string(&trace::to_json(&m, init, &actions).unwrap()).unwrap();
    let itf = serde_json::to_string(&trace::to_itf(&m, init, &actions).unwrap()).unwrap();
    assert!(itf.contains("\"#bigint\""), "{itf}");
    let from_json = trace::parse("t.json", &json).unwrap();
    let from_itf = trace::parse("t.itf.json", &itf).unwrap();
    assert_eq!(from_json.steps, from_itf.steps);
    assert_eq!(from_json.settings, from_itf.settings);
    let r = trace::replay::<Correct>(&from_itf).unwrap();
    assert!(r.divergence.is_none());
    assert_eq!(r.steps.len(), actions.len());
    assert!(r.steps.iter().all(|s| s.agreed));
}

#[test]
fn bad_trace_files_get_named_errors() {
    let m = model("2");
    let good = trace::to_json(&m, 0, &[Act::Open, Act::Close]).unwrap();
    assert!(matches!(
        trace::parse("cut.json", "{\"format\": \"steadfast-trace/1\", \"model\""),
        Err(TraceError::Malformed { file, .. }) if file == "cut.json"
    ));
    let mut other = good.clone();
    other.model = "leadership".into();
    let loaded = trace::parse("o.json", &serde_json::to_string(&other).unwrap()).unwrap();
    assert_eq!(
        trace::replay::<Correct>(&loaded).unwrap_err().to_string(),
        "o.json: a trace of model `leadership`, not of model `door`"
    );
    let mut unknown = good.clone();
    unknown.steps[2].action = Some(serde_json::json!("Slam"));
    let loaded = trace::parse("u.json", &serde_json::to_string(&unknown).unwrap()).unwrap();
    let e = trace::replay::<Correct>(&loaded).unwrap_err().to_string();
    assert!(
        e.starts_with("u.json: step 2: unknown action `Slam`"),
        "{e}"
    );
    let mut disabled = good.clone();
    disabled.steps[2].action = Some(serde_json::json!("Unlock"));
    disabled.steps[2].state = None;
    let loaded = trace::parse("d.json", &serde_json::to_string(&disabled).unwrap()).unwrap();
    let e = trace::replay::<Correct>(&loaded).unwrap_err().to_string();
    assert_eq!(e, "d.json: step 2: Unlock is not enabled in the model here");
    let mut bounds = good;
    bounds.settings.insert("openings".into(), "99".into());
    let loaded = trace::parse("b.json", &serde_json::to_string(&bounds).unwrap()).unwrap();
    let e = trace::replay::<Correct>(&loaded).unwrap_err().to_string();
    assert_eq!(e, "b.json: `openings` must be within 1..=5, got 99");
}
