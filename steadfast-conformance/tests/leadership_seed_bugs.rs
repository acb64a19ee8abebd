//! The seed bugs of FLINK-39704 put back into the production machines (feature
//! `defects`) conform, step for step, to the model's designs that lack the matching part
//! of the fix; and the fixed model finds each of them at the same first step as the
//! emulated faults of `tests/leadership.rs`.
//!
//! - [`Defect::EagerNotFinished`] (part 1 undone: closing a process completes its result
//!   with NotFinished at once) is the model's `runner-fix-only`;
//! - [`Defect::RevokeClearsLeader`] (the runner fix's bookkeeping undone) is the model's
//!   `revoke-clears-leader` mutant.

use stateright::Model;
use steadfast::leadership::{Defect, Harness, Runner};
use steadfast_conformance::cover::{cover, Coverage};
use steadfast_conformance::leadership::{
    in_environment, start_checked, LeadershipBinding, Observation, Rejection, Runtime, JOB,
};
use steadfast_conformance::{Binding, Problem};
use steadfast_model::check::{self, CheckOptions, Traces};
use steadfast_model::leadership::{Action, Leadership, State};

/// The leadership binding over a driver whose runners carry seed bug `D` (0: eager
/// NotFinished, 1: the revoke clears the leader).
struct SeedBug<const D: u8>;

const fn defect(d: u8) -> Defect {
    match d {
        0 => Defect::EagerNotFinished,
        _ => Defect::RevokeClearsLeader,
    }
}

impl<const D: u8> Binding for SeedBug<D> {
    type Model = Leadership;
    type State = State;
    type Action = Action;
    type Runtime = Runtime;
    type Projection = Observation;
    type Rejection = Rejection;

    fn supports(m: &Leadership) -> Result<(), String> {
        LeadershipBinding::supports(m)
    }

    fn start(m: &Leadership, init: &State) -> Runtime {
        let driver = Harness::stepwise(JOB).with_defects(&[defect(D)]);
        start_checked(init, || Runtime::started_on(in_environment(m, driver)))
    }

    fn model_view(m: &Leadership, s: &State) -> Observation {
        LeadershipBinding::model_view(m, s)
    }

    fn runtime_view(rt: &Runtime) -> Observation {
        LeadershipBinding::runtime_view(rt)
    }

    fn step(m: &Leadership, rt: &mut Runtime, before: &State, a: &Action) -> Result<(), Rejection> {
        LeadershipBinding::step(m, rt, before, a)
    }

    fn probes(m: &Leadership, s: &State) -> Vec<Action> {
        LeadershipBinding::probes(m, s)
    }
}

/// The scenarios each seed bug is replayed under: the default bounds, every ordering
/// with the signal late, crashes, JobMaster failures and overlapping dispatchers.
const SCENARIOS: [&str; 5] = [
    "default",
    "all-late-signal",
    "jobmaster-crash",
    "jobmaster-failures",
    "dispatcher-overlap",
];

fn model(design: &str, scenario: &str) -> Leadership {
    Leadership::scenario(design, scenario, &[]).expect("valid settings")
}

/// Every transition of `m` replayed against the machines carrying seed bug `D`, with
/// the checker's own counts as the yardstick.
fn conforms<const D: u8>(m: &Leadership) -> Coverage {
    let c = cover::<SeedBug<D>>(m).unwrap_or_else(|d| panic!("{d}"));
    let checked = check::check(
        m,
        &CheckOptions {
            traces: Traces::None,
            ..CheckOptions::default()
        },
    );
    assert_eq!(c.unique_states, checked.unique_states);
    assert_eq!(c.transitions, checked.generated_states - 1);
    assert_eq!(c.steps, c.transitions + c.probes);
    c
}

#[test]
fn a_process_closing_with_not_finished_at_once_is_the_runner_fix_only_design() {
    let counts = [
        (11_418, 128_567),
        (16_614, 192_851),
        (25_645, 306_244),
        (101_167, 1_283_083),
        (57_545, 684_189),
    ];
    for (scenario, want) in SCENARIOS.into_iter().zip(counts) {
        let c = conforms::<0>(&model("runner-fix-only", scenario));
        println!("{scenario}: {} states, {} steps", c.unique_states, c.steps);
        assert_eq!((c.unique_states, c.steps), want, "{scenario}");
    }
}

#[test]
fn a_revoke_that_clears_the_leader_is_the_revoke_clears_leader_design() {
    let counts = [
        (11_219, 126_179),
        (21_167, 245_402),
        (23_531, 281_677),
        (107_081, 1_358_415),
        (70_183, 840_974),
    ];
    for (scenario, want) in SCENARIOS.into_iter().zip(counts) {
        let c = conforms::<1>(&model("revoke-clears-leader", scenario));
        println!("{scenario}: {} states, {} steps", c.unique_states, c.steps);
        assert_eq!((c.unique_states, c.steps), want, "{scenario}");
    }
}

#[test]
fn the_fixed_model_finds_each_seed_bug_where_the_emulated_fault_is_found() {
    let fixed = model("fixed", "default");
    let d = cover::<SeedBug<0>>(&fixed).unwrap_err();
    assert_eq!(
        d.trace,
        ["GrantLeadership(1)", "RunGrant(1)", "DispatcherFailover"]
    );
    assert_eq!(
        d.problem,
        Problem::Projection(vec![
            "processes[0].forward_pending: false | true".into(),
            "processes[0].result: null | \"NotFinished\"".into(),
        ])
    );
    let d = cover::<SeedBug<1>>(&fixed).unwrap_err();
    assert_eq!(
        d.trace,
        [
            "GrantLeadership(1)",
            "RunGrant(1)",
            "RevokeLeadership(1)",
            "RunRevoke"
        ]
    );
    assert_eq!(
        d.problem,
        Problem::Projection(vec!["runner.current_process_leader: 1 | null".into()])
    );
}

/// A machine carrying a seed bug says so in its `Debug` form, which divergence reports
/// print; the driver's runners carry what `Runner::with_defects` gives.
#[test]
fn a_runner_and_its_processes_name_their_seed_bug() {
    let m = model("runner-fix-only", "default");
    let init = m.init_states()[0];
    let mut rt = SeedBug::<0>::start(&m, &init);
    let fresh = Runner::with_defects(JOB, &[Defect::EagerNotFinished]);
    assert_eq!(
        format!("{:?}", rt.driver.runner().expect("a runner")),
        format!("{fresh:?}")
    );
    let mut state = init;
    for a in [Action::GrantLeadership(1), Action::RunGrant(1)] {
        SeedBug::<0>::step(&m, &mut rt, &state, &a).unwrap();
        state = m.next_state(&state, a).unwrap();
    }
    let shown = format!("{:?}", rt.driver.runner().expect("a runner"));
    let named = "defects: Defects { eager_not_finished: true, revoke_clears_leader: false }";
    // Once for the runner, once for its process.
    assert_eq!(shown.matches(named).count(), 2, "{shown}");
    assert!(!format!("{:?}", Runner::new(JOB)).contains("defects"));
}
