//! Conformance of the durable-actions runtime (flink-agents issue 1158) to the model's
//! `fixed` design: every transition at the conformance bounds, seeded walks beyond them,
//! runtimes that re-introduce each half of the bug (reported at their first diverging
//! step), the unpatched counterexample replayed against the fixed runtime, the operator's
//! own seed bugs against the `unpatched` design, and the operator's production (eager)
//! scheduling at the grain of its events.
//!
//! Over 800 lines as a table: one test per binding, divergence or pinned coverage count,
//! each read on its own, sharing the runtime variants and helpers defined beside them.

use std::collections::{BTreeMap, HashSet, VecDeque};

use stateright::{Checker, Model};
use steadfast::durable::{Defect, Effect, Event, Operator, OperatorError, Scheduling};
use steadfast_conformance::cover::{cover, cover_threads, Coverage};
use steadfast_conformance::durable::eager::{Deliver, EagerBinding, EagerConformant, EagerDurable};
use steadfast_conformance::durable::{Conformant, DurableBinding, Rejection, Variant};
use steadfast_conformance::trace;
use steadfast_conformance::walk::walk;
use steadfast_conformance::{Binding, Problem};
use steadfast_model::check;
use steadfast_model::durable::{property, Action, Durable};
use steadfast_model::{Settings, Spec};

/// The conformance bounds: the model's defaults but one input per key, and offsets as
/// real log positions (`compact-offsets` renumbers them, which no log does).
const BOUNDS: &[(&str, &str)] = &[("inputs", "1"), ("compact-offsets", "false")];

fn model(design: &str, overrides: &[(&str, &str)]) -> Durable {
    let mut all = BOUNDS.to_vec();
    all.extend_from_slice(overrides);
    let settings = Settings::parse(Durable::params(), &all).unwrap();
    Durable::build(design, &settings).unwrap()
}

fn report(name: &str, c: &Coverage) {
    let kinds: Vec<String> = c.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!(
        "{name}: {} unique states, {} transitions (= traces), {} probes refused, {} runtime \
         steps in {:.2} s ({:.0} steps/s); kinds: {}",
        c.unique_states,
        c.transitions,
        c.probes,
        c.steps,
        c.seconds,
        c.steps_per_second(),
        kinds.join(", ")
    );
}

/// Covers `m` and checks the coverage against stateright's own counts.
fn full_coverage(name: &str, m: &Durable, kinds: &[&str]) -> Coverage {
    let c = cover::<DurableBinding>(m).unwrap_or_else(|d| panic!("{d}"));
    report(name, &c);
    let checker = m.clone().checker().spawn_bfs().join();
    assert_eq!(c.unique_states, checker.unique_state_count());
    // Every transition stateright generates, less the initial states: 100%.
    assert_eq!(c.transitions, checker.state_count() - m.init_states().len());
    let covered: Vec<&str> = c.kinds.keys().map(String::as_str).collect();
    assert_eq!(covered, kinds, "action kinds covered");
    assert!(c.kinds.values().all(|n| *n > 0));
    assert_eq!(c.steps, c.transitions + c.probes);
    c
}

const SYNCHRONOUS_KINDS: [&str; 11] = [
    "AckPut",
    "CallSupplier",
    "CompleteAction",
    "CompleteCheckpoint",
    "Crash",
    "DeliverInput",
    "Restore",
    "ReuseResult",
    "SendPut",
    "StartAction",
    "TriggerCheckpoint",
];

#[test]
fn every_transition_of_fixed_at_conformance_bounds() {
    let c = full_coverage("fixed", &model("fixed", &[]), &SYNCHRONOUS_KINDS);
    assert_eq!(c.unique_states, 34_531);
    assert_eq!(c.transitions, 83_437);
}

fn with_fail_put() -> Vec<&'static str> {
    let mut kinds = SYNCHRONOUS_KINDS.to_vec();
    kinds.push("FailPut");
    kinds.sort();
    kinds
}

#[test]
fn every_transition_with_a_failed_send() {
    let m = model("fixed", &[("send-failures", "1")]);
    let c = full_coverage("fixed, failed-send", &m, &with_fail_put());
    assert!(c.probes > 0);
}

#[test]
fn every_transition_with_a_send_failing_after_landing() {
    let m = model(
        "fixed",
        &[("send-failures", "1"), ("fail-after-landing", "true")],
    );
    full_coverage("fixed, fail-after-landing", &m, &with_fail_put());
}

/// Every key's put in flight at once (the driver's group commit): the puts land and are
/// answered in any order, a crash keeps the landed ones, a failure leaves the others
/// landing; the operator's answers and refusals (no snapshot while any is in flight)
/// agree with the model at every step.
#[test]
fn every_transition_with_concurrent_puts() {
    let m = model(
        "fixed",
        &[
            ("concurrent-puts", "true"),
            ("send-failures", "1"),
            ("fail-after-landing", "true"),
        ],
    );
    let mut kinds = with_fail_put();
    kinds.push("LandPut");
    kinds.sort();
    let c = full_coverage("fixed, concurrent puts", &m, &kinds);
    assert_eq!((c.unique_states, c.transitions), (127_289, 276_906));
    assert!(c.probes > 0);
    // Along one path: both keys' puts sent, key 1's landing and answered first; the
    // operator has both in flight at once and agrees with the model at every step.
    use Action::*;
    let steps = [
        DeliverInput(0),
        DeliverInput(1),
        StartAction(0),
        StartAction(1),
        CallSupplier(0),
        CallSupplier(1),
        SendPut(0),
        SendPut(1),
        LandPut(1),
        LandPut(0),
        AckPut(1),
        AckPut(0),
    ];
    let mut state = m.init_states().remove(0);
    let mut rt = DurableBinding::start(&m, &state);
    for (i, a) in steps.iter().enumerate() {
        DurableBinding::step(&m, &mut rt, &state, a).unwrap_or_else(|e| panic!("{a:?}: {e}"));
        state = m.next_state(&state, *a).expect("enabled");
        assert_eq!(
            DurableBinding::model_view(&m, &state),
            DurableBinding::runtime_view(&rt),
            "after {a:?}"
        );
        let in_flight = rt.operator().expect("running").puts_in_flight().len();
        assert_eq!(in_flight, state.puts_in_flight().count(), "after {a:?}");
        if i == 8 {
            assert_eq!(in_flight, 2);
        }
    }
}

#[test]
fn every_transition_with_two_crashes() {
    full_coverage(
        "fixed, two crashes",
        &model("fixed", &[("crashes", "2")]),
        &SYNCHRONOUS_KINDS,
    );
}

#[test]
fn every_transition_of_the_synchronous_executor() {
    // The seed's executor: checkpoints only between actions; its bug needs two crashes.
    let m = model(
        "fixed",
        &[("mid-action-checkpoints", "false"), ("crashes", "2")],
    );
    full_coverage("fixed, synchronous executor", &m, &SYNCHRONOUS_KINDS);
}

#[test]
fn every_transition_with_a_restart_from_nothing() {
    let m = model("fixed", &[("restart-without-checkpoint", "true")]);
    full_coverage("fixed, restart without checkpoint", &m, &SYNCHRONOUS_KINDS);
}

#[test]
fn every_transition_of_one_key_with_two_actions_and_three_inputs() {
    let m = model(
        "fixed",
        &[
            ("keys", "1"),
            ("inputs", "3"),
            ("actions", "2"),
            ("crashes", "2"),
        ],
    );
    full_coverage(
        "fixed, one key, 3 inputs x 2 actions",
        &m,
        &SYNCHRONOUS_KINDS,
    );
}

#[test]
fn every_transition_with_two_partitions() {
    let m = model("fixed", &[("partitions", "2")]);
    full_coverage("fixed, two partitions", &m, &SYNCHRONOUS_KINDS);
}

/// Two checkpoints pending at once (Flink's `max-concurrent-checkpoints` 2), three in
/// all: a later checkpoint's completion subsumes the older pending one, which the
/// operator must forget (completing or aborting it again is refused or unknown).
fn concurrent_checkpoints() -> Durable {
    model(
        "fixed",
        &[
            ("keys", "1"),
            ("inputs", "2"),
            ("calls", "1"),
            ("checkpoints", "3"),
            ("concurrent-checkpoints", "2"),
        ],
    )
}

#[test]
fn every_transition_with_two_checkpoints_pending_at_once() {
    let m = concurrent_checkpoints();
    let c = full_coverage("fixed, two pending checkpoints", &m, &SYNCHRONOUS_KINDS);
    assert_eq!(c.unique_states, 3_521);
    assert_eq!(c.transitions, 9_421);
    // Every checkpoint taken and not pending is offered for completion and refused, and
    // so is a snapshot while a put is in flight. (A snapshot with two already pending is
    // no probe: past its bound the operator forgets the oldest rather than refuse.)
    assert_eq!(c.probes, 7_084);
}

/// Steps `actions` through the model and the runtime, comparing their views after each;
/// the first step that fails or differs, as (1-based step, what went wrong).
fn run(m: &Durable, actions: &[Action]) -> Result<(), (usize, String)> {
    let states = trace::states_of(m, 0, actions).expect("the model takes every step");
    let mut rt = DurableBinding::start(m, &states[0].0);
    for (i, (state, action)) in states.iter().enumerate() {
        let Some(action) = action else { break };
        DurableBinding::step(m, &mut rt, state, action).map_err(|e| (i + 1, e.to_string()))?;
        let want = DurableBinding::model_view(m, &states[i + 1].0);
        let got = DurableBinding::runtime_view(&rt);
        if want != got {
            let fields = steadfast_conformance::diff::fields(&want, &got);
            return Err((i + 1, fields.join("; ")));
        }
    }
    Ok(())
}

#[test]
fn a_subsumed_checkpoint_is_forgotten_and_a_later_one_stays_pending() {
    use Action::*;
    let m = concurrent_checkpoints();
    let two_pending = [DeliverInput(0), TriggerCheckpoint, TriggerCheckpoint];
    // The earlier completes first: the later stays pending and completes after it.
    let mut earlier_first = two_pending.to_vec();
    earlier_first.extend([CompleteCheckpoint(1), CompleteCheckpoint(2)]);
    assert_eq!(run(&m, &earlier_first), Ok(()));
    // The later completes first: the earlier is subsumed, and at the crash the
    // coordinator aborts nothing the operator still knows.
    let mut later_first = two_pending.to_vec();
    later_first.extend([CompleteCheckpoint(2), Crash { landed: false }, Restore]);
    assert_eq!(run(&m, &later_first), Ok(()));
    // Completing the subsumed one is a probe the runtime refuses.
    let states = trace::states_of(&m, 0, &later_first[..4]).unwrap();
    let after = &states.last().unwrap().0;
    assert!(DurableBinding::probes(&m, after).contains(&CompleteCheckpoint(1)));
    let mut rt = DurableBinding::start(&m, &states[0].0);
    for (state, action) in &states {
        if let Some(action) = action {
            DurableBinding::step(&m, &mut rt, state, action).unwrap();
        }
    }
    let e = DurableBinding::step(&m, &mut rt, after, &CompleteCheckpoint(1)).unwrap_err();
    assert!(
        matches!(&e, Rejection::Binding(m) if m == "checkpoint 1 is not pending"),
        "{e:?}"
    );
}

/// Checkpoints aborted without a crash and completions whose notification never
/// reaches the operator, with two checkpoints pending at once: every transition agrees.
/// The operator must keep a checkpoint it was never told of until a later completion
/// subsumes it, and forget the oldest when a snapshot would pass its bound (set to the
/// model's `concurrent-checkpoints`); the binding checks what it knows at every snapshot
/// and at every crash.
#[test]
fn every_transition_with_checkpoint_aborts_and_lost_completions() {
    let m = model(
        "fixed",
        &[
            ("checkpoint-aborts", "true"),
            ("lost-completions", "true"),
            ("checkpoints", "3"),
            ("concurrent-checkpoints", "2"),
        ],
    );
    let mut kinds = SYNCHRONOUS_KINDS.to_vec();
    kinds.extend(["AbortCheckpoint", "CompleteCheckpointUnnotified"]);
    kinds.sort();
    let c = full_coverage("fixed, checkpoint aborts and lost completions", &m, &kinds);
    assert_eq!((c.unique_states, c.transitions), (130_069, 647_221));
}

/// A send its crash did not stop lands later (`zombie-sends`), before or after the
/// restore read the log, fenced at the restore or not: no operator sees it land, and
/// every restore reads what the log then holds.
#[test]
fn every_transition_with_zombie_sends() {
    let mut kinds = SYNCHRONOUS_KINDS.to_vec();
    kinds.push("LandZombie");
    kinds.sort();
    for (fenced, pinned) in [("false", (209_621, 519_407)), ("true", (35_559, 85_109))] {
        let m = model(
            "fixed",
            &[("zombie-sends", "true"), ("fenced-producer", fenced)],
        );
        let c = full_coverage(&format!("fixed, zombie sends, fenced {fenced}"), &m, &kinds);
        assert_eq!((c.unique_states, c.transitions), pinned, "fenced {fenced}");
    }
}

/// Epoch fencing (`epoch-fencing`), one crash and two: each restore's fence steps append
/// the fence records of its epoch, the zombie lands before a fence (an ordinary record
/// the restore reads back) or after it (stale: the view and every later rebuild skip it,
/// and the rebuild reports it skipped), at real offsets, every transition.
#[test]
fn every_transition_with_zombie_sends_and_epoch_fencing() {
    let mut kinds = SYNCHRONOUS_KINDS.to_vec();
    kinds.extend(["FencePartition", "LandZombie"]);
    kinds.sort();
    for (crashes, pinned) in [("1", (182_214, 469_856)), ("2", (1_183_019, 3_373_256))] {
        let m = model(
            "fixed",
            &[
                ("zombie-sends", "true"),
                ("epoch-fencing", "true"),
                ("crashes", crashes),
            ],
        );
        let name = format!("fixed, zombie sends, epoch fencing, {crashes} crash(es)");
        let c = full_coverage(&name, &m, &kinds);
        assert_eq!((c.unique_states, c.transitions), pinned, "{name}");
    }
}

/// A lost completion with room for one pending checkpoint: the next snapshot forgets
/// it (a refusal would stop checkpointing for good), and its output is committed at the
/// restore that starts from it.
#[test]
fn a_lost_completion_is_forgotten_at_the_next_snapshot_and_committed_at_the_restore() {
    use Action::*;
    let m = model(
        "fixed",
        &[("lost-completions", "true"), ("checkpoints", "3")],
    );
    let mut steps = vec![DeliverInput(0), StartAction(0)];
    for _ in 0..2 {
        steps.extend([CallSupplier(0), SendPut(0), AckPut(0)]);
    }
    steps.extend([CompleteAction(0), AckPut(0), TriggerCheckpoint]);
    steps.push(CompleteCheckpointUnnotified(1));
    let states = trace::states_of(&m, 0, &steps).unwrap();
    let mut rt = DurableBinding::start(&m, &states[0].0);
    for (state, action) in &states {
        if let Some(action) = action {
            DurableBinding::step(&m, &mut rt, state, action).unwrap();
        }
    }
    let known = |rt: &<DurableBinding as Binding>::Runtime| -> Vec<u64> {
        rt.operator().unwrap().pending_checkpoint_ids().collect()
    };
    assert_eq!(known(&rt), [1], "never told of its completion");
    let mut later = steps.clone();
    later.push(TriggerCheckpoint);
    assert_eq!(run(&m, &later), Ok(()));
    let after = trace::states_of(&m, 0, &later).unwrap();
    let (state, _) = &after[after.len() - 2];
    DurableBinding::step(&m, &mut rt, state, &TriggerCheckpoint).unwrap();
    assert_eq!(known(&rt), [2], "the oldest forgotten");
    // The output of input 0 waits for the restore from checkpoint 1.
    let mut restored = steps.clone();
    restored.extend([Crash { landed: false }, Restore]);
    assert_eq!(run(&m, &restored), Ok(()));
    let states = trace::states_of(&m, 0, &restored).unwrap();
    assert_eq!(states.last().unwrap().0.committed_outputs[0], 1);
}

/// The fixed design with a put error the action catches (`handled-put-errors`): the
/// runtime does not implement it. It fails the task on any put error, because the model
/// shows that catching one repeats a call: after landing (the marker passes the record)
/// and before it (the call index stays behind and the next result takes the failed
/// one's slot). Along each of the model's shortest repeated calls the runtime agrees up
/// to the failed put and departs there.
#[test]
fn a_handled_put_error_departs_where_the_runtime_fails_the_task() {
    for after_landing in [true, false] {
        let m = model(
            "fixed",
            &[
                ("handled-put-errors", "true"),
                ("send-failures", "1"),
                (
                    "fail-after-landing",
                    if after_landing { "true" } else { "false" },
                ),
            ],
        );
        let path = check::shortest(&m, property::CALL_AT_MOST_ONCE).expect("a counterexample");
        let actions = path.into_actions();
        let failed_put = actions
            .iter()
            .position(|a| matches!(a, Action::FailPut { landed, .. } if *landed == after_landing))
            .expect("a put fails");
        let (step, fields) = run(&m, &actions).unwrap_err();
        assert_eq!(step, failed_put + 1, "after landing: {after_landing}");
        assert!(fields.contains("failed: false | true"), "{fields}");
    }
}

#[test]
fn compacted_offsets_are_compared_by_rank() {
    // With the model's default `compact-offsets`, both views rank their offsets.
    let m = model(
        "fixed",
        &[("compact-offsets", "true"), ("keys", "1"), ("inputs", "2")],
    );
    let c = cover::<DurableBinding>(&m).unwrap_or_else(|d| panic!("{d}"));
    let real = cover::<DurableBinding>(&model("fixed", &[("keys", "1"), ("inputs", "2")])).unwrap();
    assert!(c.unique_states < real.unique_states);
}

/// The seeded walks' bounds, beyond exhaustive reach: three keys over two partitions,
/// runs with several puts, failed sends, two crashes, restarts without a checkpoint.
fn walk_model() -> Durable {
    let settings = Settings::parse(
        Durable::params(),
        &[
            ("keys", "3"),
            ("inputs", "3"),
            ("actions", "2"),
            ("calls", "3"),
            ("partitions", "2"),
            ("crashes", "2"),
            ("checkpoints", "4"),
            ("send-failures", "1"),
            ("fail-after-landing", "true"),
            ("restart-without-checkpoint", "true"),
            ("compact-offsets", "false"),
        ],
    )
    .unwrap();
    Durable::build("fixed", &settings).unwrap()
}

/// 300 walks of up to `length` steps from seed 1158: every one runs and agrees, and the
/// same seed walks the same again.
fn seeded_walks_repeat<B: Binding>(what: &str, m: &B::Model, length: usize) {
    let w = walk::<B>(m, 1158, 300, length).unwrap_or_else(|d| panic!("{d}"));
    println!(
        "{what}: {} walks, {} steps, {} probes refused, longest {}, {:.2} s",
        w.walks, w.steps, w.probes, w.longest, w.seconds
    );
    assert_eq!(w.walks, 300);
    let again = walk::<B>(m, 1158, 300, length).unwrap();
    assert_eq!(
        (w.steps, w.probes, w.longest),
        (again.steps, again.probes, again.longest)
    );
}

#[test]
fn seeded_walks_at_larger_bounds() {
    seeded_walks_repeat::<DurableBinding>("walks", &walk_model(), 400);
}

/// The unpatched marker, the operator's seed bug: every checkpoint's marker is the log's
/// end offset.
struct EndOffsetMarker;

impl Variant for EndOffsetMarker {
    fn defects() -> &'static [Defect] {
        &[Defect::EndOffsetMarker]
    }
}

/// The unpatched put order seen from the operator: the send's error never reaches the
/// put, so a failed send is cached as saved. Re-introduced by a log that acknowledges a
/// failed send where its record was to land.
struct CacheBeforeAck;

impl Variant for CacheBeforeAck {
    fn swallows_failures() -> bool {
        true
    }
}

/// The operator's own seed bug of the old put order: the state is cached at its send.
struct CacheAtSend;

impl Variant for CacheAtSend {
    fn defects() -> &'static [Defect] {
        &[Defect::CacheBeforeAck]
    }
}

/// Two threads cover what one covers, and report a divergence on the same trace with
/// the same finding.
#[test]
fn two_threads_cover_and_diverge_as_one() {
    let m = model("fixed", &[]);
    let one = cover::<DurableBinding>(&m).unwrap_or_else(|d| panic!("{d}"));
    let two = cover_threads::<DurableBinding>(&m, 2).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(
        (one.unique_states, one.transitions, one.probes, &one.kinds),
        (two.unique_states, two.transitions, two.probes, &two.kinds)
    );
    assert_eq!(two.unique_states, 34_531);
    for threads in [1, 2, 3] {
        let d = cover_threads::<Conformant<EndOffsetMarker>>(&m, threads).unwrap_err();
        assert_eq!(d.step, 6, "{threads} threads");
        assert_eq!(
            d.trace.last().map(String::as_str),
            Some("TriggerCheckpoint")
        );
        assert_eq!(
            d.problem,
            Problem::Projection(vec!["pending[0].marker[0]: 0 | 1".to_string()])
        );
    }
    let failed_send = model("fixed", &[("send-failures", "1")]);
    let one = cover::<Conformant<CacheBeforeAck>>(&failed_send).unwrap_err();
    let two = cover_threads::<Conformant<CacheBeforeAck>>(&failed_send, 2).unwrap_err();
    assert_eq!(
        (&one.trace, one.step, &one.problem, &one.runtime),
        (&two.trace, two.step, &two.problem, &two.runtime)
    );
}

#[test]
fn end_offset_marker_diverges_at_the_first_checkpoint_after_a_save() {
    let d = cover::<Conformant<EndOffsetMarker>>(&model("fixed", &[])).unwrap_err();
    println!("{d}");
    assert_eq!(
        d.trace,
        [
            "DeliverInput(0)",
            "StartAction(0)",
            "CallSupplier(0)",
            "SendPut(0)",
            "AckPut(0)",
            "TriggerCheckpoint"
        ]
    );
    assert_eq!(d.step, 6);
    assert_eq!(d.action, "TriggerCheckpoint");
    assert_eq!(
        d.problem,
        Problem::Projection(vec!["pending[0].marker[0]: 0 | 1".to_string()])
    );
    // The report shows the operator as it is after the step, in its own terms: the
    // action, the key's queue, the store's summary, the seed bugs it carries.
    assert!(
        d.runtime.starts_with(
            r#"Operator { actions: [ActionDef { name: "action0" }], keys: {"key0.0": KeyState {"#
        ),
        "{}",
        d.runtime
    );
    assert!(
        d.runtime.ends_with(
            "store: ActionStateStore { partitions: 1, cached_states: 1, tracked_keys: 1, \
             epoch: 1, fences: [[(0, 0)]] }, failed: None, defects: Defects { \
             end_offset_marker: true, cache_before_ack: false } }"
        ),
        "{}",
        d.runtime
    );
}

#[test]
fn cache_before_ack_diverges_at_the_first_failed_send() {
    let m = model("fixed", &[("send-failures", "1")]);
    let d = cover::<Conformant<CacheBeforeAck>>(&m).unwrap_err();
    println!("{d}");
    assert_eq!(
        d.trace,
        [
            "DeliverInput(0)",
            "StartAction(0)",
            "CallSupplier(0)",
            "SendPut(0)",
            "FailPut { key: 0, landed: false }"
        ]
    );
    assert_eq!(d.step, 5);
    let Problem::Projection(fields) = &d.problem else {
        panic!("{d}")
    };
    let names: Vec<&str> = fields
        .iter()
        .map(|f| f.split(':').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "cache",
            "cache_size",
            "failed",
            "keys[0].awaiting",
            "keys[0].in_progress",
            "keys[0].ready",
            "tracked_keys"
        ],
        "{fields:?}"
    );
    // The buggy store reports the unsaved state as cached, and the action goes on to
    // call 1.
    assert!(fields.contains(&"keys[0].awaiting: null | 1".to_string()));
    assert!(
        d.runtime
            .contains("ActionStateStore { partitions: 1, cached_states: 1,"),
        "{}",
        d.runtime
    );
    // Without a failed send the swallowed errors are invisible: it conforms.
    let quiet = model("fixed", &[("keys", "1"), ("inputs", "2")]);
    assert!(cover::<Conformant<CacheBeforeAck>>(&quiet).is_ok());
    // The operator's own seed bug caches at the send, before the offset is known: it
    // parts from the model's old-put-order design at the second key's acknowledgement,
    // on that offset alone. With the end-offset marker too it is the unpatched design
    // (`the_operators_seed_bugs_conform_to_the_unpatched_design`).
    let d = cover::<Conformant<CacheAtSend>>(&model("old-put-order", &[])).unwrap_err();
    assert_eq!((d.step, d.action.as_str()), (10, "AckPut(1)"));
    assert_eq!(
        d.problem,
        Problem::Projection(vec!["cache[1].offset: 1 | 0".to_string()])
    );
}

#[test]
fn unpatched_counterexample_departs_where_the_fix_acts() {
    let unpatched = model("unpatched", &[]);
    let path = check::shortest(&unpatched, property::CALL_AT_MOST_ONCE).expect("a counterexample");
    let actions: Vec<Action> = path.into_actions();
    assert_eq!(
        actions,
        [
            Action::DeliverInput(0),
            Action::StartAction(0),
            Action::CallSupplier(0),
            Action::SendPut(0),
            Action::AckPut(0),
            Action::TriggerCheckpoint,
            Action::CompleteCheckpoint(1),
            Action::Crash { landed: false },
            Action::Restore,
            Action::StartAction(0),
            Action::CallSupplier(0),
        ]
    );
    let file = trace::to_json(&unpatched, 0, &actions).unwrap();
    let text = serde_json::to_string(&file).unwrap();
    let loaded = trace::parse("unpatched.json", &text).unwrap();
    let replay = trace::replay::<DurableBinding>(&loaded).unwrap();
    let d = replay.divergence.expect("the fixed runtime departs");
    println!("{d}");
    // The fix's marker: the runtime rewinds to the saved result (offset 0) where the
    // unpatched checkpoint takes the end offset (1).
    assert_eq!(d.step, 6);
    assert_eq!(d.action, "TriggerCheckpoint");
    assert_eq!(
        d.problem,
        Problem::Projection(vec!["pending[0].marker[0]: 1 | 0".to_string()])
    );
    assert_eq!(replay.steps.len(), 6);
    assert!(replay.steps[..5].iter().all(|s| s.agreed));

    // Driven on past the departure, the restored runtime reuses the saved result: at the
    // step where unpatched calls the supplier again it asks for call 1, not call 0.
    let fixed_model = unpatched;
    let states = trace::states_of(&fixed_model, 0, &actions).unwrap();
    let mut rt = DurableBinding::start(&fixed_model, &states[0].0);
    for (i, (state, action)) in states.iter().enumerate() {
        let Some(action) = action else { break };
        let result = DurableBinding::step(&fixed_model, &mut rt, state, action);
        if i + 1 < actions.len() {
            result.unwrap_or_else(|e| panic!("step {}: {e}", i + 1));
        } else {
            let e = result.unwrap_err().to_string();
            assert!(e.starts_with("the operator asks for"), "{e}");
            assert!(e.contains("call 1, the model calls the supplier"), "{e}");
        }
    }
    let calls = DurableBinding::runtime_view(&rt).supplier_calls;
    assert_eq!(calls.len(), 1);
    assert_eq!((calls[0].call, calls[0].runs), (0, 1));
}

// Eager scheduling: one event per external step, compared at quiescent states.

/// Model steps the eager events of `m` stand for, over its whole eager graph: per step
/// kind (faults by kind and `landed`), and the most puts a faulted run made.
fn eager_run_steps(m: &EagerDurable) -> (BTreeMap<String, usize>, usize) {
    let mut seen = HashSet::new();
    let mut queue: VecDeque<_> = m.init_states().into();
    let mut kinds = BTreeMap::new();
    let mut most_puts = 0;
    while let Some(s) = queue.pop_front() {
        if !seen.insert(s.clone()) {
            continue;
        }
        for (e, next) in m.events(&s) {
            for a in &e.steps {
                let kind = match a {
                    Action::FailPut { landed, .. } | Action::Crash { landed } => {
                        format!("{} landed={landed}", DurableBinding::kind(a))
                    }
                    _ => DurableBinding::kind(a),
                };
                *kinds.entry(kind).or_default() += 1;
            }
            if e.fault().is_some() {
                most_puts = most_puts.max(e.puts());
            }
            queue.push_back(next);
        }
    }
    (kinds, most_puts)
}

/// Covers the eager graph of `m` and checks it against stateright's own counts of that
/// graph (every state quiescent, every transition replayed).
fn full_eager_coverage(name: &str, m: &EagerDurable, kinds: &[&str]) -> Coverage {
    let c = cover::<EagerBinding>(m).unwrap_or_else(|d| panic!("{d}"));
    report(name, &c);
    let checker = m.clone().checker().spawn_bfs().join();
    assert!(
        checker.discoveries().is_empty(),
        "a run ends with a step left"
    );
    assert_eq!(c.unique_states, checker.unique_state_count());
    assert_eq!(c.transitions, checker.state_count() - m.init_states().len());
    let covered: Vec<&str> = c.kinds.keys().map(String::as_str).collect();
    assert_eq!(covered, kinds, "event kinds covered");
    assert_eq!(c.steps, c.transitions + c.probes);
    assert!(c.probes > 0);
    c
}

#[test]
fn eager_events_out_of_the_first_states() {
    let m = EagerDurable::new(model("fixed", &[]));
    let init = &m.init_states()[0];
    let shown = |s: &steadfast_model::durable::State| -> Vec<String> {
        m.events(s).iter().map(|(e, _)| format!("{e:?}")).collect()
    };
    assert_eq!(
        shown(init),
        [
            "DeliverInput(0) [StartAction(0)]",
            "DeliverInput(1) [StartAction(1)]",
            "TriggerCheckpoint"
        ]
    );
    // Key 0 waits on call 0: its return saves the result and asks for call 1.
    let waiting = m.events(init)[0].1.clone();
    let after_call = m
        .events(&waiting)
        .into_iter()
        .find(|(e, _)| e.steps[0] == Action::CallSupplier(0))
        .unwrap()
        .1;
    let last: Vec<String> = shown(&after_call)
        .into_iter()
        .filter(|e| e.starts_with("CallSupplier(0)"))
        .collect();
    // The last call's return: save, complete, finish; a crash may come at either put
    // (checkpoint 1 completed first makes crashes possible).
    assert_eq!(
        last,
        ["CallSupplier(0) [SendPut(0), AckPut(0), CompleteAction(0), AckPut(0)]"]
    );
    let trigger = m
        .model
        .next_state(&after_call, Action::TriggerCheckpoint)
        .unwrap();
    let done = m
        .model
        .next_state(&trigger, Action::CompleteCheckpoint(1))
        .unwrap();
    let last: Vec<String> = shown(&done)
        .into_iter()
        .filter(|e| e.starts_with("CallSupplier(0)"))
        .collect();
    assert_eq!(
        last,
        [
            "CallSupplier(0) [SendPut(0), Crash { landed: false }]",
            "CallSupplier(0) [SendPut(0), Crash { landed: true }]",
            "CallSupplier(0) [SendPut(0), AckPut(0), CompleteAction(0), Crash { landed: false }]",
            "CallSupplier(0) [SendPut(0), AckPut(0), CompleteAction(0), Crash { landed: true }]",
            "CallSupplier(0) [SendPut(0), AckPut(0), CompleteAction(0), AckPut(0)]",
        ]
    );
}

const EAGER_KINDS: [&str; 7] = [
    "CallSupplier",
    "CallSupplier + Crash",
    "CompleteCheckpoint",
    "Crash",
    "DeliverInput",
    "Restore",
    "TriggerCheckpoint",
];

#[test]
fn eager_every_event_of_fixed_at_conformance_bounds() {
    let m = EagerDurable::new(model("fixed", &[]));
    let c = full_eager_coverage("fixed, eager", &m, &EAGER_KINDS);
    assert_eq!((c.unique_states, c.transitions), (2_429, 6_119));
    // The runs take every internal step, and crashes at a run's first and second put.
    let (steps, most_puts) = eager_run_steps(&m);
    println!("fixed, eager: model steps in the runs: {steps:?}");
    let kinds: Vec<&str> = steps.keys().map(String::as_str).collect();
    assert_eq!(
        kinds,
        [
            "AckPut",
            "CallSupplier",
            "CompleteAction",
            "CompleteCheckpoint",
            "Crash landed=false",
            "Crash landed=true",
            "DeliverInput",
            "Restore",
            "ReuseResult",
            "SendPut",
            "StartAction",
            "TriggerCheckpoint",
        ]
    );
    assert_eq!(most_puts, 2);
}

/// Eager events with two checkpoints pending at once: a later completion subsumes the
/// older one between the operator's runs, as under stepwise scheduling.
#[test]
fn eager_every_event_with_two_checkpoints_pending_at_once() {
    let m = EagerDurable::new(model(
        "fixed",
        &[("concurrent-checkpoints", "2"), ("checkpoints", "3")],
    ));
    let c = full_eager_coverage("fixed, eager, two pending", &m, &EAGER_KINDS);
    assert_eq!((c.unique_states, c.transitions), (7_488, 23_825));
    // Completing checkpoint 2 while 1 is pending (subsuming it) is among the events.
    let subsumes = {
        let init = m.init_states()[0].clone();
        let mut frontier = vec![init];
        let mut seen = std::collections::HashSet::new();
        let mut found = false;
        while let Some(s) = frontier.pop() {
            let ids: Vec<u8> = s.pending_checkpoints().map(|(id, _)| id).collect();
            if ids == [1, 2] {
                found = m
                    .events(&s)
                    .iter()
                    .any(|(e, _)| e.steps == [Action::CompleteCheckpoint(2)]);
                if found {
                    break;
                }
            }
            for (_, next) in m.events(&s) {
                if seen.insert(format!("{next:?}")) {
                    frontier.push(next);
                }
            }
        }
        found
    };
    assert!(subsumes, "no event completes checkpoint 2 with 1 pending");
}

#[test]
fn eager_every_event_with_failed_sends() {
    let m = EagerDurable::new(model(
        "fixed",
        &[("send-failures", "1"), ("fail-after-landing", "true")],
    ));
    let c = full_eager_coverage(
        "fixed, eager, fail-after-landing",
        &m,
        &[
            "CallSupplier",
            "CallSupplier + Crash",
            "CallSupplier + FailPut",
            "CompleteCheckpoint",
            "Crash",
            "DeliverInput",
            "DeliverInput + FailPut",
            "Restore",
            "Restore + FailPut",
            "TriggerCheckpoint",
        ],
    );
    assert_eq!((c.unique_states, c.transitions), (8_167, 15_264));
    let (steps, _) = eager_run_steps(&m);
    assert!(steps["FailPut landed=false"] > 0 && steps["FailPut landed=true"] > 0);
}

#[test]
fn eager_every_event_of_one_key_with_two_actions_and_three_inputs() {
    let m = EagerDurable::new(model(
        "fixed",
        &[
            ("keys", "1"),
            ("inputs", "3"),
            ("actions", "2"),
            ("crashes", "2"),
        ],
    ));
    let c = full_eager_coverage(
        "fixed, eager, one key, 3 inputs x 2 actions",
        &m,
        &[
            "CallSupplier",
            "CallSupplier + Crash",
            "CompleteCheckpoint",
            "Crash",
            "DeliverInput",
            "DeliverInput + Crash",
            "Restore",
            "Restore + Crash",
            "TriggerCheckpoint",
        ],
    );
    assert_eq!((c.unique_states, c.transitions), (7_946, 27_448));
    let (_, most_puts) = eager_run_steps(&m);
    assert_eq!(most_puts, 2);
}

/// A scheduling bug put around the unchanged operator: each event takes one step of the
/// key's work and stops (an input starts its action, a call's return saves the result
/// and takes the action's next step), where eager scheduling runs on.
struct OneStepPerEvent;

impl Deliver for OneStepPerEvent {
    fn deliver(op: &mut Operator, event: Event) -> Result<Vec<Effect>, OperatorError> {
        op.set_scheduling(Scheduling::Stepwise);
        let started = match &event {
            Event::Input { key, .. } => vec![key.clone()],
            Event::Resume => {
                let mut keys: Vec<String> = op.keys().keys().cloned().collect();
                keys.sort_unstable();
                keys
            }
            _ => Vec::new(),
        };
        let mut effects = op.handle(event);
        for key in started {
            if let Ok(all) = &mut effects {
                if op.ready_keys().contains(&key) {
                    match op.handle(Event::Continue { key }) {
                        Ok(more) => all.extend(more),
                        Err(e) => effects = Err(e),
                    }
                }
            }
        }
        op.set_scheduling(Scheduling::Eager);
        effects
    }
}

#[test]
fn eager_one_step_per_event_diverges_when_an_action_should_complete() {
    let m = EagerDurable::new(model("fixed", &[]));
    let d = cover::<EagerConformant<OneStepPerEvent>>(&m).unwrap_err();
    println!("{d}");
    assert_eq!(d.step, 3);
    assert_eq!(
        d.trace,
        [
            "DeliverInput(0) [StartAction(0)]",
            "CallSupplier(0) [SendPut(0), AckPut(0)]",
            "CallSupplier(0) [SendPut(0), AckPut(0), CompleteAction(0), AckPut(0)]",
        ]
    );
    let Problem::Projection(fields) = &d.problem else {
        panic!("{d}")
    };
    // The completion put was never made: the input stays unfinished and queued.
    for field in [
        "keys[0].finished: 1 | 0",
        "keys[0].in_progress: false | true",
        "keys[0].ready: false | true",
        "log[0].end: 3 | 2",
    ] {
        assert!(fields.contains(&field.to_string()), "{field} in {fields:?}");
    }
}

#[test]
fn eager_seeded_walks_at_larger_bounds() {
    // The stepwise walks' bounds: runs with several puts, restores driving three keys.
    seeded_walks_repeat::<EagerBinding>(
        "eager walks (steps are events)",
        &EagerDurable::new(walk_model()),
        200,
    );
}

/// The model's default bounds (2 keys x 2 inputs), offsets compared by rank as the
/// model compacts them, then as real positions: outside CI (`-- --ignored`).
#[test]
#[ignore]
fn eager_every_event_at_default_bounds() {
    for compact in ["true", "false"] {
        let settings = Settings::parse(Durable::params(), &[("compact-offsets", compact)]).unwrap();
        let m = EagerDurable::new(Durable::build("fixed", &settings).unwrap());
        let c = cover::<EagerBinding>(&m).unwrap_or_else(|d| panic!("{d}"));
        report(
            &format!("fixed, eager, default bounds, compact-offsets {compact}"),
            &c,
        );
        let checker = m.clone().checker().spawn_bfs().join();
        assert!(checker.discoveries().is_empty());
        assert_eq!(c.unique_states, checker.unique_state_count());
        assert_eq!(c.transitions, checker.state_count() - 1);
    }
}

/// The fixed design under asynchronous puts repeats a call (the model's
/// `asynchronous-puts` scenario): its shortest counterexample snapshots while a put is in
/// flight. The runtime refuses exactly that step, with its typed error, after agreeing
/// with the model on every step before it.
#[test]
fn asynchronous_puts_counterexample_is_refused_at_its_snapshot() {
    let m = model(
        "fixed",
        &[
            ("synchronous-puts", "false"),
            ("inputs", "1"),
            ("compact-offsets", "false"),
        ],
    );
    let path = check::shortest(&m, property::CALL_AT_MOST_ONCE).expect("a counterexample");
    let states = path.into_vec();
    let snapshot_in_flight = states
        .iter()
        .position(|(s, a)| *a == Some(Action::TriggerCheckpoint) && s.any_put())
        .expect("the counterexample snapshots while a put is in flight");
    let mut rt = DurableBinding::start(&m, &states[0].0);
    for (i, (state, action)) in states.iter().enumerate() {
        let Some(action) = action else { break };
        let result = DurableBinding::step(&m, &mut rt, state, action);
        if i < snapshot_in_flight {
            result.unwrap_or_else(|e| panic!("step {}: {e}", i + 1));
            assert_eq!(
                DurableBinding::model_view(&m, &states[i + 1].0),
                DurableBinding::runtime_view(&rt),
                "step {}",
                i + 1
            );
        } else {
            let refusal = result.expect_err("the runtime refuses the snapshot");
            assert!(
                matches!(
                    refusal,
                    Rejection::Runtime(OperatorError::PutInFlight { .. })
                ),
                "{refusal}"
            );
            break;
        }
    }
    // With synchronous puts the model never snapshots there, and the fixed design holds.
    let sync = model("fixed", &[("inputs", "1"), ("compact-offsets", "false")]);
    assert!(check::shortest(&sync, property::CALL_AT_MOST_ONCE).is_none());
}

/// A snapshot probed while a put is in flight is refused and changes nothing.
#[test]
fn a_snapshot_while_a_put_is_in_flight_is_refused() {
    let m = model("fixed", &[]);
    let actions = [
        Action::DeliverInput(0),
        Action::StartAction(0),
        Action::CallSupplier(0),
        Action::SendPut(0),
    ];
    let states = trace::states_of(&m, 0, &actions).unwrap();
    let (at, _) = states.last().unwrap();
    assert!(DurableBinding::probes(&m, at).contains(&Action::TriggerCheckpoint));
    let mut rt = DurableBinding::start(&m, &states[0].0);
    for (state, action) in &states {
        let Some(action) = action else { break };
        DurableBinding::step(&m, &mut rt, state, action).unwrap();
    }
    let before = DurableBinding::runtime_view(&rt);
    let mut probe = rt.clone();
    let refusal = DurableBinding::step(&m, &mut probe, at, &Action::TriggerCheckpoint).unwrap_err();
    assert_eq!(
        refusal,
        Rejection::Runtime(OperatorError::PutInFlight {
            key: "key0.0".into()
        })
    );
    assert_eq!(DurableBinding::runtime_view(&probe), before);
    // Acknowledged, the put no longer holds the snapshot back.
    let after_ack = m.next_state(at, Action::AckPut(0)).unwrap();
    DurableBinding::step(&m, &mut rt, at, &Action::AckPut(0)).unwrap();
    DurableBinding::step(&m, &mut rt, &after_ack, &Action::TriggerCheckpoint).unwrap();
}

/// The progress a cover reports: once per level after the first, levels counting up,
/// counts growing, and the last report below the final coverage.
#[test]
fn cover_reports_progress_level_by_level() {
    let m = model("fixed", &[]);
    let mut seen: Vec<steadfast_conformance::cover::Progress> = Vec::new();
    let c = steadfast_conformance::cover::cover_with_progress::<DurableBinding>(&m, 1, &mut |p| {
        seen.push(*p)
    })
    .unwrap();
    assert!(seen.len() > 10, "{}", seen.len());
    for (i, p) in seen.iter().enumerate() {
        assert_eq!(p.level, i + 1);
    }
    for w in seen.windows(2) {
        assert!(w[0].unique_states <= w[1].unique_states);
        assert!(w[0].transitions < w[1].transitions);
        assert!(w[0].steps < w[1].steps);
    }
    let last = seen.last().unwrap();
    assert!(last.unique_states <= c.unique_states && last.transitions <= c.transitions);
    assert_eq!(c.unique_states, 34_531);
}

#[test]
fn the_eager_binding_refuses_concurrent_puts_by_name() {
    let settings = Settings::parse(Durable::params(), &[("concurrent-puts", "true")]).unwrap();
    let e = EagerDurable::build("fixed", &settings).unwrap_err();
    assert!(e.0.contains("no concurrent puts"), "{e}");
    let settings = Settings::parse(Durable::params(), &[("zombie-sends", "true")]).unwrap();
    let e = EagerDurable::build("fixed", &settings).unwrap_err();
    assert!(e.0.contains("zombie-sends"), "{e}");
}

// Two operator subtasks sharing one log (`subtasks` 2), and a restore that scales the job
// in to one (`rescale`).

/// The kinds the `subtasks` scenario covers: the synchronous ones and subtask 1's part.
fn subtask_kinds(rescale: bool) -> Vec<&'static str> {
    let mut kinds = SYNCHRONOUS_KINDS.to_vec();
    kinds.push("SnapshotSubtask");
    if rescale {
        kinds.push("RestoreScaledIn");
    }
    kinds.sort();
    kinds
}

fn scenario(name: &str) -> Durable {
    Durable::scenario(steadfast_model::durable::Design::Fixed, name).unwrap()
}

/// Every transition of the scenarios with two subtasks: two operators on one log, each
/// restored from the union minimum of the subtasks' markers (or, in
/// `rescale-own-marker`, its own, as the model does there) and keeping only the keys it
/// owns; a scale-in restores one operator owning both keys.
#[test]
fn every_transition_of_two_subtasks_and_a_scale_in() {
    for (name, rescale, pinned) in [
        ("subtasks", false, (103_682, 267_268)),
        ("rescale", true, (140_882, 357_411)),
        ("rescale-own-marker", true, (149_029, 376_628)),
    ] {
        let c = full_coverage(name, &scenario(name), &subtask_kinds(rescale));
        assert_eq!((c.unique_states, c.transitions), pinned, "{name}");
        assert!(c.probes > 0, "{name}");
    }
}

/// A restored subtask that replays every key's records, not only its own.
struct NoOwnershipFilter;

impl Variant for NoOwnershipFilter {
    fn owns_every_key() -> bool {
        true
    }
}

/// A restored subtask that replays from its own part's marker, not the minimum of all.
struct OwnMarkerReplay;

impl Variant for OwnMarkerReplay {
    fn replays_own_marker() -> bool {
        true
    }
}

/// Without the ownership filter, both subtasks take key 0's keyed state at the first
/// restore: subtask 1 holds a key it does not own.
#[test]
fn a_replay_without_the_ownership_filter_diverges_at_the_first_restore() {
    let d = cover::<Conformant<NoOwnershipFilter>>(&scenario("subtasks")).unwrap_err();
    println!("{d}");
    assert_eq!(
        d.trace,
        [
            "DeliverInput(0)",
            "TriggerCheckpoint",
            "SnapshotSubtask",
            "CompleteCheckpoint(1)",
            "Crash { landed: false }",
            "Restore"
        ]
    );
    assert_eq!(
        d.problem,
        Problem::Projection(vec!["subtasks[1].keys: [] | [0]".to_string()])
    );
}

/// Replaying from the own marker where the model takes the union minimum: the scale-in
/// restore replays from subtask 0's marker, past key 1's saved result, which the model
/// keeps. Against the own-marker model the same runtime agrees at every step.
#[test]
fn a_replay_from_the_own_marker_diverges_where_the_scale_in_skips_a_saved_result() {
    let d = cover::<Conformant<OwnMarkerReplay>>(&scenario("rescale")).unwrap_err();
    println!("{d}");
    assert_eq!(d.step, 10);
    assert_eq!(d.action, "RestoreScaledIn");
    assert_eq!(
        d.trace[..8],
        [
            "DeliverInput(1)",
            "StartAction(1)",
            "CallSupplier(1)",
            "SendPut(1)",
            "AckPut(1)",
            "TriggerCheckpoint",
            "SnapshotSubtask",
            "CompleteCheckpoint(1)",
        ]
    );
    let Problem::Projection(lines) = &d.problem else {
        panic!("{d}");
    };
    assert!(
        lines.contains(&r#"subtasks[0].cache: [{"action":0,"key":1,"seq":0}] | []"#.to_string()),
        "{d}"
    );
    assert!(
        lines.iter().any(|l| {
            l.contains(
            "rebuild reports 0 records scanned and 0 states loaded, the model replays 1 and loads 1"
        )
        }),
        "{d}"
    );
    let c = cover::<Conformant<OwnMarkerReplay>>(&scenario("rescale-own-marker"))
        .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(c.unique_states, 149_029);
}

/// The eager binding drives one operator: it refuses two subtasks by name.
#[test]
fn the_eager_binding_refuses_two_subtasks_by_name() {
    let settings = Settings::parse(Durable::params(), &[("subtasks", "2")]).unwrap();
    let e = EagerDurable::build("fixed", &settings).unwrap_err();
    assert!(e.0.contains("one subtask"), "{e}");
}

/// The operator's own seed bugs, both switched on (`set_defects`): the end-offset marker
/// and the old put order, the model's `unpatched` design.
struct SeedBugs;

impl Variant for SeedBugs {
    fn defects() -> &'static [Defect] {
        &[Defect::EndOffsetMarker, Defect::CacheBeforeAck]
    }
}

/// The operator's seed bugs are the model's `unpatched` design, step for step: every
/// transition of it at the conformance bounds, with and without a failed send, agrees
/// with the operator that carries them, as the fixed design agrees with the operator
/// without them. The same operator departs from the fixed design where the unpatched
/// marker does.
#[test]
fn the_operators_seed_bugs_conform_to_the_unpatched_design() {
    for (name, overrides) in [
        ("unpatched", &[][..]),
        (
            "unpatched with a failed send",
            &[("send-failures", "1")][..],
        ),
    ] {
        let m = model("unpatched", overrides);
        let c = cover::<Conformant<SeedBugs>>(&m).unwrap_or_else(|d| panic!("{name}: {d}"));
        report(name, &c);
        let checker = m.clone().checker().spawn_bfs().join();
        assert_eq!(c.transitions, checker.state_count() - m.init_states().len());
        let fails = c.kinds.get("FailPut").copied().unwrap_or(0);
        assert_eq!(fails > 0, !overrides.is_empty(), "{name}: {:?}", c.kinds);
    }
    let d = cover::<Conformant<SeedBugs>>(&model("fixed", &[])).unwrap_err();
    assert_eq!((d.step, d.action.as_str()), (6, "TriggerCheckpoint"));
    assert_eq!(
        d.problem,
        Problem::Projection(vec!["pending[0].marker[0]: 0 | 1".to_string()])
    );
    // The report of an operator carrying seed bugs names them.
    assert!(
        d.runtime
            .contains("defects: Defects { end_offset_marker: true, cache_before_ack: true }"),
        "{}",
        d.runtime
    );
}
