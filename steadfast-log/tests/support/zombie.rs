//! The zombie scenario on the blocking driver over the in-memory log, shared by the
//! fencing tests and the test of its log lines (a binary of its own: a test that
//! installs a tracing subscriber must not race other tests' first use of the same
//! callsites, which can cache them as uninteresting).

// Each test binary uses part of it.
#![allow(dead_code)]

use serde_json::json;
use steadfast::durable::encode_record;
use steadfast::durable::{args_digest, ActionDef, CallChain, CallOutcome, CallRef, Datum, Offset};
use steadfast_log::{Driver, Log, MemoryLog, PendingAck};

pub(crate) fn actions() -> Vec<ActionDef> {
    vec![ActionDef::new("act", CallChain::new(["f0", "f1", "f2"]))]
}

pub(crate) fn supplier(_: &CallRef, function: &str, args: &Datum) -> CallOutcome {
    CallOutcome::Value(json!(format!("{function}{args}")))
}

pub(crate) fn driver(log: &MemoryLog) -> Driver<MemoryLog> {
    let handle = log.clone();
    Driver::new(
        actions(),
        Box::new(move || Ok(handle.clone())),
        Box::new(supplier),
    )
    .unwrap()
}

pub(crate) fn call(index: u32) -> CallRef {
    CallRef {
        key: "k".into(),
        seq: 0,
        action: "act".into(),
        index,
    }
}

/// Append `record` as another producer would (the zombie's): send, flush, await.
pub(crate) fn append_as_zombie(log: &MemoryLog, key: &[u8], value: &[u8]) -> Offset {
    let mut producer = log.clone();
    let mut ack = producer.send(0, key, value).unwrap();
    producer.flush().unwrap();
    ack.wait(&Default::default()).unwrap()
}

/// The zombie scenario: incarnation 1 runs f0 and crashes before its put lands (the
/// producer still holds it); incarnation 2 restores, runs f0 again, saves it, runs f1
/// and saves both; then incarnation 1's send of f0's result lands; incarnation 2
/// crashes before f2. The driver of incarnation 3 restores from the checkpoint taken
/// before any call. Returns the driver after it ran to the end.
pub(crate) fn zombie_run(fencing: bool) -> Driver<MemoryLog> {
    let log = MemoryLog::new(1);
    let mut d = driver(&log);
    d.set_fencing(fencing);
    d.input("k", json!(1)).unwrap();
    let id = d.checkpoint().unwrap();
    d.complete_checkpoint(id).unwrap();
    d.run_supplier(0).unwrap();
    d.crash();
    d.restore().unwrap();
    assert_eq!(d.epoch(), 2);
    d.call(0).unwrap(); // f0 saved
    let f0_saved = log.records(0).last().cloned().unwrap();
    d.call(0).unwrap(); // f0 and f1 saved
                        // Incarnation 1's put of f0's result: the same state, written at epoch 1.
    let (key, state) = steadfast::durable::decode_record(&f0_saved)
        .unwrap()
        .expect("a state record");
    assert_eq!(
        state.call_results[0].args_digest,
        args_digest(&json!([1, 0]))
    );
    let (mut k, mut v) = (Vec::new(), Vec::new());
    encode_record(&key, &state, 1, &mut k, &mut v).unwrap();
    append_as_zombie(&log, &k, &v);
    d.crash();
    d.restore().unwrap();
    assert_eq!(d.epoch(), 3);
    d.run_until_idle().unwrap();
    d
}
