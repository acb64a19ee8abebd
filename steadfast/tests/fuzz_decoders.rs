//! Property-based fuzzing of the durable decoders: the log record decoder (key and value
//! bytes of action state and fence records flipped, cut short, spliced, grown by random
//! bytes, and random bytes behind each format's and kind's header) and the checkpoint
//! decoder (a checkpoint's JSON damaged the same ways, then restored and driven if it
//! still parses). Nothing may panic; a record is refused with `StoreError::Decode`, a
//! checkpoint by serde, with `OperatorError::InvalidCheckpoint` or, for a damaged fence
//! level, `OperatorError::StaleEpoch`.
//!
//! CI runs a few thousand cases; `STEADFAST_FUZZ_CASES=1000000 cargo test --release -p
//! steadfast --test fuzz_decoders` is the soak run.

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::json;
use steadfast::durable::{decode_entry, encode_record, fence_record};
use steadfast::durable::{
    ActionDef, ActionState, CallChain, CallOutcome, CallResult, Checkpoint, Event, LogRecord,
    Operator, OperatorError, StateKey, StoreError,
};

fn cases(default: u32) -> u32 {
    std::env::var("STEADFAST_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn damaged(mut bytes: Vec<u8>, edits: &[(u8, prop::sample::Index, u8)]) -> Vec<u8> {
    for (kind, at, byte) in edits {
        if bytes.is_empty() {
            bytes.push(*byte);
            continue;
        }
        let i = at.index(bytes.len());
        match kind % 4 {
            0 => bytes[i] = *byte,
            1 => bytes.truncate(i),
            2 => bytes.insert(i, *byte),
            _ => {
                // A length field grown: four bytes of all ones at `i`.
                let end = (i + 4).min(bytes.len());
                bytes[i..end].iter_mut().for_each(|b| *b = 0xff);
            }
        }
    }
    bytes
}

fn edits() -> impl Strategy<Value = Vec<(u8, prop::sample::Index, u8)>> {
    prop::collection::vec(
        (any::<u8>(), any::<prop::sample::Index>(), any::<u8>()),
        1..5,
    )
}

#[test]
fn damaged_records_decode_or_are_refused_by_name() {
    let state = ActionState {
        call_results: vec![CallResult {
            function: "lookup".into(),
            args_digest: 7,
            outcome: CallOutcome::Value(json!({"city": "Berlin", "n": [1, 2]})),
        }],
        completed: true,
        output: Some(json!("done")),
    };
    let sk = StateKey {
        key: "user-7".into(),
        seq: 3,
        action: "enrich".into(),
    };
    let (mut key, mut value) = (Vec::new(), Vec::new());
    encode_record(&sk, &state, 3, &mut key, &mut value).unwrap();
    let fence = fence_record(0, 3);
    let records = [(key, value), (fence.key, fence.value)];
    proptest!(Config::with_cases(cases(5_000)), |(fence in any::<bool>(), on_key in any::<bool>(), e in edits())| {
        let (key, value) = &records[usize::from(fence)];
        let (k, v) = if on_key {
            (damaged(key.clone(), &e), value.clone())
        } else {
            (key.clone(), damaged(value.clone(), &e))
        };
        let record = LogRecord { partition: 0, offset: 9, key: k, value: v };
        if let Err(err) = decode_entry(&record) {
            prop_assert!(
                matches!(&err, StoreError::Decode { partition: 0, offset: 9, .. }),
                "{:?}", err
            );
        }
    });
}

#[test]
fn random_record_bytes_are_refused_by_name() {
    proptest!(Config::with_cases(cases(5_000)), |(k in prop::collection::vec(any::<u8>(), 0..64), v in prop::collection::vec(any::<u8>(), 0..64))| {
        let record = LogRecord { partition: 1, offset: 2, key: k, value: v };
        if let Err(err) = decode_entry(&record) {
            prop_assert!(matches!(err, StoreError::Decode { .. }), "{:?}", err);
        }
    });
}

/// Random bytes behind a valid header, so that they reach every field's decoder: the
/// key's format and kind (a state's or a fence's, of format 2; format 1 has no kind),
/// and the value's format and, of format 2, an epoch.
#[test]
fn random_bytes_behind_every_header_are_refused_by_name() {
    let headers: [(&[u8], &[u8]); 3] = [
        (&[2, 0], &[2, 1, 0, 0, 0, 0, 0, 0, 0]),
        (&[2, 1], &[2, 1, 0, 0, 0, 0, 0, 0, 0]),
        (&[1], &[1]),
    ];
    proptest!(Config::with_cases(cases(5_000)), |(h in 0..3usize, k in prop::collection::vec(any::<u8>(), 0..48), v in prop::collection::vec(any::<u8>(), 0..48))| {
        let (key, value) = headers[h];
        let record = LogRecord {
            partition: 1,
            offset: 2,
            key: [key, &k].concat(),
            value: [value, &v].concat(),
        };
        if let Err(err) = decode_entry(&record) {
            prop_assert!(matches!(err, StoreError::Decode { .. }), "{:?}", err);
        }
    });
}

fn actions() -> Vec<ActionDef> {
    vec![
        ActionDef::new("a", CallChain::new(["f0", "f1"])),
        ActionDef::new("b", CallChain::new(["f0"])),
    ]
}

/// A checkpoint with a started input and a pending one, as JSON text.
fn checkpoint_text() -> String {
    let mut op = Operator::new(actions(), 2).unwrap();
    for v in 0..2 {
        op.handle(Event::Input {
            key: "k".into(),
            value: json!(v),
        })
        .unwrap();
    }
    serde_json::to_string(&op.snapshot(4, &[0, 0]).unwrap()).unwrap()
}

#[test]
fn damaged_checkpoints_restore_or_are_refused() {
    let text = checkpoint_text().into_bytes();
    proptest!(Config::with_cases(cases(5_000)), |(e in edits())| {
        let bytes = damaged(text.clone(), &e);
        let Ok(cp) = serde_json::from_slice::<Checkpoint>(&bytes) else {
            return Ok(());
        };
        match Operator::restore(actions(), &cp, 2) {
            Err(err) => prop_assert!(
                matches!(
                    err,
                    OperatorError::InvalidCheckpoint(_)
                        | OperatorError::Store(_)
                        | OperatorError::StaleEpoch { .. }
                ),
                "{:?}", err
            ),
            Ok(restoring) => {
                // No records in the log: a marker past an empty log is refused by name.
                let ends = vec![0; cp.marker.offsets.len()];
                if let Ok((mut op, _)) = restoring.finish(&ends) {
                    // Restored: it runs without a panic, whatever it refuses.
                    let _ = op.handle(Event::Resume);
                    let _ = op.handle(Event::Input { key: "k".into(), value: json!(9) });
                    let _ = op.snapshot(5, &ends);
                }
            }
        }
    });
}
