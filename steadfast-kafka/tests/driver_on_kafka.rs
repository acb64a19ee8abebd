//! flink-agents issue 1158 on a real Kafka-protocol broker: the blocking durable
//! `Driver` over a `KafkaLog` (tansu, started by the test) takes inputs, runs calls,
//! checkpoints with actions between their calls, crashes and restores from the last
//! checkpoint, and no call whose saved result the broker acknowledged runs again: the
//! supplier count of every such call stays 1.

mod broker;

use std::collections::BTreeMap;

use broker::Broker;
use serde_json::json;
use steadfast::durable::{ActionBody, ActionDef, ActionStep, CallOutcome, CallRef, Datum};
use steadfast_kafka::{KafkaLog, KafkaLogOptions};
use steadfast_log::{Driver, Log};

/// The seed's action: a lookup (input 10 gives 70), then a publish of the looked-up
/// value; the output is the published value.
struct LookupThenPublish;

impl ActionBody for LookupThenPublish {
    fn step(&self, input: &Datum, results: &[CallOutcome]) -> ActionStep {
        match results {
            [] => ActionStep::Call {
                function: "lookup".into(),
                args: input.clone(),
            },
            [CallOutcome::Value(v)] => ActionStep::Call {
                function: "publish".into(),
                args: v.clone(),
            },
            [_, CallOutcome::Value(v)] => ActionStep::Finish { output: v.clone() },
            _ => ActionStep::Finish {
                output: json!("error"),
            },
        }
    }
}

fn supplier(_call: &CallRef, function: &str, args: &Datum) -> CallOutcome {
    match function {
        "lookup" => CallOutcome::Value(json!(args.as_i64().unwrap_or(0) * 7)),
        _ => CallOutcome::Value(args.clone()),
    }
}

fn kafka_driver(options: KafkaLogOptions) -> Driver<KafkaLog> {
    Driver::new(
        vec![ActionDef::new("act", LookupThenPublish)],
        Box::new(move || KafkaLog::open(options.clone())),
        Box::new(supplier),
    )
    .expect("driver over the Kafka log")
}

fn call(key: &str, seq: u64, index: u32) -> CallRef {
    CallRef {
        key: key.into(),
        seq,
        action: "act".into(),
        index,
    }
}

/// Every call whose supplier ran more than once, with its count and its runs whose
/// record never reached the log.
fn repeated(driver: &Driver<KafkaLog>) -> Vec<(CallRef, u32, u32)> {
    driver
        .supplier_calls()
        .iter()
        .filter(|(_, &n)| n > 1)
        .map(|(c, &n)| {
            let unlanded = driver.unlanded_runs().get(c).copied().unwrap_or(0);
            (c.clone(), n, unlanded)
        })
        .collect()
}

/// The seed's regression: the lookup is saved, a checkpoint is taken with the action
/// still queued (between its two calls), the job crashes and restores. The restore
/// reads the saved lookup back from the broker, from the checkpoint's marker, and
/// only the publish runs: output 70, each supplier ran once.
#[test]
fn queued_action_reuses_its_saved_result_from_the_broker() {
    let broker = Broker::start();
    broker.create_topic("actions", 1);
    let mut d = kafka_driver(broker.options("actions"));
    d.input("user-7", json!(10)).unwrap();
    d.call(0).unwrap(); // lookup saved and acknowledged at offset 0
    assert_eq!(d.requested_calls()[0].call, call("user-7", 0, 1));
    let id = d.checkpoint().unwrap();
    d.complete_checkpoint(id).unwrap();
    // The marker rewinds to the saved lookup, not to the log's end.
    assert_eq!(d.completed_checkpoint().unwrap().marker.offsets, vec![0]);

    let report = d.restore().unwrap().expect("restored from a checkpoint");
    // The saved lookup, and the restore's fence after it.
    assert_eq!(report.records_scanned, 2);
    assert_eq!(report.states_loaded, 1);
    assert_eq!(d.requested_calls().len(), 1);
    assert_eq!(d.requested_calls()[0].call, call("user-7", 0, 1));
    d.run_until_idle().unwrap();

    let outputs: Vec<Datum> = d.emitted().iter().flat_map(|o| o.outputs.clone()).collect();
    assert_eq!(outputs, vec![json!(70)]);
    assert_eq!(d.supplier_calls().get(&call("user-7", 0, 0)), Some(&1));
    assert_eq!(d.supplier_calls().get(&call("user-7", 0, 1)), Some(&1));
    // lookup, the restore's fence, publish, completion: four records on the broker.
    assert_eq!(d.log().unwrap().partition_count(), 1);
    let ends = KafkaLog::open(broker.options("actions"))
        .unwrap()
        .end_offsets()
        .unwrap();
    assert_eq!(ends, vec![4]);
}

/// Sixteen keys over three partitions, their puts group-committed (one flush per round
/// of returned calls), through two crashes: one after a checkpoint taken with every
/// action between its calls, one with calls returned but not yet delivered (their
/// records never reached the log, so those calls may run again) and later inputs
/// uncheckpointed. Every call runs at most once plus its unlanded runs, every call
/// acknowledged before a crash runs exactly once, and every input's output is emitted.
#[test]
fn sixteen_keys_group_committed_through_crashes_repeat_no_acknowledged_call() {
    const KEYS: u64 = 16;
    let broker = Broker::start();
    broker.create_topic("grouped", 3);
    let mut d = kafka_driver(broker.options("grouped"));
    let key = |k: u64| format!("user-{k}");

    // Round 1: every key's lookup, group-committed; checkpoint with all actions queued.
    for k in 0..KEYS {
        d.input(key(k), json!(k)).unwrap();
    }
    while !d.requested_calls().is_empty() {
        d.run_supplier(0).unwrap();
    }
    d.deliver_all().unwrap();
    assert!(d.flushes() >= 1);
    let id = d.checkpoint().unwrap();
    d.complete_checkpoint(id).unwrap();
    let acknowledged: Vec<CallRef> = (0..KEYS).map(|k| call(&key(k), 0, 0)).collect();

    let report = d.restore().unwrap().expect("restored from a checkpoint");
    assert_eq!(report.states_loaded, KEYS);
    // Only the publishes are asked for: every lookup was read back from the broker.
    let mut asked: Vec<CallRef> = d.requested_calls().iter().map(|r| r.call.clone()).collect();
    asked.sort();
    let mut publishes: Vec<CallRef> = (0..KEYS).map(|k| call(&key(k), 0, 1)).collect();
    publishes.sort();
    assert_eq!(asked, publishes);
    d.run_until_idle_grouped().unwrap();
    let id = d.checkpoint().unwrap();
    d.complete_checkpoint(id).unwrap();

    // Round 2: a second input per key; half the lookups delivered, the other half
    // returned but not delivered when the crash comes.
    for k in 0..KEYS {
        d.input(key(k), json!(100 + k)).unwrap();
    }
    while !d.requested_calls().is_empty() {
        d.run_supplier(0).unwrap();
    }
    let mut delivered = Vec::new();
    while d.returned_calls().len() > (KEYS / 2) as usize {
        delivered.push(d.returned_calls()[0].clone());
        d.deliver(0).unwrap();
    }
    d.crash();
    d.restore().unwrap().expect("restored from a checkpoint");
    d.run_until_idle_grouped().unwrap();

    let repeats = repeated(&d);
    for (c, runs, unlanded) in &repeats {
        assert!(
            *runs <= 1 + unlanded,
            "{c:?} ran {runs} times with {unlanded} unlanded runs"
        );
    }
    for c in acknowledged.iter().chain(&publishes).chain(&delivered) {
        assert_eq!(
            d.supplier_calls().get(c),
            Some(&1),
            "acknowledged call {c:?} ran again"
        );
    }
    // The undelivered half ran again, and only those.
    assert_eq!(repeats.len(), (KEYS / 2) as usize);

    // Every input's output, once per emission; the last emission of each is right.
    let mut last: BTreeMap<(String, u64), Vec<Datum>> = BTreeMap::new();
    for o in d.emitted() {
        last.insert((o.key.clone(), o.seq), o.outputs.clone());
    }
    assert_eq!(last.len(), (2 * KEYS) as usize);
    for k in 0..KEYS {
        assert_eq!(last[&(key(k), 0)], vec![json!(7 * k)]);
        assert_eq!(last[&(key(k), 1)], vec![json!(7 * (100 + k))]);
    }
    println!(
        "16 keys on 3 partitions: {} supplier runs, {} flushes",
        d.supplier_calls().values().sum::<u32>(),
        d.flushes()
    );
}
