//! Checks of the durable-actions model (flink-agents issue 1158): the expected-verdict
//! table per design and scenario, pinned state counts, the seed's regression as the
//! shortest counterexample, and the supplier counts the seed printed.
//!
//! Over 800 lines as a table: verdicts and pinned counts per design and scenario, one
//! test per finding, sharing the helpers at the top.

use std::collections::BTreeMap;

use stateright::{Checker, HasDiscoveries, Model, Path};
use steadfast_model::check::{self, CheckOptions, Traces};
use steadfast_model::durable::{
    property, Action, ActionState, Design, Durable, State, StateKey, DESIGNS,
};
use steadfast_model::{Settings, Spec, Verdict};

fn verdicts_of(model: &Durable) -> (usize, BTreeMap<&'static str, Verdict>) {
    let report = check::check(
        model,
        &CheckOptions {
            traces: Traces::None,
            ..CheckOptions::default()
        },
    );
    let verdicts = report
        .properties
        .iter()
        .map(|p| (p.name, p.verdict))
        .collect();
    (report.unique_states, verdicts)
}

/// One early-stopping BFS focused on one property: enough for a counterexample or a
/// reached example, and the only way to see one quickly.
fn found(model: &Durable, name: &'static str) -> bool {
    model
        .focus(Some(name))
        .unwrap()
        .checker()
        .threads(1)
        .finish_when(HasDiscoveries::Any)
        .spawn_bfs()
        .join()
        .discovery(name)
        .is_some()
}

#[test]
fn default_verdicts_and_pinned_state_counts() {
    // Unique states at default bounds, single-threaded BFS.
    let pinned = [
        (Design::Unpatched, PIN_UNPATCHED),
        (Design::OldPutOrder, PIN_OLD_PUT_ORDER),
        (Design::UnprunedTracking, PIN_UNPRUNED_TRACKING),
        (Design::Fixed, PIN_FIXED),
        (Design::CommitOnSnapshot, PIN_COMMIT_ON_SNAPSHOT),
    ];
    let expectations = Durable::expectations();
    let runs: Vec<_> = pinned
        .iter()
        .map(|(design, _)| verdicts_of(&Durable::new(*design)))
        .collect();
    for ((design, _), (unique, _)) in pinned.iter().zip(&runs) {
        println!("{} unique={unique}", design.name());
    }
    for ((design, count), (unique, verdicts)) in pinned.into_iter().zip(runs) {
        assert_eq!(unique, count, "{} unique states", design.name());
        let rows: Vec<_> = expectations
            .iter()
            .filter(|e| e.design == design.name() && e.scenario == "default")
            .collect();
        // Every safety and reachability property has a row.
        assert_eq!(
            rows.len(),
            property::SAFETY.len() + property::REACHABILITY.len()
        );
        for e in rows {
            assert_eq!(
                verdicts.get(e.property),
                Some(&e.expected),
                "{} / {}",
                e.design,
                e.property
            );
        }
    }
}

const PIN_UNPATCHED: usize = 3_159_459;
const PIN_OLD_PUT_ORDER: usize = 1_647_487;
const PIN_UNPRUNED_TRACKING: usize = 1_704_483;
const PIN_FIXED: usize = 1_647_487;
const PIN_COMMIT_ON_SNAPSHOT: usize = 1_791_721;

#[test]
fn scenario_verdicts_match_the_specification() {
    let expectations = Durable::expectations();
    let mut groups: BTreeMap<(&str, &str), Vec<_>> = BTreeMap::new();
    for e in expectations.iter().filter(|e| e.scenario != "default") {
        groups.entry((e.scenario, e.design)).or_default().push(e);
    }
    for ((scenario, design), rows) in groups {
        let model = Durable::scenario(Design::from_name(design).unwrap(), scenario).unwrap();
        if rows.iter().all(|e| e.expected == Verdict::Counterexample) {
            for e in rows {
                assert!(
                    found(&model, e.property),
                    "{scenario} / {design} / {}",
                    e.property
                );
            }
        } else {
            let (_, verdicts) = verdicts_of(&model);
            for e in rows {
                assert_eq!(
                    verdicts.get(e.property),
                    Some(&e.expected),
                    "{scenario} / {design} / {}",
                    e.property
                );
            }
        }
    }
}

fn seed_actions() -> Vec<Action> {
    use Action::*;
    vec![
        DeliverInput(0),
        StartAction(0),
        CallSupplier(0),
        SendPut(0),
        AckPut(0),
        TriggerCheckpoint,
        CompleteCheckpoint(1),
        Crash { landed: false },
        Restore,
        StartAction(0),
        CallSupplier(0),
    ]
}

#[test]
fn unpatched_shortest_counterexample_is_the_seed_regression() {
    let model = Durable::new(Design::Unpatched);
    let path = check::shortest(&model, property::CALL_AT_MOST_ONCE).expect("a counterexample");
    let steps: Vec<Action> = path.clone().into_actions();
    assert_eq!(steps, seed_actions());
    let trace = check::trace_of(&model, path);
    let words: Vec<&str> = trace.steps.iter().map(|s| s.description.as_str()).collect();
    assert_eq!(
        words,
        [
            "the source delivers key 0 input 0 (sequence number 0)",
            "key 0 input 0: action starts, nothing saved",
            "key 0 input 0: supplier called for call 0 (run #1)",
            "key 0 input 0: put of the state with call 0's result sent, cached at once",
            "key 0 input 0: state with 1 call result(s) lands at partition 0 offset 0, acknowledged",
            "checkpoint 1 taken (queued: key 0 input 0; marker p0=1)",
            "checkpoint 1 completes; finished states pruned",
            "the task crashes",
            "restore from the completed checkpoint; replay p0 from offset 1",
            "key 0 input 0: action starts, nothing saved",
            "key 0 input 0: supplier called for call 0 (run #2)",
        ]
    );
    assert_eq!(
        trace.shape.as_deref(),
        Some(
            "seed regression: call saved, checkpoint with the action queued, crash, restore, \
             supplier called again"
        )
    );
}

/// Runs key 0's queue head to completion, taking its own steps (and acknowledging its
/// puts); returns the final state.
fn drive_key0(model: &Durable, mut state: State) -> State {
    let seq = state.finished[0];
    while state.finished[0] == seq {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        let step = actions
            .into_iter()
            .find(|a| {
                matches!(
                    a,
                    Action::StartAction(0)
                        | Action::ReuseResult(0)
                        | Action::CallSupplier(0)
                        | Action::SendPut(0)
                        | Action::CompleteAction(0)
                        | Action::AckPut(0)
                )
            })
            .expect("key 0 can always make progress here");
        state = model.next_state(&state, step).unwrap();
    }
    state
}

/// The seed's scenario on one design: the prefix of the unpatched counterexample up to
/// the restore, then the restored action runs to its output. Returns supplier runs of
/// every call of key 0 input 0 and whether its output was emitted.
fn seed_scenario(design: Design, overrides: &[(&str, &str)]) -> (Vec<u8>, bool) {
    let settings = Settings::parse(Durable::params(), overrides).unwrap();
    let model = Durable::build(design.name(), &settings).unwrap();
    let prefix = &seed_actions()[..9];
    let init = model.init_states().remove(0);
    let path = Path::from_actions(&model, init, prefix).expect("the prefix is enabled");
    let restored = path.last_state().clone();
    let done = drive_key0(&model, restored);
    let sk = StateKey {
        key: 0,
        seq: 0,
        action: 0,
    };
    let runs = (0..model.bounds.calls).map(|c| done.runs(sk, c)).collect();
    (runs, done.finished[0] == 1)
}

#[test]
fn supplier_calls_like_the_seed() {
    // Default bounds (two calls): call 0 runs twice unpatched, once fixed.
    assert_eq!(seed_scenario(Design::Unpatched, &[]), (vec![2, 1], true));
    assert_eq!(seed_scenario(Design::Fixed, &[]), (vec![1, 1], true));
    // The seed's action made one durable call: supplier_calls=2 before, 1 after.
    let one = [("calls", "1")];
    assert_eq!(seed_scenario(Design::Unpatched, &one), (vec![2], true));
    assert_eq!(seed_scenario(Design::Fixed, &one), (vec![1], true));
    assert_eq!(seed_scenario(Design::OldPutOrder, &one), (vec![1], true));
    assert_eq!(
        seed_scenario(Design::UnprunedTracking, &one),
        (vec![1], true)
    );
}

#[test]
fn fixed_reuses_where_unpatched_calls_again() {
    let prefix = &seed_actions()[..10];
    for (design, next) in [
        (Design::Unpatched, Action::CallSupplier(0)),
        (Design::Fixed, Action::ReuseResult(0)),
    ] {
        let model = Durable::new(design);
        let init = model.init_states().remove(0);
        let path = Path::from_actions(&model, init, prefix).unwrap();
        let mut actions = Vec::new();
        model.actions(path.last_state(), &mut actions);
        assert!(actions.contains(&next), "{}: {actions:?}", design.name());
    }
}

#[test]
fn synchronous_executor_needs_two_crashes() {
    use Action::*;
    let model = Durable::scenario(Design::Unpatched, "synchronous-executor").unwrap();
    let path = check::shortest(&model, property::CALL_AT_MOST_ONCE).expect("a counterexample");
    assert_eq!(
        path.clone().into_actions(),
        vec![
            DeliverInput(0),
            TriggerCheckpoint,
            CompleteCheckpoint(1),
            StartAction(0),
            CallSupplier(0),
            SendPut(0),
            Crash { landed: true },
            Restore,
            TriggerCheckpoint,
            CompleteCheckpoint(2),
            Crash { landed: false },
            Restore,
            StartAction(0),
            CallSupplier(0),
        ]
    );
    let trace = check::trace_of(&model, path);
    assert!(trace
        .shape
        .unwrap()
        .starts_with("seed's three-attempt regression (2 crashes)"));
    // With one crash the synchronous executor never repeats a saved call (verdict
    // table), though the marker is already unsafe.
    let one = Durable::scenario(Design::Unpatched, "synchronous-executor-one-crash").unwrap();
    assert!(!found(&one, property::CALL_AT_MOST_ONCE));
    assert!(found(&one, property::MARKER_IS_SAFE));
}

#[test]
fn compact_offsets_is_an_exact_reduction() {
    // Small bounds: the verdicts agree with real positions; only the count shrinks.
    for design in DESIGNS {
        let counts: Vec<(usize, BTreeMap<_, _>)> = ["true", "false"]
            .into_iter()
            .map(|compact| {
                let settings = Settings::parse(
                    Durable::params(),
                    &[
                        ("inputs", "1"),
                        ("send-failures", "1"),
                        ("fail-after-landing", "true"),
                        ("compact-offsets", compact),
                    ],
                )
                .unwrap();
                verdicts_of(&Durable::build(design.name(), &settings).unwrap())
            })
            .collect();
        assert_eq!(counts[0].1, counts[1].1, "{}", design.name());
        assert!(counts[0].0 < counts[1].0, "{}", design.name());
    }
}

#[test]
fn bad_settings_are_errors_naming_the_problem() {
    let params = Durable::params();
    let e = Durable::build("patched", &Settings::defaults(params)).unwrap_err();
    assert!(e.0.contains("unknown design `patched`"), "{e}");
    let s = Settings::parse(params, &[("keys", "1"), ("partitions", "2")]).unwrap();
    let e = Durable::build("fixed", &s).unwrap_err();
    assert!(
        e.0.contains("`partitions` (2) must not exceed `keys` (1)"),
        "{e}"
    );
    let s = Settings::parse(
        params,
        &[
            ("keys", "3"),
            ("inputs", "3"),
            ("actions", "2"),
            ("calls", "3"),
            ("crashes", "3"),
        ],
    )
    .unwrap();
    let e = Durable::build("fixed", &s).unwrap_err();
    assert!(e.0.contains("records to one partition"), "{e}");
    let e = Durable::new(Design::Fixed)
        .focus(Some("calls once"))
        .unwrap_err();
    assert!(e.0.contains("unknown property `calls once`"), "{e}");
    let e = Settings::parse(params, &[("concurrent-checkpoints", "4")]).unwrap_err();
    assert!(
        e.0.contains("`concurrent-checkpoints` must be within 1..=3, got 4"),
        "{e}"
    );
    let e = Durable::scenario(Design::Fixed, "lossy").unwrap_err();
    assert!(e.0.contains("unknown scenario `lossy`"), "{e}");
    let s = Settings::parse(
        params,
        &[("zombie-sends", "true"), ("concurrent-puts", "true")],
    )
    .unwrap();
    let e = Durable::build("fixed", &s).unwrap_err();
    assert!(e.0.contains("`zombie-sends` needs sequential puts"), "{e}");
    for (overrides, problem) in [
        (
            &[("subtasks", "2"), ("partitions", "2")][..],
            "`subtasks` (2) times `partitions` (2) must be at most 2",
        ),
        (
            &[("subtasks", "2"), ("keys", "1")][..],
            "`subtasks` (2) must not exceed `keys` (1)",
        ),
        (
            &[("rescale", "true")][..],
            "`rescale` and `own-marker` need `subtasks 2`",
        ),
        (
            &[("own-marker", "true")][..],
            "`rescale` and `own-marker` need `subtasks 2`",
        ),
    ] {
        let s = Settings::parse(params, overrides).unwrap();
        let e = Durable::build("fixed", &s).unwrap_err();
        assert!(e.0.contains(problem), "{overrides:?}: {e}");
    }
}

#[test]
fn actions_and_states_cross_the_serde_boundary() {
    let actions = seed_actions();
    let json = serde_json::to_string(&actions).unwrap();
    let back: Vec<Action> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, actions);
    let model = Durable::new(Design::Fixed);
    let init = model.init_states().remove(0);
    let path = Path::from_actions(&model, init, &actions[..5]).unwrap();
    let value = serde_json::to_value(path.last_state()).unwrap();
    assert_eq!(value["finished"], serde_json::json!([0, 0, 0]));
    assert_eq!(value["log_len"], serde_json::json!([1, 0]));
    // Typed fields: the supplier's one run of key 0 input 0 call 0, nothing in flight.
    let key0 = serde_json::json!({ "key": 0, "seq": 0, "action": 0 });
    assert_eq!(
        value["supplier_runs"],
        serde_json::json!([{ "state_key": key0, "call": 0, "runs": 1 }])
    );
    assert_eq!(value["puts"], serde_json::json!([]));
    // The log, the cache and the acknowledged offsets list only the state keys they
    // hold.
    let state = serde_json::json!({ "calls": 1, "completed": false });
    assert_eq!(
        value["log"],
        serde_json::json!([{
            "state_key": key0,
            "latest": state,
            "offset": 0,
            "landed": [state],
        }])
    );
    assert_eq!(
        value["cache"],
        serde_json::json!([{ "state_key": key0, "state": state }])
    );
    assert_eq!(
        value["acked_offset"],
        serde_json::json!([{ "state_key": key0, "offset": 0 }])
    );
    assert_eq!(value["phase"][0], serde_json::json!({ "AtCall": 1 }));
}

fn concurrent(design: Design, overrides: &[(&str, &str)]) -> Durable {
    let mut all = vec![("concurrent-checkpoints", "2")];
    all.extend_from_slice(overrides);
    Durable::build(
        design.name(),
        &Settings::parse(Durable::params(), &all).unwrap(),
    )
    .unwrap()
}

fn enabled(model: &Durable, state: &State) -> Vec<Action> {
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    actions
}

#[test]
fn concurrent_checkpoints_keep_every_verdict_with_pinned_counts() {
    // The `concurrent-checkpoints` scenario (two pending at once, three in all, one
    // input per key): the default table's verdicts (checked with the other scenarios),
    // at these counts.
    let pinned: [usize; DESIGNS.len()] = [158_217, 71_185, 71_633, 71_185, 76_797];
    for (design, count) in DESIGNS.into_iter().zip(pinned) {
        let model = Durable::scenario(design, "concurrent-checkpoints").unwrap();
        assert_eq!(model.bounds.concurrent_checkpoints, 2);
        let (unique, verdicts) = verdicts_of(&model);
        assert_eq!(unique, count, "{}", design.name());
        let expected: BTreeMap<&str, Verdict> = Durable::expectations()
            .into_iter()
            .filter(|e| e.design == design.name() && e.scenario == "concurrent-checkpoints")
            .map(|e| (e.property, e.expected))
            .collect();
        assert_eq!(expected.len(), verdicts.len());
        assert_eq!(verdicts, expected, "{}", design.name());
    }
    // `fixed` at the default bounds with two pending at once: every safety property
    // holds, every reachability property is reached.
    let (unique, verdicts) = verdicts_of(&concurrent(Design::Fixed, &[]));
    assert_eq!(unique, 1_863_179);
    for p in property::SAFETY {
        assert_eq!(verdicts[p], Verdict::Holds, "{p}");
    }
    for p in property::REACHABILITY {
        assert_eq!(verdicts[p], Verdict::Reached, "{p}");
    }
}

/// A call saved, then two checkpoints taken with the action still queued.
fn two_pending() -> Vec<Action> {
    use Action::*;
    vec![
        DeliverInput(0),
        TriggerCheckpoint,
        StartAction(0),
        CallSupplier(0),
        SendPut(0),
        AckPut(0),
        TriggerCheckpoint,
    ]
}

#[test]
fn one_checkpoint_at_a_time_by_default() {
    let model = Durable::new(Design::Fixed);
    assert_eq!(model.bounds.concurrent_checkpoints, 1);
    let init = model.init_states().remove(0);
    let path = Path::from_actions(&model, init, &two_pending()[..6]).unwrap();
    let state = path.last_state();
    assert_eq!(state.pending_count(), 1);
    let actions = enabled(&model, state);
    assert!(actions.contains(&Action::CompleteCheckpoint(1)));
    assert!(!actions.contains(&Action::TriggerCheckpoint));
}

#[test]
fn a_later_completion_subsumes_the_older_pending_checkpoint() {
    use Action::*;
    let model = concurrent(Design::Fixed, &[]);
    let init = model.init_states().remove(0);
    let path = Path::from_actions(&model, init, &two_pending()).unwrap();
    let both = path.last_state().clone();
    let pending: Vec<(u8, [u8; 3])> = both
        .pending_checkpoints()
        .map(|(id, c)| (id, [c.next_seq[0], c.finished[0], c.marker[0]]))
        .collect();
    // Checkpoint 1 before the call was saved (marker at the end, 0), checkpoint 2 after
    // (marker rewound to the saved record, 0; end offset 1).
    assert_eq!(pending, [(1, [1, 0, 0]), (2, [1, 0, 0])]);
    assert_eq!(both.log_len[0], 1);
    let actions = enabled(&model, &both);
    assert!(actions.contains(&CompleteCheckpoint(1)));
    assert!(actions.contains(&CompleteCheckpoint(2)));
    assert!(!actions.contains(&TriggerCheckpoint));
    let json = serde_json::to_value(&both).unwrap();
    assert_eq!(json["pending"].as_array().unwrap().len(), 2);

    // Completing the later one subsumes the earlier: it never completes.
    let words = model.describe_step(&both, &CompleteCheckpoint(2));
    assert_eq!(
        words,
        "checkpoint 2 completes; finished states pruned; checkpoint 1 subsumed"
    );
    let after = model.next_state(&both, CompleteCheckpoint(2)).unwrap();
    assert_eq!(after.pending_count(), 0);
    assert_eq!(after.completed, both.pending[1]);
    assert!(!enabled(&model, &after)
        .iter()
        .any(|a| matches!(a, CompleteCheckpoint(_))));
    assert!(model.next_state(&after, CompleteCheckpoint(1)).is_none());

    // Completing the earlier one keeps the later one pending, now first.
    let after = model.next_state(&both, CompleteCheckpoint(1)).unwrap();
    assert_eq!(after.completed, both.pending[0]);
    let left: Vec<u8> = after.pending_checkpoints().map(|(id, _)| id).collect();
    assert_eq!(left, [2]);
    assert_eq!(after.pending[0], both.pending[1]);
    assert_eq!(
        model.describe_step(&after, &CompleteCheckpoint(2)),
        "checkpoint 2 completes; finished states pruned"
    );
    assert!(enabled(&model, &after).contains(&CompleteCheckpoint(2)));
}

#[test]
fn a_crash_aborts_every_pending_checkpoint() {
    use Action::*;
    let model = concurrent(Design::Fixed, &[("checkpoints", "3")]);
    let init = model.init_states().remove(0);
    let mut actions = vec![TriggerCheckpoint, CompleteCheckpoint(1)];
    actions.extend(two_pending());
    let path = Path::from_actions(&model, init, &actions).unwrap();
    let state = path.last_state();
    assert_eq!(
        state
            .pending_checkpoints()
            .map(|(id, _)| id)
            .collect::<Vec<_>>(),
        [2, 3]
    );
    let down = model.next_state(state, Crash { landed: false }).unwrap();
    assert_eq!(down.pending_count(), 0);
    assert_eq!(down.checkpoints, 3);
    let restored = model.next_state(&down, Restore).unwrap();
    // The restore point is the one completed before the crash: nothing delivered.
    assert_eq!(restored.next_seq[0], 0);
    assert!(!enabled(&model, &restored).contains(&TriggerCheckpoint));
}

/// The unpatched model with every property, and its shortest repeated call (the seed's
/// counterexample).
fn repeated_call() -> (Durable, stateright::Path<State, Action>) {
    let m = Durable::build(
        "unpatched",
        &steadfast_model::Settings::parse(Durable::params(), &[]).unwrap(),
    )
    .unwrap();
    let path = steadfast_model::check::shortest(&m, property::CALL_AT_MOST_ONCE).unwrap();
    (m.focus(None).unwrap(), path)
}

/// The Explorer's text of the last step of the seed's counterexample says it violates
/// "call at most once".
#[test]
fn explorer_step_of_the_repeated_call_violates_call_at_most_once() {
    use stateright::Model;
    let (full, path) = repeated_call();
    let pairs = path.into_vec();
    let (state, action) = &pairs[pairs.len() - 2];
    let text = full.format_step(state, action.unwrap()).unwrap();
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("VIOLATES ") && first.contains(property::CALL_AT_MOST_ONCE),
        "{first}"
    );
    // Below the verdict and the step, the state in words: no checker byte codes.
    assert!(text.contains("\nkey 0: "), "{text}");
    assert!(
        text.contains("supplier runs: key 0 input 0 call 0: 2"),
        "{text}"
    );
    assert!(text.contains("latest completed: "), "{text}");
    for raw in ["255", "phase:", "supplier_runs", "[", "{"] {
        assert!(!text.contains(raw), "`{raw}` in {text}");
    }
    let (state, action) = &pairs[0];
    let text = full.format_step(state, action.unwrap()).unwrap();
    assert!(text.starts_with("all "), "{text}");
}

/// The lane picture of the seed's counterexample: well-formed XML, one row per step, a
/// lane per key, the crash drawn across every lane, the last row red and naming "call
/// at most once".
#[test]
fn lane_picture_of_the_repeated_call_has_one_row_per_step_and_marks_the_violation() {
    use stateright::Model;
    let (full, path) = repeated_call();
    let steps = path.clone().into_vec().len() - 1;
    let svg = full.as_svg(path).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let rows: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("g")).collect();
    assert_eq!(rows.len(), steps);
    let last = rows.last().unwrap();
    assert_eq!(last.attribute("class"), Some("step violation"));
    let text: String = last.descendants().filter_map(|n| n.text()).collect();
    assert!(text.contains(property::CALL_AT_MOST_ONCE), "{text}");
    let lanes: Vec<&str> = doc
        .root_element()
        .children()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(lanes.starts_with(&["source", "key 0"]), "{lanes:?}");
    assert!(
        lanes.ends_with(&["supplier", "log", "checkpoints"]),
        "{lanes:?}"
    );
    let across = rows
        .iter()
        .filter(|r| {
            r.descendants()
                .any(|n| n.attribute("class") == Some("across"))
        })
        .count();
    assert!(
        across >= 2,
        "the crash and the restore cross every lane: {across}"
    );
}

#[test]
fn concurrent_puts_keep_every_verdict_with_pinned_counts() {
    // The `concurrent-puts` scenario (one input per key): the default table's verdicts
    // (checked with the other scenarios), at these counts.
    let pinned: [usize; DESIGNS.len()] = [57_576, 34_630, 34_748, 34_630, 35_794];
    for (design, count) in DESIGNS.into_iter().zip(pinned) {
        let model = Durable::scenario(design, "concurrent-puts").unwrap();
        assert!(model.bounds.concurrent_puts);
        let (unique, _) = verdicts_of(&model);
        assert_eq!(unique, count, "{}", design.name());
    }
    // `fixed` at the default bounds with every key's put in flight at once: every
    // safety property holds, every reachability property is reached.
    let settings = Settings::parse(Durable::params(), &[("concurrent-puts", "true")]).unwrap();
    let model = Durable::build("fixed", &settings).unwrap();
    let (unique, verdicts) = verdicts_of(&model);
    assert_eq!(unique, 2_846_106);
    for p in property::SAFETY {
        assert_eq!(verdicts[p], Verdict::Holds, "{p}");
    }
    for p in property::REACHABILITY {
        assert_eq!(verdicts[p], Verdict::Reached, "{p}");
    }
}

#[test]
fn concurrent_puts_land_and_are_answered_in_any_order() {
    use Action::*;
    let model = Durable::scenario(Design::Fixed, "concurrent-puts").unwrap();
    let sequential = Durable::scenario(Design::Fixed, "asynchronous-puts").unwrap();
    let init = model.init_states().remove(0);
    let both_sent = [
        DeliverInput(0),
        DeliverInput(1),
        StartAction(0),
        StartAction(1),
        CallSupplier(0),
        CallSupplier(1),
        SendPut(0),
        SendPut(1),
    ];
    let path = Path::from_actions(&model, init.clone(), &both_sent).unwrap();
    let state = path.last_state();
    assert_eq!(state.puts_in_flight().count(), 2);
    // Sequential puts send key 1's only once key 0's is answered.
    assert!(Path::from_actions(&sequential, init.clone(), &both_sent).is_none());
    let actions = enabled(&model, state);
    for k in 0..2 {
        assert!(actions.contains(&LandPut(k)), "{actions:?}");
        assert!(!actions.contains(&AckPut(k)), "lands first: {actions:?}");
    }
    // No snapshot with a put in flight; no crash that lands a put by itself.
    assert!(!actions.contains(&TriggerCheckpoint));
    assert!(!actions.contains(&Crash { landed: true }));
    // Key 1's lands first and is answered first: at offset 0, before key 0's at 1.
    let mut steps = both_sent.to_vec();
    steps.extend([LandPut(1), LandPut(0), AckPut(1)]);
    let path = Path::from_actions(&model, init.clone(), &steps).unwrap();
    let state = path.last_state();
    let key = |k| StateKey {
        key: k,
        seq: 0,
        action: 0,
    };
    assert_eq!(state.latest_record(key(1)).map(|(_, o)| o), Some(0));
    assert_eq!(state.latest_record(key(0)).map(|(_, o)| o), Some(1));
    assert!(state.cached(key(1)).is_some() && state.cached(key(0)).is_none());
    assert_eq!(state.puts_in_flight().count(), 1);
    // After a completed checkpoint, a crash with only key 1's put landed keeps key 1's
    // record and loses key 0's send; the restore replays key 1's.
    let mut crashed = vec![
        DeliverInput(0),
        DeliverInput(1),
        TriggerCheckpoint,
        CompleteCheckpoint(1),
    ];
    crashed.extend_from_slice(&both_sent[2..]);
    crashed.extend([LandPut(1), Crash { landed: false }, Restore]);
    let path = Path::from_actions(&model, init, &crashed).unwrap();
    let state = path.last_state();
    assert_eq!(state.latest_record(key(1)).map(|(_, o)| o), Some(0));
    assert_eq!(state.latest_record(key(0)), None);
    assert!(state.cached(key(1)).is_some() && state.cached(key(0)).is_none());
    assert!(!state.any_put());
}

#[test]
fn fault_scenarios_have_pinned_counts() {
    // Their verdicts are checked with the other scenarios; these are their sizes, per
    // design in table order.
    for (scenario, pinned) in [
        (
            "checkpoint-aborts",
            [96_861, 44_489, 44_941, 44_489, 51_445],
        ),
        (
            "lost-completions",
            [111_973, 53_419, 53_915, 53_419, 60_145],
        ),
        (
            // The designs that see a put error keep the call index behind and the lists
            // that skip a call; the old put order never sees the error.
            "handled-put-errors",
            [155_583, 80_265, 90_285, 89_771, 94_671],
        ),
        (
            "handled-put-errors-after-landing",
            [163_505, 107_467, 137_383, 136_675, 143_497],
        ),
        (
            "zombie-sends",
            [224_855, 123_033, 123_465, 123_033, 125_677],
        ),
        (
            // The mutant's 40 states more than before "committed input not rerun" are
            // those in which its committed input's action runs again (the flag is part
            // of the state); no other design sets it.
            "zombie-sends-two-crashes",
            [896_761, 493_823, 495_891, 493_823, 526_401],
        ),
        (
            "zombie-sends-fenced",
            [138_456, 66_690, 66_966, 66_690, 68_702],
        ),
        (
            "zombie-sends-fenced-two-crashes",
            [417_049, 170_597, 171_587, 170_597, 179_717],
        ),
        (
            "zombie-sends-producer-fenced",
            [41_407, 21_763, 21_859, 21_763, 22_841],
        ),
        (
            "synchronous-executor",
            [22_075, 15_369, 15_571, 15_369, 16_631],
        ),
        (
            "synchronous-executor-one-crash",
            [7_975, 6_721, 6_795, 6_721, 7_185],
        ),
        ("failed-send", [155_583, 80_265, 43_329, 43_121, 45_139]),
        (
            "fail-after-landing",
            [163_505, 107_467, 49_753, 49_517, 51_697],
        ),
        (
            "asynchronous-puts",
            [67_883, 35_071, 35_199, 35_071, 36_287],
        ),
        (
            // The mutant's 18 states more than before "committed input not rerun": as in
            // `zombie-sends-two-crashes`, its committed input's action runs again (this
            // scenario does not check that property).
            "restart-without-checkpoint",
            [113_561, 76_113, 76_387, 76_113, 92_421],
        ),
        (
            "concurrent-puts-fail-after-landing",
            [230_555, 174_793, 83_981, 83_701, 86_189],
        ),
        ("subtasks", [166_941, 103_682, 103_889, 103_682, 108_866]),
        ("rescale", [233_197, 140_882, 141_202, 140_882, 149_320]),
        (
            "rescale-own-marker",
            [243_860, 149_029, 149_347, 149_029, 157_531],
        ),
    ] {
        for (design, count) in DESIGNS.into_iter().zip(pinned) {
            let model = Durable::scenario(design, scenario).unwrap();
            let (unique, _) = verdicts_of(&model);
            assert_eq!(unique, count, "{scenario} / {}", design.name());
        }
    }
}

#[test]
fn an_abort_drops_only_the_oldest_pending_checkpoint_and_keeps_later_ids() {
    use Action::*;
    let settings = Settings::parse(
        Durable::params(),
        &[
            ("checkpoint-aborts", "true"),
            ("concurrent-checkpoints", "2"),
            ("checkpoints", "3"),
        ],
    )
    .unwrap();
    let model = Durable::build("fixed", &settings).unwrap();
    let init = model.init_states().remove(0);
    let two = Path::from_actions(
        &model,
        init.clone(),
        &[TriggerCheckpoint, TriggerCheckpoint],
    )
    .unwrap();
    let state = two.last_state();
    let actions = enabled(&model, state);
    assert!(actions.contains(&AbortCheckpoint(1)), "{actions:?}");
    assert!(
        !actions.contains(&AbortCheckpoint(2)),
        "only the oldest: {actions:?}"
    );
    assert!(model.next_state(state, AbortCheckpoint(2)).is_none());
    let aborted = model.next_state(state, AbortCheckpoint(1)).unwrap();
    let ids: Vec<u8> = aborted.pending_checkpoints().map(|(id, _)| id).collect();
    assert_eq!(ids, [2]);
    assert_eq!(aborted.completed, None);
    // The slot is free again; checkpoint 2 still completes under its own id.
    let after = model.next_state(&aborted, TriggerCheckpoint).unwrap();
    let ids: Vec<u8> = after.pending_checkpoints().map(|(id, _)| id).collect();
    assert_eq!(ids, [2, 3]);
    let done = model.next_state(&after, CompleteCheckpoint(2)).unwrap();
    let ids: Vec<u8> = done.pending_checkpoints().map(|(id, _)| id).collect();
    assert_eq!(ids, [3]);
    // Off by default.
    let plain = Durable::new(Design::Fixed);
    let one = Path::from_actions(&plain, init, &[TriggerCheckpoint]).unwrap();
    assert!(!enabled(&plain, one.last_state())
        .iter()
        .any(|a| matches!(a, AbortCheckpoint(_))));
}

#[test]
fn a_lost_completion_is_restorable_and_its_output_is_committed_at_the_restore() {
    use Action::*;
    let model = Durable::scenario(Design::Fixed, "lost-completions").unwrap();
    let init = model.init_states().remove(0);
    let mut steps = vec![DeliverInput(0), StartAction(0)];
    for _ in 0..2 {
        steps.extend([CallSupplier(0), SendPut(0), AckPut(0)]);
    }
    steps.extend([
        CompleteAction(0),
        AckPut(0),
        TriggerCheckpoint,
        CompleteCheckpointUnnotified(1),
    ]);
    let path = Path::from_actions(&model, init.clone(), &steps).unwrap();
    let state = path.last_state();
    let key = StateKey {
        key: 0,
        seq: 0,
        action: 0,
    };
    // Restorable, nothing pruned, nothing committed.
    assert_eq!(state.completed.map(|c| c.finished[0]), Some(1));
    assert!(state.cached(key).is_some(), "not pruned");
    assert_eq!(state.committed_outputs[0], 0);
    assert_eq!(state.pending_count(), 0);
    // The crash keeps the output uncommitted; the restore commits it.
    steps.extend([Crash { landed: false }, Restore]);
    let path = Path::from_actions(&model, init, &steps).unwrap();
    let restored = path.last_state();
    assert_eq!(restored.committed_outputs[0], 1);
    assert!(restored.events.output_after_restore);
    let words = model.describe_step(state, &CompleteCheckpointUnnotified(1));
    assert!(words.contains("notification is lost"), "{words}");
}

/// The fixed design's shortest repeated call when the action catches a put error and
/// the failed send had landed: the checkpoint taken next tracks no offset of that
/// state, so its marker passes the record, and the restored action calls again.
#[test]
fn a_handled_put_error_after_landing_repeats_a_call_in_the_fixed_design() {
    use Action::*;
    let model = Durable::scenario(Design::Fixed, "handled-put-errors-after-landing").unwrap();
    let path = check::shortest(&model, property::CALL_AT_MOST_ONCE).expect("a counterexample");
    assert_eq!(
        path.clone().into_actions(),
        [
            DeliverInput(0),
            StartAction(0),
            CallSupplier(0),
            SendPut(0),
            FailPut {
                key: 0,
                landed: true
            },
            TriggerCheckpoint,
            CompleteCheckpoint(1),
            Crash { landed: false },
            Restore,
            StartAction(0),
            CallSupplier(0),
        ]
    );
    let trace = check::trace_of(&model, path);
    assert!(
        trace.steps[4]
            .description
            .contains("the action catches the error and goes on"),
        "{}",
        trace.steps[4].description
    );
    assert_eq!(
        trace.shape.as_deref(),
        Some("a record landed but its send failed; the marker skips it")
    );
    // Failing the task instead (the default) holds.
    let model = Durable::scenario(Design::Fixed, "fail-after-landing").unwrap();
    assert!(check::shortest(&model, property::CALL_AT_MOST_ONCE).is_none());
}

/// The fixed design's shortest repeated call when the action catches a put error whose
/// record never landed: the call index stays at call 0's slot, call 1's result takes
/// it, and that list lands; the restored action's call 0 finds call 1's result at index
/// 0, clears the list from there and runs, and call 1 then finds nothing and runs again
/// although the log held its result. Failing the task instead holds (`failed-send`).
#[test]
fn a_handled_put_error_before_landing_repeats_a_later_call_in_the_fixed_design() {
    use Action::*;
    let model = Durable::scenario(Design::Fixed, "handled-put-errors").unwrap();
    let path = check::shortest(&model, property::CALL_AT_MOST_ONCE).expect("a counterexample");
    assert_eq!(
        path.clone().into_actions(),
        [
            DeliverInput(0),
            StartAction(0),
            CallSupplier(0),
            SendPut(0),
            FailPut {
                key: 0,
                landed: false
            },
            CallSupplier(0),
            TriggerCheckpoint,
            SendPut(0),
            CompleteCheckpoint(1),
            Crash { landed: true },
            Restore,
            StartAction(0),
            CallSupplier(0),
            SendPut(0),
            AckPut(0),
            CallSupplier(0),
        ]
    );
    let skipped = ActionState::holding([1]);
    let trace = check::trace_of(&model, path.clone());
    assert!(
        trace.steps[4]
            .description
            .contains("call index not advanced"),
        "{}",
        trace.steps[4].description
    );
    assert!(
        trace.steps[11].description.contains("(of calls 1)"),
        "{}",
        trace.steps[11].description
    );
    assert_eq!(
        trace.shape.as_deref(),
        Some(
            "a caught put error left a gap in the saved list; the restore clears it from \
             the gap and calls a saved call again"
        )
    );
    // The list that landed skips call 0; the repeated call is call 1.
    let states = path.into_states();
    let last = states.last().unwrap();
    let sk = last.head(0);
    assert!(last.landed(sk, skipped));
    assert_eq!((last.runs(sk, 0), last.runs(sk, 1)), (2, 2));
    let model = Durable::scenario(Design::Fixed, "failed-send").unwrap();
    assert!(check::shortest(&model, property::CALL_AT_MOST_ONCE).is_none());
}

/// A send a crash did not stop (`zombie-sends`): its shortest repeated call in the fixed
/// design lands it after the restore read the log; it can also land over a newer record
/// of its state key, so that a later restore reads fewer results than were saved. A
/// restore that fences the crashed producer (`zombie-sends-fenced`) holds.
#[test]
fn a_zombie_send_repeats_a_call_in_the_fixed_design_unless_the_producer_is_fenced() {
    use Action::*;
    let model = Durable::scenario(Design::Fixed, "zombie-sends").unwrap();
    let path = check::shortest(&model, property::CALL_AT_MOST_ONCE).expect("a counterexample");
    assert_eq!(
        path.into_actions(),
        [
            DeliverInput(0),
            StartAction(0),
            CallSupplier(0),
            TriggerCheckpoint,
            SendPut(0),
            CompleteCheckpoint(1),
            Crash { landed: false },
            Restore,
            LandZombie,
            StartAction(0),
            CallSupplier(0),
        ]
    );
    // The overwrite: the restored action saves both results, then the zombie's older
    // state lands over them; checkpoint 2's marker is the acknowledged offset of the
    // newer record, so the second restore replays both and keeps the zombie's.
    let settings = Settings::parse(
        Durable::params(),
        &[("zombie-sends", "true"), ("inputs", "1"), ("crashes", "2")],
    )
    .unwrap();
    let model = Durable::build("fixed", &settings).unwrap();
    let mut steps = vec![
        DeliverInput(0),
        TriggerCheckpoint,
        CompleteCheckpoint(1),
        StartAction(0),
        CallSupplier(0),
        SendPut(0),
        Crash { landed: false },
        Restore,
        StartAction(0),
        CallSupplier(0),
        SendPut(0),
        AckPut(0),
        CallSupplier(0),
        SendPut(0),
        AckPut(0),
        LandZombie,
    ];
    let init = model.init_states().remove(0);
    let key = StateKey {
        key: 0,
        seq: 0,
        action: 0,
    };
    let path = Path::from_actions(&model, init.clone(), &steps).unwrap();
    let state = path.last_state();
    assert_eq!(state.latest_record(key).map(|(st, _)| st.calls()), Some(1));
    assert!(
        state.landed_states(key).holds_call(1),
        "call 1's result landed before"
    );
    steps.extend([
        TriggerCheckpoint,
        CompleteCheckpoint(2),
        Crash { landed: false },
        Restore,
        StartAction(0),
        ReuseResult(0),
        CallSupplier(0),
    ]);
    let path = Path::from_actions(&model, init, &steps).unwrap();
    assert!(path.last_state().events.repeated_call);
    // A broker that refuses the crashed producer's sends after the restore
    // (`fenced-producer`): the zombie lands before the restore or never, and the fix
    // holds.
    let refused = Durable::scenario(Design::Fixed, "zombie-sends-producer-fenced").unwrap();
    assert!(check::shortest(&refused, property::CALL_AT_MOST_ONCE).is_none());
    let crashed = [
        DeliverInput(0),
        TriggerCheckpoint,
        CompleteCheckpoint(1),
        StartAction(0),
        CallSupplier(0),
        SendPut(0),
        Crash { landed: false },
    ];
    let path = Path::from_actions(&refused, refused.init_states().remove(0), &crashed).unwrap();
    let down = path.last_state();
    assert!(down.zombie.is_some());
    assert!(enabled(&refused, down).contains(&LandZombie));
    let restored = refused.next_state(down, Restore).unwrap();
    assert!(restored.zombie.is_none(), "refused after the restore");
}

/// Epoch fencing (`zombie-sends-fenced`): the restore fences every partition before it
/// reads the log, so the zombie that lands after the restore lands stale, and the
/// overwrite of the counterexample above leaves the newer record the latest one; the
/// fixed design holds every property with one crash and with two.
#[test]
fn epoch_fencing_makes_a_zombie_send_land_stale() {
    use Action::*;
    for scenario in ["zombie-sends-fenced", "zombie-sends-fenced-two-crashes"] {
        let model = Durable::scenario(Design::Fixed, scenario).unwrap();
        for p in property::SAFETY {
            assert!(check::shortest(&model, p).is_none(), "{scenario}: {p}");
        }
    }
    let model = Durable::scenario(Design::Fixed, "zombie-sends-fenced-two-crashes").unwrap();
    let init = model.init_states().remove(0);
    let crashed = [
        DeliverInput(0),
        TriggerCheckpoint,
        CompleteCheckpoint(1),
        StartAction(0),
        CallSupplier(0),
        SendPut(0),
        Crash { landed: false },
    ];
    let path = Path::from_actions(&model, init.clone(), &crashed).unwrap();
    let down = path.last_state();
    // Down, the restore must fence before it reads: only the fence and the zombie's
    // landing are enabled.
    assert_eq!(enabled(&model, down), [LandZombie, FencePartition(0)]);
    let fenced = model.next_state(down, FencePartition(0)).unwrap();
    assert!(fenced.zombie_fenced && fenced.fenced_partitions == 1);
    assert!(enabled(&model, &fenced).contains(&Restore));
    // Landing before the fence, the zombie is an ordinary record that landed without
    // its acknowledgement: the restore reads it back.
    let landed_first = model.next_state(down, LandZombie).unwrap();
    let landed_first = model.next_state(&landed_first, FencePartition(0)).unwrap();
    let restored = model.next_state(&landed_first, Restore).unwrap();
    let key = StateKey {
        key: 0,
        seq: 0,
        action: 0,
    };
    assert_eq!(restored.cached(key).map(|st| st.calls()), Some(1));
    // The overwrite of the unfenced counterexample: the zombie lands after the restore's
    // newer records, stale; the second restore reads the newer record and reuses both
    // results.
    let mut steps = crashed.to_vec();
    steps.extend([
        FencePartition(0),
        Restore,
        StartAction(0),
        CallSupplier(0),
        SendPut(0),
        AckPut(0),
        CallSupplier(0),
        SendPut(0),
        AckPut(0),
        LandZombie,
    ]);
    let path = Path::from_actions(&model, init.clone(), &steps).unwrap();
    let state = path.last_state();
    assert_eq!(state.latest_record(key).map(|(st, _)| st.calls()), Some(2));
    assert!(state.zombie.is_none() && !state.zombie_fenced);
    steps.extend([
        TriggerCheckpoint,
        CompleteCheckpoint(2),
        Crash { landed: false },
        FencePartition(0),
        Restore,
        StartAction(0),
        ReuseResult(0),
        ReuseResult(0),
    ]);
    let path = Path::from_actions(&model, init, &steps).unwrap();
    assert_eq!(path.last_state().runs(key, 1), 1, "call 1 ran once");
}

/// Per checkpoint, the end offset of partition 0 when it was taken, kept beside the
/// model's state for the test below only: in the model it would triple the fixed
/// design's states (`specs/performance.md`). `restored` is the end of the checkpoint the
/// latest restore started from (a later completion does not change what it replayed).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Ends {
    pending: Vec<u8>,
    completed: Option<u8>,
    restored: Option<u8>,
}

/// Whether some run of `design` (one input per key, real offsets) reuses, after a
/// restore, a result whose record landed before the restored checkpoint was taken: a
/// reuse that only a marker rewound below the end offset allows. Exhaustive, by
/// breadth-first search over the model's states paired with their checkpoints' ends.
fn reuses_a_result_saved_before_its_checkpoint(design: Design) -> bool {
    use std::collections::{HashSet, VecDeque};
    let settings = Settings::parse(
        Durable::params(),
        &[("inputs", "1"), ("compact-offsets", "false")],
    )
    .unwrap();
    let model = Durable::build(design.name(), &settings).unwrap();
    let start = Ends {
        pending: Vec::new(),
        completed: None,
        restored: None,
    };
    let mut seen = HashSet::new();
    let mut queue: VecDeque<(State, Ends)> = model
        .init_states()
        .into_iter()
        .map(|s| (s, start.clone()))
        .collect();
    while let Some((s, ends)) = queue.pop_front() {
        if !seen.insert((s.clone(), ends.clone())) {
            continue;
        }
        let mut actions = Vec::new();
        model.actions(&s, &mut actions);
        for action in actions {
            let mut e = ends.clone();
            match action {
                Action::TriggerCheckpoint => e.pending.push(s.log_len[0]),
                Action::CompleteCheckpoint(id) | Action::CompleteCheckpointUnnotified(id) => {
                    let at = s.pending_checkpoints().position(|(p, _)| p == id).unwrap();
                    e.completed = Some(e.pending[at]);
                    e.pending.drain(..=at);
                }
                Action::AbortCheckpoint(_) => {
                    e.pending.remove(0);
                }
                Action::Crash { .. } => e.pending.clear(),
                Action::Restore => e.restored = e.completed,
                // Until the action's next put, the result reused is the one the restore
                // replayed: its state key's latest record.
                Action::ReuseResult(k) if s.crashes > 0 => {
                    let (_, offset) = s.latest_record(s.head(k as usize)).unwrap();
                    if e.restored.is_some_and(|end| offset < end) {
                        return true;
                    }
                }
                _ => {}
            }
            queue.push_back((model.next_state(&s, action).unwrap(), e));
        }
    }
    false
}

/// The precise form of the witness "a saved result is reused after a restore from a
/// non-zero marker": a result saved before the checkpoint is reused after restoring it,
/// which the fix's rewound marker allows and the end-offset marker never does.
#[test]
fn only_a_rewound_marker_reuses_a_result_saved_before_its_checkpoint() {
    for (design, reuses) in [
        (Design::Unpatched, false),
        (Design::OldPutOrder, true),
        (Design::UnprunedTracking, true),
        (Design::Fixed, true),
    ] {
        assert_eq!(
            reuses_a_result_saved_before_its_checkpoint(design),
            reuses,
            "{}",
            design.name()
        );
    }
}

/// A checkpoint subtask 1 has not taken its part of yet shows only subtask 0's part:
/// subtask 1's entries are placeholders the model overwrites, not a snapshot to read.
#[test]
fn the_view_of_a_checkpoint_waiting_for_subtask_1_shows_only_subtask_0s_part() {
    use Action::*;
    let model = Durable::scenario(Design::Fixed, "subtasks").unwrap();
    let init = model.init_states().remove(0);
    let mut actions = vec![
        DeliverInput(1),
        StartAction(1),
        CallSupplier(1),
        SendPut(1),
        AckPut(1),
        TriggerCheckpoint,
    ];
    let path = Path::from_actions(&model, init.clone(), &actions).unwrap();
    let view = model.domain_view(path.last_state());
    assert!(
        view.contains("pending 1: key 0 0 delivered/0 finished; marker subtask 0 p0=1; subtask 1's part not taken yet"),
        "{view}"
    );
    actions.push(SnapshotSubtask);
    let path = Path::from_actions(&model, init, &actions).unwrap();
    let view = model.domain_view(path.last_state());
    assert!(
        view.contains(
            "pending 1: key 0 0 delivered/0 finished, key 1 1 delivered/0 finished; \
             marker subtask 0 p0=1 subtask 1 p0=0"
        ),
        "{view}"
    );
}
