//! Conformance of the blocking durable-actions driver (`steadfast_log::Driver` over
//! the in-memory log) to the model's `fixed` design at the eager operator's grain, compared
//! through the driver's own projection: every event at the conformance bounds, with failed
//! sends, two crashes and aborted checkpoints; a damaged reading of the projection caught
//! at its first step; and the driver's refusals of bad input, each leaving it unchanged.

use std::collections::BTreeMap;

use serde_json::json;
use stateright::{Checker, Model};
use steadfast::durable::{ActionDef, CallChain, CallOutcome, OperatorError};
use steadfast_conformance::cover::{cover, Coverage};
use steadfast_conformance::durable::driver::{
    DriverBinding, DriverConformant, DriverDurable, Reading,
};
use steadfast_conformance::Problem;
use steadfast_log::{Driver, DriverError, MemoryLog, Projection, SendFault};
use steadfast_model::durable::Durable;
use steadfast_model::{Settings, Spec};

/// The conformance bounds of the other durable bindings: the model's defaults but one
/// input per key, offsets as real log positions.
const BOUNDS: &[(&str, &str)] = &[("inputs", "1"), ("compact-offsets", "false")];

fn model(overrides: &[(&str, &str)]) -> DriverDurable {
    let mut all = BOUNDS.to_vec();
    all.extend_from_slice(overrides);
    let settings = Settings::parse(Durable::params(), &all).unwrap();
    DriverDurable::build("fixed", &settings).unwrap()
}

/// Covers `m` through the driver and checks the counts against stateright's for the
/// same graph; returns the coverage.
fn full_coverage(name: &str, m: &DriverDurable) -> Coverage {
    let c = cover::<DriverBinding>(m).unwrap_or_else(|d| panic!("{d}"));
    let kinds: Vec<String> = c.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!(
        "{name}: {} unique states, {} events, {} probes refused, {} runtime steps in {:.2} s \
         ({:.0} steps/s); kinds: {}",
        c.unique_states,
        c.transitions,
        c.probes,
        c.steps,
        c.seconds,
        c.steps_per_second(),
        kinds.join(", ")
    );
    let checker = m.clone().checker().spawn_bfs().join();
    assert!(
        checker.discoveries().is_empty(),
        "an event ends with a step left"
    );
    assert_eq!(c.unique_states, checker.unique_state_count());
    assert_eq!(c.transitions, checker.state_count() - m.init_states().len());
    assert_eq!(c.steps, c.transitions + c.probes);
    c
}

/// The event kinds of a run without send failures.
const KINDS: [&str; 7] = [
    "CallSupplier",
    "CallSupplier + Crash",
    "CompleteCheckpoint",
    "Crash",
    "DeliverInput",
    "Restore",
    "TriggerCheckpoint",
];

fn kinds(c: &Coverage) -> Vec<&str> {
    c.kinds.keys().map(String::as_str).collect()
}

#[test]
fn driver_every_event_of_fixed_at_conformance_bounds() {
    let m = model(&[]);
    let c = full_coverage("driver, fixed", &m);
    assert_eq!(
        (c.unique_states, c.transitions, c.probes),
        (3_944, 8_692, 1_411)
    );
    assert_eq!(kinds(&c), KINDS);
    // Every state the driver reaches is one the eager graph reaches; the others are
    // reached only through a restore that does not re-deliver, at once and in delivery
    // order, every input after its checkpoint.
    let eager = eager_states(&m);
    let reached: std::collections::HashSet<_> =
        reachable(&m).into_iter().map(|s| s.model).collect();
    assert!(reached.is_subset(&eager));
    assert_eq!((eager.len(), reached.len()), (5_035, 3_271));
}

/// Every state of the eager graph of `m`, breadth first.
fn eager_states(m: &DriverDurable) -> std::collections::HashSet<steadfast_model::durable::State> {
    let mut seen = std::collections::HashSet::new();
    let mut queue: std::collections::VecDeque<_> = m.eager.init_states().into();
    while let Some(s) = queue.pop_front() {
        if seen.insert(s.clone()) {
            queue.extend(m.eager.events(&s).into_iter().map(|(_, next)| next));
        }
    }
    seen
}

/// Every state of `m`, breadth first.
fn reachable(m: &DriverDurable) -> Vec<steadfast_conformance::durable::driver::DriverState> {
    let mut seen = std::collections::HashSet::new();
    let mut queue: std::collections::VecDeque<_> = m.init_states().into();
    let mut out = Vec::new();
    while let Some(s) = queue.pop_front() {
        if !seen.insert(s.clone()) {
            continue;
        }
        for (_, next) in m.events(&s) {
            queue.push_back(next);
        }
        out.push(s);
    }
    out
}

/// A restore re-delivers the inputs after the restored checkpoint in one driver call:
/// one event stands for the eager `Restore` run and a `DeliverInput` run per input.
#[test]
fn a_restore_event_re_delivers_the_inputs_after_its_checkpoint() {
    let m = model(&[]);
    let shown: Vec<String> = reachable(&m)
        .iter()
        .flat_map(|s| m.events(s))
        .map(|(e, _)| format!("{e:?}"))
        .filter(|e| e.starts_with("Restore [DeliverInput(0), StartAction(0), DeliverInput(1)"))
        .collect();
    assert!(!shown.is_empty());
    assert!(shown.contains(
        &"Restore [DeliverInput(0), StartAction(0), DeliverInput(1), StartAction(1)]".to_string()
    ));
    // And in the other delivery order.
    assert!(reachable(&m)
        .iter()
        .flat_map(|s| m.events(s))
        .any(|(e, _)| {
            format!("{e:?}")
                == "Restore [DeliverInput(1), StartAction(1), DeliverInput(0), StartAction(0)]"
        }));
}

#[test]
fn driver_every_event_with_failed_sends() {
    let c = full_coverage(
        "driver, failed sends",
        &model(&[("send-failures", "1"), ("fail-after-landing", "true")]),
    );
    assert_eq!(
        (c.unique_states, c.transitions, c.probes),
        (14_780, 24_228, 29_981)
    );
    let mut want = KINDS.to_vec();
    want.extend(["CallSupplier + FailPut", "Restore + FailPut"]);
    want.sort_unstable();
    assert_eq!(kinds(&c), want);
}

#[test]
fn driver_every_event_with_checkpoint_aborts_and_a_restart_from_nothing() {
    let c = full_coverage(
        "driver, aborts, restart from nothing",
        &model(&[
            ("checkpoint-aborts", "true"),
            ("restart-without-checkpoint", "true"),
        ]),
    );
    assert_eq!(
        (c.unique_states, c.transitions, c.probes),
        (17_263, 43_914, 7_146)
    );
    let mut want = KINDS.to_vec();
    want.push("AbortCheckpoint");
    want.sort_unstable();
    assert_eq!(kinds(&c), want);
}

#[test]
fn driver_every_event_of_one_key_with_two_actions_two_inputs_and_two_crashes() {
    let c = full_coverage(
        "driver, one key, two actions, two inputs, two crashes",
        &model(&[
            ("keys", "1"),
            ("inputs", "2"),
            ("actions", "2"),
            ("crashes", "2"),
        ]),
    );
    assert_eq!(
        (c.unique_states, c.transitions, c.probes),
        (10_643, 23_066, 4_236)
    );
    let mut want = KINDS.to_vec();
    want.push("Restore + Crash");
    want.sort_unstable();
    assert_eq!(kinds(&c), want);
}

/// A reading of the projection that loses each partition's last record.
struct DropsLastRecord;

impl Reading for DropsLastRecord {
    fn read(p: &mut Projection) {
        for partition in &mut p.log {
            partition.pop();
        }
    }
}

#[test]
fn a_projection_that_drops_the_last_record_diverges_at_the_first_put() {
    let d = cover::<DriverConformant<DropsLastRecord>>(&model(&[])).unwrap_err();
    println!("{d}");
    assert_eq!(d.step, 2);
    assert_eq!(
        d.trace,
        [
            "DeliverInput(0) [StartAction(0)]",
            "CallSupplier(0) [SendPut(0), AckPut(0)]"
        ]
    );
    let Problem::Projection(fields) = &d.problem else {
        panic!("{d}")
    };
    assert!(
        fields.contains(&"log[0].end: 1 | 0".to_string()),
        "{fields:?}"
    );
}

/// A reading of the projection that misses one supplier run of the first call.
struct MissesARun;

impl Reading for MissesARun {
    fn read(p: &mut Projection) {
        if let Some(first) = p.supplier_calls.first_mut() {
            first.count -= 1;
        }
        p.supplier_calls.retain(|c| c.count > 0);
    }
}

#[test]
fn a_driver_that_misses_a_supplier_run_diverges_at_the_first_call() {
    let d = cover::<DriverConformant<MissesARun>>(&model(&[])).unwrap_err();
    println!("{d}");
    assert_eq!(d.step, 2);
    let Problem::Projection(fields) = &d.problem else {
        panic!("{d}")
    };
    assert_eq!(fields.len(), 1, "{fields:?}");
    assert!(fields[0].starts_with("supplier_calls: "), "{fields:?}");
}

/// A driver over a fresh in-memory log, one action of two calls, the scripted supplier
/// counting its runs in `runs`.
fn driver(log: &MemoryLog) -> Driver<MemoryLog> {
    let reopen = log.clone();
    let mut driver = Driver::new(
        vec![ActionDef::new("action0", CallChain::new(["f0", "f1"]))],
        Box::new(move || Ok(reopen.clone())),
        Box::new(|_, function, args| CallOutcome::Value(json!(format!("{function}{args}")))),
    )
    .unwrap();
    // As the binding runs it: the model's log has no fence records.
    driver.set_fencing(false);
    driver
}

/// The driver's projection and counts, to show a refusal left them as they were.
fn seen(d: &mut Driver<MemoryLog>) -> (Projection, usize, usize, u64) {
    (
        d.projection().unwrap(),
        d.requested_calls().len(),
        d.returned_calls().len(),
        d.flushes(),
    )
}

#[test]
fn calls_at_no_index_are_refused_and_leave_the_driver_unchanged() {
    let log = MemoryLog::new(1);
    let mut d = driver(&log);
    d.input("k", json!(0)).unwrap();
    assert_eq!(d.requested_calls().len(), 1);
    let before = seen(&mut d);
    assert_eq!(d.run_supplier(1), Err(DriverError::NoSuchCall(1)));
    assert_eq!(d.deliver(0), Err(DriverError::NoSuchCall(0)));
    assert_eq!(d.call(5), Err(DriverError::NoSuchCall(5)));
    assert_eq!(seen(&mut d), before);
    // Nothing returned: delivering all of it is no put at all.
    d.deliver_all().unwrap();
    assert_eq!(seen(&mut d), before);
}

#[test]
fn a_crashed_driver_refuses_what_needs_an_operator() {
    let log = MemoryLog::new(1);
    let mut d = driver(&log);
    d.input("k", json!(0)).unwrap();
    d.run_supplier(0).unwrap();
    let id = d.checkpoint().unwrap();
    d.crash();
    let before = seen(&mut d);
    assert!(!before.0.running);
    // The supplier's run whose outcome the crash dropped never landed.
    assert_eq!(before.0.unlanded_runs.len(), 1);
    assert_eq!(d.checkpoint(), Err(DriverError::NotRunning));
    assert_eq!(d.deliver(0), Err(DriverError::NoSuchCall(0)));
    assert_eq!(d.deliver_all(), Err(DriverError::NotRunning));
    assert_eq!(d.run_supplier(0), Err(DriverError::NoSuchCall(0)));
    // The crash dropped the pending checkpoint.
    assert_eq!(d.complete_checkpoint(id), Ok(false));
    assert_eq!(d.abort_checkpoint(id), Ok(false));
    assert!(d.operator().is_none() && d.operator_mut().is_none() && d.log().is_none());
    assert_eq!(seen(&mut d), before);
    // An input while crashed waits in the source; the restore delivers it after the
    // one the crash lost.
    d.input("k", json!(1)).unwrap();
    assert_eq!(seen(&mut d), before);
    d.restore().unwrap();
    let keys = d.projection().unwrap().keys;
    assert_eq!((keys.len(), keys[0].next_seq), (1, 2));
}

#[test]
fn a_failed_operator_runs_no_supplier_for_its_requests() {
    let log = MemoryLog::new(1);
    let mut d = driver(&log);
    d.input("a", json!(0)).unwrap();
    d.input("b", json!(0)).unwrap();
    log.inject_send_fault(SendFault::FailBeforeLanding);
    let at = d
        .requested_calls()
        .iter()
        .position(|r| r.call.key == "a")
        .unwrap();
    assert!(matches!(
        d.call(at),
        Err(DriverError::Operator(OperatorError::PutFailed { .. }))
    ));
    let before = seen(&mut d);
    assert!(before.0.failure.is_some());
    // Key b's request is still listed; running it would be an external call whose
    // result the failed operator can never save.
    assert_eq!(d.requested_calls().len(), 1);
    assert!(matches!(
        d.call(0),
        Err(DriverError::Operator(OperatorError::Failed(_)))
    ));
    assert!(matches!(
        d.input("b", json!(1)),
        Err(DriverError::Operator(OperatorError::Failed(_)))
    ));
    assert!(matches!(
        d.checkpoint(),
        Err(DriverError::Operator(OperatorError::Failed(_)))
    ));
    assert_eq!(seen(&mut d), before);
    let runs: BTreeMap<String, u32> = before
        .0
        .supplier_calls
        .iter()
        .map(|c| (c.call.key.clone(), c.count))
        .collect();
    assert_eq!(runs, BTreeMap::from([("a".to_string(), 1)]));
}

/// The driver's accessors say what its projection says.
fn agrees_with_projection(d: &mut Driver<MemoryLog>) {
    let p = d.projection().unwrap();
    let counts = |m: &BTreeMap<steadfast::durable::CallRef, u32>| -> Vec<(String, u32, u32)> {
        m.iter()
            .map(|(c, &n)| (c.key.clone(), c.index, n))
            .collect()
    };
    let listed = |l: &[steadfast_log::CallCount]| -> Vec<(String, u32, u32)> {
        l.iter()
            .map(|c| (c.call.key.clone(), c.call.index, c.count))
            .collect()
    };
    assert_eq!(counts(d.supplier_calls()), listed(&p.supplier_calls));
    assert_eq!(counts(d.unlanded_runs()), listed(&p.unlanded_runs));
    assert_eq!(d.emitted(), p.emitted.as_slice());
    assert_eq!(d.committed(), p.committed.as_slice());
    assert_eq!(
        d.completed_checkpoint().map(|c| c.id),
        p.completed_checkpoint.map(|c| c.id)
    );
}

/// Group commit, which the eager grain has no counterpart for (the model's
/// `concurrent-puts`): every returned call is delivered at once, their puts made
/// durable by one flush; later calls likewise until none is left.
#[test]
fn grouped_delivery_saves_every_returned_call_with_one_flush_per_round() {
    let log = MemoryLog::new(1);
    let mut d = driver(&log);
    d.input("a", json!(0)).unwrap();
    d.input("b", json!(0)).unwrap();
    d.run_supplier(0).unwrap();
    d.run_supplier(0).unwrap();
    assert_eq!(d.returned_calls().len(), 2);
    d.deliver_all().unwrap();
    assert_eq!(d.flushes(), 1);
    assert_eq!(log.records(0).len(), 2);
    // Second calls, then the completions: one flush each round.
    d.run_until_idle_grouped().unwrap();
    assert_eq!(d.flushes(), 3);
    assert_eq!(log.records(0).len(), 6);
    assert_eq!(d.emitted().len(), 2);
    let id = d.checkpoint().unwrap();
    assert_eq!(d.complete_checkpoint(id), Ok(true));
    assert_eq!(d.committed().len(), 2);
    agrees_with_projection(&mut d);
}

/// One at a time: each call's put has its own flush.
#[test]
fn running_until_idle_finishes_every_input_one_call_at_a_time() {
    let log = MemoryLog::new(2);
    let mut d = driver(&log);
    for key in ["a", "b", "c"] {
        d.input(key, json!(0)).unwrap();
    }
    d.run_until_idle().unwrap();
    assert!(d.requested_calls().is_empty());
    assert_eq!(d.emitted().len(), 3);
    // Two results and a completion per input, each flushed alone.
    assert_eq!(d.flushes(), 9);
    agrees_with_projection(&mut d);
}

/// A later checkpoint's count of outputs before it shrinks by what an earlier one's
/// completion committed; completing the later one commits only the rest.
#[test]
fn completing_an_older_checkpoint_leaves_a_later_one_the_outputs_after_it() {
    let log = MemoryLog::new(1);
    let mut d = driver(&log);
    d.input("a", json!(0)).unwrap();
    d.run_until_idle().unwrap();
    let first = d.checkpoint().unwrap();
    d.input("b", json!(0)).unwrap();
    d.run_until_idle().unwrap();
    let second = d.checkpoint().unwrap();
    assert_eq!(d.complete_checkpoint(first), Ok(true));
    assert_eq!(d.committed().len(), 1);
    assert_eq!(d.complete_checkpoint(second), Ok(true));
    assert_eq!(d.committed().len(), 2);
    agrees_with_projection(&mut d);
}

/// A restore while an operator runs crashes it first: what it held and did not
/// checkpoint is gone, and the source re-delivers the input after the checkpoint.
#[test]
fn a_restore_while_running_crashes_first() {
    let log = MemoryLog::new(1);
    let mut d = driver(&log);
    let id = d.checkpoint().unwrap();
    d.complete_checkpoint(id).unwrap();
    d.input("a", json!(0)).unwrap();
    d.run_supplier(0).unwrap();
    let report = d.restore().unwrap().expect("restored from checkpoint 1");
    assert_eq!(report.records_scanned, 0);
    assert_eq!(d.last_rebuild(), Some(&report));
    // The held outcome was dropped with the crash: a run whose record never landed.
    assert_eq!(d.projection().unwrap().unlanded_runs.len(), 1);
    // The input came again and asks for its first call again.
    assert_eq!(d.requested_calls().len(), 1);
    assert_eq!(d.requested_calls()[0].call.index, 0);
    agrees_with_projection(&mut d);
}

/// An outcome whose supplier ran before another key's put failed the operator is
/// refused when delivered: nothing is saved, and its run never lands.
#[test]
fn an_outcome_held_across_a_failure_is_refused() {
    // Sends wait in a batch for the flush, which fails them before they land.
    let log = MemoryLog::with_linger(1, std::time::Duration::from_secs(3600));
    let mut d = driver(&log);
    d.input("a", json!(0)).unwrap();
    d.input("b", json!(0)).unwrap();
    let b = d
        .requested_calls()
        .iter()
        .position(|r| r.call.key == "b")
        .unwrap();
    d.run_supplier(b).unwrap();
    log.inject_flush_failure("broker unavailable");
    assert!(matches!(
        d.call(0),
        Err(DriverError::Operator(OperatorError::PutFailed { .. }))
    ));
    assert!(log.records(0).is_empty());
    assert!(matches!(
        d.deliver(0),
        Err(DriverError::Operator(OperatorError::Failed(_)))
    ));
    assert!(log.records(0).is_empty());
    let p = d.projection().unwrap();
    assert_eq!(p.unlanded_runs.len(), 2, "{:?}", p.unlanded_runs);
    agrees_with_projection(&mut d);
}

/// A checkpoint whose marker names fewer partitions than the log is refused by the
/// rebuild, after the replay read the partitions it names.
#[test]
fn a_checkpoint_of_a_narrower_log_is_refused_over_a_wider_one() {
    let log = MemoryLog::new(1);
    let mut d = driver(&log);
    let id = d.checkpoint().unwrap();
    d.complete_checkpoint(id).unwrap();
    let checkpoint = d.completed_checkpoint().unwrap().clone();
    let actions = vec![ActionDef::new("action0", CallChain::new(["f0", "f1"]))];
    let restored = steadfast_log::restore_from_log(actions, &checkpoint, &mut MemoryLog::new(2), 2);
    assert!(
        matches!(
            restored,
            Err(DriverError::Operator(OperatorError::Store(
                steadfast::durable::StoreError::InvalidMarker(ref why)
            ))) if why.contains("marker has 1 partitions, the log has 2")
        ),
        "{:?}",
        restored.map(|(_, report)| report)
    );
}
