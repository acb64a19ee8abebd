//! Epoch fencing of zombie sends (`specs/durable-actions.md`, "zombie sends"): a send
//! of a crashed incarnation that lands after its successor's restore must never win a
//! later replay. Every record carries its writer's epoch; a restore appends a fence of
//! its new epoch to every partition before it reads; a replay skips a state whose epoch
//! is below the latest fence before it, starting from the level the checkpoint's marker
//! carries. Shown on the rebuild record by record, across several restores, and on the
//! blocking driver over the in-memory log with a zombie appended as another producer.

use std::collections::BTreeMap;

use serde_json::json;
use steadfast::durable::{encode_record, fence_record};
use steadfast::durable::{
    ActionState, ActionStateStore, CallOutcome, CallResult, Checkpoint, Epoch, LogError, LogRecord,
    Offset, Operator, OperatorError, Ownership, Rebuild, RebuildReport, RecoveryMarker, StateKey,
    StoreError,
};
use steadfast_log::{Driver, DriverError, MemoryLog, SendFault};

fn sk(key: &str) -> StateKey {
    StateKey {
        key: key.into(),
        seq: 0,
        action: "a".into(),
    }
}

/// A state holding `calls` saved results.
fn state(calls: usize) -> ActionState {
    ActionState {
        call_results: (0..calls)
            .map(|i| CallResult {
                function: format!("f{i}"),
                args_digest: 0,
                outcome: CallOutcome::Value(json!(i)),
            })
            .collect(),
        completed: false,
        output: None,
    }
}

/// The record of `key`'s state with `calls` results written by incarnation `epoch`, at
/// `offset` of partition 0.
fn put(offset: Offset, key: &str, calls: usize, epoch: Epoch) -> LogRecord {
    let (mut k, mut v) = (Vec::new(), Vec::new());
    encode_record(&sk(key), &state(calls), epoch, &mut k, &mut v).unwrap();
    LogRecord {
        partition: 0,
        offset,
        key: k,
        value: v,
    }
}

/// The fence of incarnation `epoch` at `offset` of partition 0.
fn fence(offset: Offset, epoch: Epoch) -> LogRecord {
    let f = fence_record(0, epoch);
    LogRecord {
        partition: 0,
        offset,
        key: f.key,
        value: f.value,
    }
}

/// The rebuild of incarnation `epoch` from `marker` over the one-partition `log` (read
/// from the marker's offset to its end).
fn rebuild(
    marker: &RecoveryMarker,
    epoch: Epoch,
    log: &[LogRecord],
) -> Result<(ActionStateStore, RebuildReport), StoreError> {
    let mut rebuild = Rebuild::new(marker, BTreeMap::new(), Ownership::All, epoch)?;
    for r in &log[marker.offsets[0] as usize..] {
        rebuild.feed(r)?;
    }
    rebuild.finish(&[log.len() as Offset])
}

/// Results saved for `key` in `store`, and the offset they were read at.
fn saved(store: &ActionStateStore, key: &str) -> Option<(usize, Offset)> {
    store
        .entry_of(&sk(key))
        .map(|(s, _, offset)| (s.call_results.len(), offset))
}

#[test]
fn a_zombie_landing_after_a_newer_fence_is_skipped_counted_and_not_cached() {
    let log = [
        put(0, "k", 1, 1),
        fence(1, 2),
        put(2, "k", 2, 2),
        // Incarnation 1's send of its one result, landed late.
        put(3, "k", 1, 1),
        fence(4, 3),
    ];
    let (store, report) = rebuild(&RecoveryMarker::unfenced(vec![0]), 3, &log).unwrap();
    assert_eq!(saved(&store, "k"), Some((2, 2)), "the zombie does not win");
    assert_eq!(report.fenced_skipped, 1);
    assert_eq!(report.records_scanned, 5);
    assert_eq!(report.states_loaded, 1);
    // Records of an epoch before any fence of a higher one are valid.
    let (store, report) = rebuild(&RecoveryMarker::unfenced(vec![0]), 3, &log[..1]).unwrap();
    assert_eq!(
        (saved(&store, "k"), report.fenced_skipped),
        (Some((1, 0)), 0)
    );
}

#[test]
fn a_record_of_the_fence_epoch_after_the_fence_is_read() {
    let log = [
        fence(0, 2),
        put(1, "k", 1, 2),
        put(2, "j", 1, 3),
        fence(3, 3),
    ];
    let (store, report) = rebuild(&RecoveryMarker::unfenced(vec![0]), 3, &log).unwrap();
    assert_eq!(saved(&store, "k"), Some((1, 1)));
    assert_eq!(saved(&store, "j"), Some((1, 2)));
    assert_eq!(report.fenced_skipped, 0);
}

/// Epoch 1's zombie lands after epoch 2's fence; epoch 2 checkpoints with its marker
/// past that fence; epoch 3 restores from it. The fences before the marker are not read
/// again: the marker's level (2) fences the zombie after it.
#[test]
fn the_level_a_marker_carries_fences_zombies_after_it_in_a_later_restore() {
    let mut log = vec![put(0, "a", 1, 1), fence(1, 2), put(2, "b", 1, 2)];
    // Epoch 2's rebuild read up to its own fence; then it saved b's result at 2.
    let (mut store, _) = rebuild(&RecoveryMarker::unfenced(vec![0]), 2, &log[..2]).unwrap();
    store.acknowledge(&sk("b"), state(1), 2);
    // a finished; b pins the marker, past the fence.
    let done = BTreeMap::from([("a".to_string(), 0)]);
    let marker = store.recovery_marker(&[3], &done).unwrap();
    assert_eq!(
        marker,
        RecoveryMarker {
            offsets: vec![2],
            levels: vec![2]
        }
    );
    // Epoch 1's send of a's state lands, then epoch 3 fences and replays from there.
    log.extend([put(3, "a", 1, 1), fence(4, 3)]);
    let (store, report) = rebuild(&marker, 3, &log).unwrap();
    assert_eq!(saved(&store, "b"), Some((1, 2)));
    assert_eq!(saved(&store, "a"), None, "the zombie is not cached");
    assert_eq!((report.fenced_skipped, report.records_scanned), (1, 3));
    // Without the level, the replay would have taken it.
    let (store, _) = rebuild(&RecoveryMarker::unfenced(vec![2]), 3, &log).unwrap();
    assert_eq!(saved(&store, "a"), Some((1, 3)));
}

/// A marker rewound to before epoch 2's fence carries the level there (1, from the
/// checkpoint epoch 2 restored from): the records of epoch 1 between the marker and
/// epoch 2's fence are valid and read by epoch 3; a zombie of epoch 1 after that fence
/// is not.
#[test]
fn a_marker_before_a_fence_carries_the_level_before_it() {
    let mut log = vec![
        fence(0, 1),
        put(1, "a", 1, 1),
        put(2, "b", 1, 1),
        fence(3, 2),
    ];
    let from = RecoveryMarker {
        offsets: vec![1],
        levels: vec![1],
    };
    let (store, _) = rebuild(&from, 2, &log).unwrap();
    assert_eq!(
        (saved(&store, "a"), saved(&store, "b")),
        (Some((1, 1)), Some((1, 2)))
    );
    // a is unfinished: the marker rewinds to it, before epoch 2's fence.
    let marker = store.recovery_marker(&[4], &BTreeMap::new()).unwrap();
    assert_eq!(
        marker,
        RecoveryMarker {
            offsets: vec![1],
            levels: vec![1]
        }
    );
    log.extend([put(4, "a", 2, 1), fence(5, 3)]);
    let (store, report) = rebuild(&marker, 3, &log).unwrap();
    assert_eq!(
        (saved(&store, "a"), saved(&store, "b")),
        (Some((1, 1)), Some((1, 2)))
    );
    assert_eq!(report.fenced_skipped, 1);
    // The store of epoch 3 knows both fences it read: the level past them is 3.
    assert_eq!(store.fence_level_at(0, 6), 3);
    assert_eq!(store.fence_level_at(0, 4), 2);
    assert_eq!(store.fence_level_at(0, 1), 1);
}

#[test]
fn records_of_a_future_epoch_are_refused_in_one_line() {
    let marker = RecoveryMarker::unfenced(vec![0]);
    for (record, what) in [(put(1, "k", 1, 4), "state"), (fence(1, 4), "fence")] {
        let mut rebuild = Rebuild::new(&marker, BTreeMap::new(), Ownership::All, 3).unwrap();
        rebuild.feed(&put(0, "k", 1, 3)).unwrap();
        let before = rebuild.clone();
        let err = rebuild.feed(&record).unwrap_err();
        assert_eq!(
            err,
            StoreError::FutureEpoch {
                partition: 0,
                offset: 1,
                epoch: 4,
                restoring: 3
            },
            "{what}"
        );
        assert_eq!(
            err.to_string(),
            "record at partition 0 offset 1 has epoch 4, above the restoring \
             incarnation's epoch 3"
        );
        assert_eq!(
            rebuild, before,
            "a refused {what} leaves the rebuild as it was"
        );
    }
}

/// A record of format 1, before records had an epoch, reads as epoch 0: valid until a
/// fence, stale after one.
#[test]
fn a_format_1_record_is_read_as_epoch_0() {
    let key = [
        1, 1, 0, 0, 0, b'k', 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, b'a',
    ];
    let value = [1, 0, 0, 0, 0, 0];
    let old = |offset| LogRecord {
        partition: 0,
        offset,
        key: key.to_vec(),
        value: value.to_vec(),
    };
    let (store, _) = rebuild(&RecoveryMarker::unfenced(vec![0]), 1, &[old(0)]).unwrap();
    assert_eq!(saved(&store, "k"), Some((0, 0)));
    let (store, report) = rebuild(
        &RecoveryMarker::unfenced(vec![0]),
        2,
        &[fence(0, 2), old(1)],
    )
    .unwrap();
    assert_eq!((saved(&store, "k"), report.fenced_skipped), (None, 1));
}

/// A checkpoint taken before markers had levels loads, at level 0.
#[test]
fn a_checkpoint_without_levels_loads_at_level_0() {
    let text = r#"{"id":3,"keys":{},"marker":{"offsets":[4,0]}}"#;
    let cp: Checkpoint = serde_json::from_str(text).unwrap();
    assert_eq!((cp.marker.level(0), cp.marker.level(1)), (0, 0));
    let (op, _) = Operator::restore(actions(), &cp, 2)
        .unwrap()
        .finish(&[4, 0])
        .unwrap();
    assert_eq!(op.epoch(), 2);
}

#[test]
fn a_restore_at_an_epoch_not_above_the_markers_levels_is_refused() {
    let cp = Checkpoint {
        id: 1,
        keys: BTreeMap::new(),
        marker: RecoveryMarker {
            offsets: vec![0, 0],
            levels: vec![1, 3],
        },
    };
    let err = Operator::restore(actions(), &cp, 3).unwrap_err();
    assert_eq!(
        err,
        OperatorError::StaleEpoch {
            epoch: 3,
            partition: 1,
            level: 3
        }
    );
    assert!(!err.to_string().contains('\n'), "{err}");
    assert!(Operator::restore(actions(), &cp, 4).is_ok());
    // A rebuild is refused a marker above its epoch; one at it is its own fences'.
    let err = Rebuild::new(&cp.marker, BTreeMap::new(), Ownership::All, 2).unwrap_err();
    assert!(
        matches!(err, StoreError::InvalidMarker(ref m) if m.contains("above the restoring epoch 2")),
        "{err}"
    );
    assert!(Rebuild::new(&cp.marker, BTreeMap::new(), Ownership::All, 3).is_ok());
}

// The blocking driver over the in-memory log.

#[path = "support/zombie.rs"]
mod zombie;
use zombie::*;

#[test]
fn a_zombie_send_landing_after_the_restore_does_not_repeat_an_acknowledged_call() {
    let d = zombie_run(true);
    assert_eq!(
        d.supplier_calls()[&call(1)],
        1,
        "f1's saved result is reused"
    );
    assert_eq!(d.supplier_calls()[&call(2)], 1);
    assert_eq!(d.last_rebuild().unwrap().fenced_skipped, 1);
    assert_eq!(d.emitted().len(), 1);
}

#[test]
fn without_fencing_the_zombie_wins_and_the_call_runs_again() {
    let d = zombie_run(false);
    assert_eq!(
        d.supplier_calls()[&call(1)],
        2,
        "the zombie's stale state won"
    );
    assert_eq!(d.last_rebuild().unwrap().fenced_skipped, 0);
}

/// A restart with no completed checkpoint fences too: its rebuild reads nothing, and
/// the markers of its checkpoints carry its level.
#[test]
fn a_restart_without_checkpoint_fences_and_its_markers_carry_the_level() {
    let log = MemoryLog::new(2);
    let mut d = driver(&log);
    d.input("k", json!(1)).unwrap();
    d.call(0).unwrap();
    d.crash();
    assert_eq!(d.restore().unwrap(), None, "no checkpoint: nothing rebuilt");
    assert_eq!(d.epoch(), 2);
    let fences: Vec<usize> = log.all_records().iter().map(Vec::len).collect();
    // Partition of k holds f0's result and the fence; the other the fence alone.
    assert_eq!(fences.iter().sum::<usize>(), 3);
    let id = d.checkpoint().unwrap();
    d.complete_checkpoint(id).unwrap();
    assert_eq!(d.completed_checkpoint().unwrap().marker.levels, vec![2, 2]);
    // The restore from it is epoch 3's.
    d.restore().unwrap();
    assert_eq!(d.operator().unwrap().epoch(), 3);
}

/// A restore whose fence is not acknowledged fails, with no operator running.
#[test]
fn a_fence_that_fails_fails_the_restore() {
    let log = MemoryLog::new(1);
    let mut d = driver(&log);
    d.crash();
    log.inject_send_fault(SendFault::FailBeforeLanding);
    let err = d.restore().unwrap_err();
    assert!(
        matches!(err, DriverError::Log(LogError::SendFailed(_))),
        "{err:?}"
    );
    assert!(d.operator().is_none());
    d.restore().unwrap();
    assert_eq!(d.epoch(), 3, "every attempt takes a new epoch");
}

/// A driver taking over from a crashed process starts at the epoch after the crashed
/// one's.
#[test]
fn a_driver_after_a_crash_takes_the_next_epoch() {
    let log = MemoryLog::new(1);
    let handle = log.clone();
    let mut d = Driver::after_crash(
        actions(),
        Box::new(move || Ok(handle.clone())),
        Box::new(supplier),
        4,
    );
    d.restore().unwrap();
    assert_eq!(d.epoch(), 5);
    assert_eq!(d.operator().unwrap().epoch(), 5);
    let records = log.records(0);
    assert_eq!(
        steadfast::durable::decode_entry(&records[0]).unwrap(),
        steadfast::durable::Entry::Fence { epoch: 5 }
    );
}
