//! Unit tests of the operator: equality of copies, wait maps, checkpoint merges and
//! owned restores.

use super::keyed::KeyMap;
use super::waits::{same_waits, Wait, NOTHING};
use super::*;
use crate::durable::log::Offset;
use crate::durable::store::{MergeError, Ownership, RecoveryMarker};
use crate::durable::{ActionState, Datum};

fn part(id: u64, keys: &[&str], marker: &[Offset]) -> Checkpoint {
    Checkpoint {
        id,
        keys: keys
            .iter()
            .map(|k| {
                (
                    k.to_string(),
                    KeyState {
                        next_seq: 1,
                        last_completed: Some(0),
                        ..KeyState::default()
                    },
                )
            })
            .collect(),
        marker: RecoveryMarker::unfenced(marker.to_vec()),
    }
}

fn actions() -> Vec<ActionDef> {
    vec![ActionDef::new("a", CallChain::new(["f"]))]
}

#[test]
fn a_key_waiting_for_nothing_is_the_same_as_a_key_without_an_entry() {
    let running = Wait::Completion {
        seq: 0,
        action: 0,
        state: ActionState {
            call_results: Vec::new(),
            completed: true,
            output: None,
        },
    };
    let map = |entries: &[(&str, &Wait)]| -> KeyMap<Wait> {
        entries
            .iter()
            .map(|(k, w)| (k.to_string(), (*w).clone()))
            .collect()
    };
    let idle = map(&[("a", NOTHING), ("b", &running)]);
    let fresh = map(&[("b", &running)]);
    assert!(same_waits(&idle, &fresh) && same_waits(&fresh, &idle));
    let other = map(&[("a", &running)]);
    assert!(!same_waits(&idle, &other) && !same_waits(&other, &idle));
    let more = map(&[("a", &running), ("b", &running)]);
    assert!(!same_waits(&fresh, &more) && !same_waits(&more, &fresh));
}

#[test]
fn a_copy_stays_equal_through_refused_events_and_differs_after_an_accepted_one() {
    let mut op = Operator::new(actions(), 2).unwrap();
    let copy = op.clone();
    assert!(op == copy);
    let unsent = Event::PutAcked {
        key: "k".into(),
        put: PutId(7),
        offset: 0,
    };
    assert!(op.handle(unsent).is_err());
    assert!(op == copy, "a refused event leaves the operator equal");
    let input = || Event::Input {
        key: "k".into(),
        value: Datum::Null,
    };
    op.handle(input()).unwrap();
    assert!(op != copy, "an accepted input changes it");
    // The same events on another copy reach an equal operator (equal by content,
    // not by shared maps).
    let mut other = copy.clone();
    other.handle(input()).unwrap();
    assert!(op == other);
    // Another body under the same name is another action.
    let renamed = Operator::new(actions(), 2).unwrap();
    assert!(renamed != copy);
    // The text names the put in flight by key and id.
    let mut saving = Operator::new(actions(), 2).unwrap();
    let effects = saving.handle(input()).unwrap();
    let Some(Effect::Call { call, .. }) = effects.into_iter().next() else {
        panic!("the action asks for its call");
    };
    let back = Event::CallReturned {
        call,
        outcome: CallOutcome::Value(Datum::Null),
    };
    saving.handle(back).unwrap();
    // A copy that shares no map is equal, entry by entry, and then changes alone.
    let mut unshared = saving.unshared();
    assert!(unshared == saving);
    unshared.handle(input()).unwrap();
    assert!(unshared != saving);
    let text = format!("{saving:?}");
    assert!(
        text.contains(r#"puts_in_flight: [("k", PutId(0))]"#),
        "{text}"
    );
    // Operators built apart from the same definitions are equal.
    let defs = actions();
    let (one, two) = (Operator::new(defs.clone(), 2), Operator::new(defs, 2));
    assert!(one.unwrap() == two.unwrap());
}

#[test]
fn parts_merge_into_their_keys_and_the_minimum_marker() {
    let merged = Checkpoint::merge(&[&part(3, &["x"], &[4]), &part(3, &["y"], &[2])]).unwrap();
    assert_eq!(merged.keys.keys().collect::<Vec<_>>(), ["x", "y"]);
    assert_eq!(merged.marker.offsets, [2]);
    assert_eq!(merged.id, 3);
}

#[test]
fn parts_that_do_not_make_one_checkpoint_are_refused() {
    let twice = Checkpoint::merge(&[&part(3, &["x"], &[4]), &part(3, &["x"], &[2])]);
    assert_eq!(twice.unwrap_err(), MergeError::KeyInTwoParts("x".into()));
    let ids = Checkpoint::merge(&[&part(3, &["x"], &[4]), &part(4, &["y"], &[2])]);
    assert!(matches!(
        ids.unwrap_err(),
        MergeError::CheckpointId {
            index: 1,
            expected: 3,
            found: 4
        }
    ));
    let partitions = Checkpoint::merge(&[&part(3, &["x"], &[4]), &part(3, &["y"], &[2, 0])]);
    assert!(matches!(
        partitions.unwrap_err(),
        MergeError::PartitionCount { .. }
    ));
    assert_eq!(Checkpoint::merge(&[]).unwrap_err(), MergeError::Empty);
}

#[test]
fn an_owned_restore_takes_only_the_keyed_state_of_its_keys() {
    let merged = Checkpoint::merge(&[&part(1, &["x"], &[0]), &part(1, &["y"], &[0])]).unwrap();
    let owned = Ownership::Keys(["y".to_string()].into());
    let (op, _) = Operator::restore_owned(actions(), &merged, owned, 2)
        .unwrap()
        .finish(&[0])
        .unwrap();
    assert_eq!(op.keys().keys().collect::<Vec<_>>(), ["y"]);
    let (op, _) = Operator::restore(actions(), &merged, 2)
        .unwrap()
        .finish(&[0])
        .unwrap();
    let mut all: Vec<&String> = op.keys().keys().collect();
    all.sort();
    assert_eq!(all, ["x", "y"]);
}
