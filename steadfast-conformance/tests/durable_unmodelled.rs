//! Behaviours of the durable operator that the model of issue 1158 does not have, each
//! driven by hand and checked by name: an action whose code changed across a restore
//! (a saved result of another call is dropped and the call made again), actions without
//! durable calls, an operator without actions, and eager scheduling taking a `Continue`.
//! The model's bounds start at one action of one call, and its action code never changes.
//!
//! Every test runs with every log event enabled and reads the operator's log: what the
//! operator did is what it logged.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::json;
use steadfast::durable::decode_record;
use steadfast::durable::{
    ActionDef, CallChain, CallOutcome, CallRef, Checkpoint, Datum, Effect, Event, KeyState,
    LogRecord, Operator, QueuedAction, RecoveryMarker, Scheduling,
};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Metadata, Subscriber};

/// A subscriber that takes every event and keeps it as one line: its fields as
/// `name=value`, in the order the event names them.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Line(String);

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push_str(&format!(" {}={value}", field.name()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut line = Line(String::new());
        event.record(&mut line);
        self.0.lock().unwrap().push(line.0.trim_start().to_string());
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Runs `f` with every event logged; returns its result and the log's lines.
fn logged<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    let capture = Capture::default();
    let out = tracing::subscriber::with_default(capture.clone(), f);
    let lines = capture.0.lock().unwrap().clone();
    (out, lines)
}

/// Whether some line of `log` holds every one of `parts`.
fn has(log: &[String], parts: &[&str]) -> bool {
    log.iter().any(|l| parts.iter().all(|p| l.contains(p)))
}

fn chain(name: &str, functions: &[&str]) -> ActionDef {
    ActionDef::new(name, CallChain::new(functions.iter().copied()))
}

/// The log's record of an `Effect::Append` at `offset`.
fn landed(effect: &Effect, offset: u64) -> LogRecord {
    let Effect::Append { record, .. } = effect else {
        panic!("not an append: {effect:?}")
    };
    LogRecord {
        partition: record.partition,
        offset,
        key: record.key.clone(),
        value: record.value.clone(),
    }
}

/// The call an `Effect::Call` asks for, with its function.
fn asked(effects: &[Effect]) -> (CallRef, String) {
    match effects {
        [Effect::Call { call, function, .. }] => (call.clone(), function.clone()),
        other => panic!("not one call: {other:?}"),
    }
}

/// Restores `actions` from `checkpoint` over the one-partition `log`.
fn restored(actions: Vec<ActionDef>, checkpoint: &Checkpoint, log: &[LogRecord]) -> Operator {
    let mut restoring = Operator::restore(actions, checkpoint, 2).unwrap();
    for r in log.iter().skip(checkpoint.marker.offsets[0] as usize) {
        restoring.feed(r).unwrap();
    }
    restoring.finish(&[log.len() as u64]).unwrap().0
}

/// A saved result whose call the action's code no longer makes (its first call now
/// goes to another function) is dropped with the results after it, and the call is
/// made again; unchanged code reuses it. The model's action code never changes across
/// a restore, so its traces never meet a mismatch.
#[test]
fn a_saved_result_of_a_call_the_code_no_longer_makes_is_dropped_and_called_again() {
    let ((), log) = logged(|| {
        let mut op = Operator::new(vec![chain("a", &["f0", "f1"])], 1).unwrap();
        let effects = op
            .handle(Event::Input {
                key: "k".into(),
                value: json!(1),
            })
            .unwrap();
        let (call, function) = asked(&effects);
        assert_eq!((call.index, function.as_str()), (0, "f0"));
        let outcome = CallOutcome::Value(json!("r0"));
        let effects = op.handle(Event::CallReturned { call, outcome }).unwrap();
        let mut records = vec![landed(&effects[0], 0)];
        let put = op.puts_in_flight()[0].1;
        let shown = format!("{op:?}");
        assert!(
            shown.contains(r#"puts_in_flight: [("k", PutId(0))]"#),
            "{shown}"
        );
        let effects = op
            .handle(Event::PutAcked {
                key: "k".into(),
                put,
                offset: 0,
            })
            .unwrap();
        assert_eq!(asked(&effects).0.index, 1);
        let checkpoint = op.snapshot(1, &[1]).unwrap();
        assert_eq!(
            checkpoint.marker.offsets,
            [0],
            "the saved result is replayed"
        );
        assert!(op.checkpoint_complete(1).is_some());

        // Unchanged code reuses the saved result and asks for call 1.
        let mut same = restored(vec![chain("a", &["f0", "f1"])], &checkpoint, &records);
        let (call, function) = asked(&same.handle(Event::Resume).unwrap());
        assert_eq!((call.index, function.as_str()), (1, "f1"));

        // Changed code: call 0 goes to `g0`, so saved result 0 is not its result.
        let mut changed = restored(vec![chain("a", &["g0", "f1"])], &checkpoint, &records);
        let (call, function) = asked(&changed.handle(Event::Resume).unwrap());
        assert_eq!((call.index, function.as_str()), (0, "g0"));
        let outcome = CallOutcome::Value(json!("s0"));
        let effects = changed
            .handle(Event::CallReturned { call, outcome })
            .unwrap();
        records.push(landed(&effects[0], 1));
        let (_, state) = decode_record(&records[1]).unwrap().unwrap();
        let saved: Vec<(&str, &CallOutcome)> = state
            .call_results
            .iter()
            .map(|r| (r.function.as_str(), &r.outcome))
            .collect();
        assert_eq!(saved, [("g0", &CallOutcome::Value(json!("s0")))]);
    });
    assert!(has(
        &log,
        &[
            "event=call_mismatch",
            "key=k",
            "index=0",
            "saved_function=f0",
            "function=g0",
            "dropped=1"
        ]
    ));
    // The put that saved call 0 names its action and one result; the checkpoint and
    // the restore name their one key; the prune of the completed checkpoint keeps it.
    assert!(has(
        &log,
        &[
            "event=put_sent",
            "key=k",
            "action=a",
            "put=0",
            "completed=false",
            "results=1"
        ]
    ));
    assert!(has(&log, &["event=snapshot", "checkpoint=1", "keys=1"]));
    assert!(has(
        &log,
        &[
            "event=start",
            "restored=true",
            "keys=1",
            "records_scanned=1"
        ]
    ));
    assert!(has(
        &log,
        &["event=prune", "states_pruned=0", "tracked_keys=1"]
    ));
    assert!(has(
        &log,
        &[
            "component=durable.store",
            "event=put",
            "seq=0",
            "partition=0",
            "outcome=acked"
        ]
    ));
}

/// One input of key `k` queued for `actions`, none finished: a checkpoint the operator
/// could have taken.
fn queued(actions: &[&str], input: Datum) -> Checkpoint {
    let queue: VecDeque<QueuedAction> = actions
        .iter()
        .map(|a| QueuedAction {
            seq: 0,
            action: a.to_string(),
            input: input.clone(),
        })
        .collect();
    Checkpoint {
        id: 1,
        keys: BTreeMap::from([(
            "k".to_string(),
            KeyState {
                next_seq: 1,
                queue,
                ..KeyState::default()
            },
        )]),
        marker: RecoveryMarker::unfenced(vec![0]),
    }
}

/// Actions without durable calls finish at once with their input as output: restored
/// with two of them queued, a resume sends the first's completion put, and its
/// acknowledgement the second's at once (the resume waits on the key through both),
/// whose acknowledgement emits both outputs. The model's actions make one call at
/// least.
#[test]
fn actions_without_calls_complete_at_once_with_their_input_as_output() {
    let (records, log) = logged(|| {
        let actions = || vec![chain("a", &[]), chain("b", &[])];
        let mut op = restored(actions(), &queued(&["a", "b"], json!(7)), &[]);
        let mut records = Vec::new();
        let mut effects = op.handle(Event::Resume).unwrap();
        for offset in 0..2 {
            assert!(matches!(
                effects.as_slice(),
                [Effect::Append { .. }, Effect::Flush]
            ));
            records.push(landed(&effects[0], offset));
            let put = op.puts_in_flight()[0].1;
            effects = op
                .handle(Event::PutAcked {
                    key: "k".into(),
                    put,
                    offset,
                })
                .unwrap();
        }
        assert_eq!(
            effects,
            [Effect::Emit {
                key: "k".into(),
                seq: 0,
                outputs: vec![json!(7), json!(7)],
            }]
        );
        records
    });
    for (r, action) in records.iter().zip(["a", "b"]) {
        let (sk, state) = decode_record(r).unwrap().unwrap();
        assert_eq!(sk.action, action);
        assert!(state.completed && state.call_results.is_empty());
        assert_eq!(state.output, Some(json!(7)));
    }
    assert!(has(
        &log,
        &["event=put_sent", "action=b", "completed=true", "results=0"]
    ));
}

/// An operator without actions finishes each input as it arrives, with no outputs.
/// The model's inputs run one action at least.
#[test]
fn an_operator_without_actions_finishes_each_input_at_once() {
    let (op, log) = logged(|| {
        let mut op = Operator::new(Vec::new(), 1).unwrap();
        for seq in 0..2 {
            let effects = op
                .handle(Event::Input {
                    key: "k".into(),
                    value: json!(seq),
                })
                .unwrap();
            assert_eq!(
                effects,
                [Effect::Emit {
                    key: "k".into(),
                    seq,
                    outputs: Vec::new(),
                }]
            );
        }
        op
    });
    assert_eq!(op.keys()["k"].last_completed, Some(1));
    assert!(op.keys_in_progress().is_empty());
    assert!(has(&log, &["event=input_started", "seq=1", "actions=0"]));
}

/// With eager scheduling a `Continue` for a restored key, before any resume, drives it
/// as the resume does. The eager binding resumes at once, so it never sends one.
#[test]
fn eager_continue_drives_a_restored_key_as_a_resume_does() {
    let ((), log) = logged(|| {
        let actions = || vec![chain("a", &["f0"])];
        let op = restored(actions(), &queued(&["a"], json!(3)), &[]);
        assert_eq!(op.scheduling(), Scheduling::Eager);
        assert!(op.activity("k").ready);
        let mut by_continue = op.clone();
        let mut by_resume = op;
        let continued = by_continue
            .handle(Event::Continue { key: "k".into() })
            .unwrap();
        let resumed = by_resume.handle(Event::Resume).unwrap();
        assert_eq!(continued, resumed);
        let (call, function) = asked(&continued);
        assert_eq!((call.index, function.as_str()), (0, "f0"));
        assert_eq!(
            by_continue.outstanding_calls(),
            by_resume.outstanding_calls()
        );
    });
    assert!(has(&log, &["event=call_requested", "key=k", "function=f0"]));
}
