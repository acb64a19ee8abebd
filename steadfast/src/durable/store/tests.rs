//! Unit tests of the store: hashing, owned rebuilds, marker merges, epochs.

use super::*;
use crate::durable::log::LogRecord;

fn state(calls: usize) -> ActionState {
    ActionState {
        call_results: (0..calls)
            .map(|i| crate::durable::CallResult {
                function: format!("f{i}"),
                args_digest: 0,
                outcome: crate::durable::CallOutcome::Value(serde_json::json!(i)),
            })
            .collect(),
        completed: false,
        output: None,
    }
}

fn sk(key: &str) -> StateKey {
    StateKey {
        key: key.into(),
        seq: 0,
        action: "a".into(),
    }
}

#[test]
fn equal_stores_hash_alike_whatever_order_they_were_filled_in() {
    use std::hash::BuildHasher;
    let (mut one, mut two) = (ActionStateStore::new(2), ActionStateStore::new(2));
    for key in ["a", "b", "c"] {
        one.acknowledge(&sk(key), state(1), 3);
    }
    for key in ["c", "b", "a"] {
        two.acknowledge(&sk(key), state(1), 3);
    }
    assert!(one == two);
    let fixed = std::hash::RandomState::new();
    assert_eq!(fixed.hash_one(&one), fixed.hash_one(&two));
    // A state put again at a later offset makes another store.
    let mut other = one.clone();
    other.acknowledge(&sk("a"), state(2), 4);
    assert!(other != one);
    assert_ne!(fixed.hash_one(&other), fixed.hash_one(&one));
}

/// Records of keys `a` and `b` in one partition, at offsets 0 and 1.
fn records() -> Vec<LogRecord> {
    let store = ActionStateStore::new(1);
    ["a", "b"]
        .iter()
        .enumerate()
        .map(|(offset, key)| {
            let put = store.encode_put(&sk(key), &state(1)).unwrap();
            LogRecord {
                partition: put.partition,
                offset: offset as Offset,
                key: put.key,
                value: put.value,
            }
        })
        .collect()
}

fn rebuilt(owned: Ownership) -> (ActionStateStore, RebuildReport) {
    let marker = RecoveryMarker::unfenced(vec![0]);
    let mut rebuild = Rebuild::new(&marker, BTreeMap::new(), owned, 2).unwrap();
    for r in records() {
        rebuild.feed(&r).unwrap();
    }
    rebuild.finish(&[2]).unwrap()
}

#[test]
fn a_rebuild_keeps_only_the_records_of_keys_it_owns() {
    let (store, report) = rebuilt(Ownership::Keys(["a".to_string()].into()));
    assert_eq!(store.cache().into_keys().collect::<Vec<_>>(), [sk("a")]);
    assert_eq!(store.offset_of(&sk("a")), Some((0, 0)));
    assert_eq!(
        (
            report.records_scanned,
            report.foreign_skipped,
            report.states_loaded
        ),
        (2, 1, 1)
    );
    let (store, report) = rebuilt(Ownership::Keys(["b".to_string()].into()));
    assert_eq!(store.cache().into_keys().collect::<Vec<_>>(), [sk("b")]);
    assert_eq!(report.foreign_skipped, 1);
    let (store, report) = rebuilt(Ownership::All);
    assert_eq!(store.cached_len(), 2);
    assert_eq!(report.foreign_skipped, 0);
}

fn marker(offsets: &[Offset]) -> RecoveryMarker {
    RecoveryMarker::unfenced(offsets.to_vec())
}

#[test]
fn merged_markers_take_the_minimum_per_partition() {
    let merged = merge_recovery_markers(&[&marker(&[3, 5]), &marker(&[4, 2])]).unwrap();
    assert_eq!(merged, marker(&[3, 2]));
    let three = [marker(&[7, 1]), marker(&[7, 9]), marker(&[6, 9])];
    assert_eq!(
        merge_recovery_markers(&three.iter().collect::<Vec<_>>()).unwrap(),
        marker(&[6, 1])
    );
    assert_eq!(
        merge_recovery_markers(&[&marker(&[4])]).unwrap(),
        marker(&[4])
    );
}

fn leveled(offsets: &[Offset], levels: &[Epoch]) -> RecoveryMarker {
    RecoveryMarker {
        offsets: offsets.to_vec(),
        levels: levels.to_vec(),
    }
}

#[test]
fn merged_markers_take_the_level_of_the_minimum_offset() {
    let merged =
        merge_recovery_markers(&[&leveled(&[3, 5], &[1, 2]), &leveled(&[4, 2], &[2, 1])]).unwrap();
    assert_eq!(merged, leveled(&[3, 2], &[1, 1]));
    // Equal offsets: the highest level (both were read from one log).
    let merged = merge_recovery_markers(&[&leveled(&[4], &[1]), &leveled(&[4], &[2])]).unwrap();
    assert_eq!(merged, leveled(&[4], &[2]));
    // A part of a checkpoint taken before markers had levels counts as level 0.
    let old = marker(&[2, 9]).offsets;
    let old = RecoveryMarker {
        offsets: old,
        levels: Vec::new(),
    };
    let merged = merge_recovery_markers(&[&leveled(&[3, 5], &[2, 2]), &old]).unwrap();
    assert_eq!(merged, leveled(&[2, 5], &[0, 2]));
}

#[test]
fn stores_of_other_epochs_or_fences_differ() {
    use std::hash::BuildHasher;
    let fixed = std::hash::RandomState::new();
    let (one, two) = (ActionStateStore::new(1), ActionStateStore::new_at(1, 2));
    assert!(one != two);
    assert_ne!(fixed.hash_one(&one), fixed.hash_one(&two));
    let fenced = |level| {
        let marker = leveled(&[0], &[level]);
        let rebuild = Rebuild::new(&marker, BTreeMap::new(), Ownership::All, 2).unwrap();
        rebuild.finish(&[0]).unwrap().0
    };
    assert!(fenced(1) != fenced(2));
    assert_ne!(fixed.hash_one(fenced(1)), fixed.hash_one(fenced(2)));
    assert!(fenced(1) == fenced(1).unshared());
    assert_eq!(fenced(1).epoch(), 2);
    let text = format!("{:?}", fenced(1));
    assert!(text.ends_with("epoch: 2, fences: [[(0, 1)]] }"), "{text}");
}

#[test]
fn markers_of_different_partition_counts_or_none_do_not_merge() {
    let err = merge_recovery_markers(&[&marker(&[3, 5]), &marker(&[4])]).unwrap_err();
    assert_eq!(
        err,
        MergeError::PartitionCount {
            index: 1,
            expected: 2,
            found: 1
        }
    );
    assert_eq!(
        err.to_string(),
        "recovery marker 1 names 1 partitions, marker 0 names 2"
    );
    assert_eq!(merge_recovery_markers(&[]).unwrap_err(), MergeError::Empty);
}
