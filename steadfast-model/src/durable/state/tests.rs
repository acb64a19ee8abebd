//! Unit tests of the state's value types: the bit codings give back what was stored,
//! and the fingerprint tells apart what the fields tell apart.

use super::*;

#[test]
fn a_state_set_holds_what_was_inserted_and_answers_holds_call() {
    let mut set = StateSet::default();
    assert!(!set.holds_call(0));
    set.insert(ActionState::with_calls(1));
    set.insert(ActionState::COMPLETED);
    assert!(set.contains(ActionState::with_calls(1)));
    assert!(set.contains(ActionState::COMPLETED));
    assert!(!set.contains(ActionState::with_calls(0)));
    // One result saved: call 0's, not call 1's.
    assert!(set.holds_call(0));
    assert!(!set.holds_call(1));
    assert_eq!(set.iter().count(), 2);
    // A list that skipped call 0 (its put failed, call 1's result took its place).
    set.insert(ActionState::holding([1]));
    assert!(set.holds_call(1) && !set.holds_call(2));
    assert_eq!(set.iter().count(), 3);
}

#[test]
fn a_list_that_skips_a_call_keeps_which_calls_it_holds() {
    let skipped = ActionState::holding([0, 2]);
    assert_eq!(skipped.calls(), 2);
    assert!(!skipped.in_call_order() && ActionState::with_calls(2).in_call_order());
    assert!(skipped.holds(0) && !skipped.holds(1) && skipped.holds(2));
    assert_eq!(skipped.results_before(2), ActionState::with_calls(1));
    assert_eq!(
        ActionState::with_calls(1).with_result(2),
        skipped,
        "appended at the index"
    );
    assert_eq!(ActionState::of_index(skipped.index()), skipped);
    let json = serde_json::to_string(&skipped).unwrap();
    assert_eq!(json, r#"{"calls":2,"held":[0,2],"completed":false}"#);
    assert_eq!(serde_json::from_str::<ActionState>(&json).unwrap(), skipped);
    let aligned = serde_json::to_string(&ActionState::with_calls(2)).unwrap();
    assert_eq!(aligned, r#"{"calls":2,"completed":false}"#);
}

#[test]
fn runs_count_per_state_key_and_call() {
    let mut runs = Runs::ZERO;
    let a = StateKey::of_slot(5);
    let b = StateKey::of_slot(6);
    runs.bump(a, 2);
    runs.bump(a, 2);
    runs.bump(b, 0);
    assert_eq!((runs.get(a, 2), runs.get(b, 0), runs.get(a, 1)), (2, 1, 0));
    runs.set(a, 2, 40);
    assert_eq!(runs.get(a, 2), 15, "saturates");
    assert_eq!(runs.nonzero().collect::<Vec<_>>(), [(a, 2, 15), (b, 0, 1)]);
}

#[test]
fn an_action_state_keeps_its_fields() {
    for calls in 0..=MAX_CALLS as u8 {
        let st = ActionState::with_calls(calls);
        assert_eq!((st.calls(), st.completed()), (calls, false));
        assert_eq!(ActionState::of_index(st.index()), st);
    }
    assert_eq!(
        (
            ActionState::COMPLETED.calls(),
            ActionState::COMPLETED.completed()
        ),
        (0, true)
    );
    assert_eq!(std::mem::size_of::<Option<ActionState>>(), 1);
}

#[test]
fn per_state_key_arrays_give_back_what_was_set() {
    let st = ActionState::with_calls(2);
    let records = Records {
        latest: st,
        offset: 0,
        landed: StateSet(1 << st.index()),
    };
    let (mut cache, mut acked, mut log) = (Cache::EMPTY, AckedOffsets::NONE, Log::EMPTY);
    cache.set(4, Some(st));
    acked.set(4, Some(0));
    log.set(4, Some(records));
    assert_eq!(
        (cache.get(4), acked.get(4), log.get(4)),
        (Some(st), Some(0), Some(records))
    );
    assert_eq!((cache.get(3), acked.get(3), log.get(3)), (None, None, None));
    assert!(cache.any(3..5) && !cache.any(0..4));
    assert_eq!(
        log.entries().map(|(k, _)| k.slot()).collect::<Vec<_>>(),
        [4]
    );
    cache.set(4, None);
    acked.set(4, None);
    log.set(4, None);
    assert_eq!(
        (cache, acked, log),
        (Cache::EMPTY, AckedOffsets::NONE, Log::EMPTY)
    );
}

fn fingerprint(s: &State) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

#[test]
fn the_fingerprint_tells_apart_what_the_fields_tell_apart() {
    // Presence matters even where the value is the zero byte: an offset 0, a record
    // at offset 0, a state with no call results.
    let base = State::empty();
    let st = ActionState::with_calls(0);
    let mut variants: Vec<State> = Vec::new();
    let mut with = |f: &dyn Fn(&mut State)| {
        let mut s = base.clone();
        f(&mut s);
        variants.push(s);
    };
    with(&|_| {});
    with(&|s| s.cache.set(0, Some(st)));
    with(&|s| s.cache.set(17, Some(ActionState::COMPLETED)));
    with(&|s| s.acked_offset.set(0, Some(0)));
    with(&|s| s.acked_offset.set(17, Some(0)));
    with(&|s| {
        s.log.set(
            0,
            Some(Records {
                latest: st,
                offset: 0,
                landed: StateSet(1),
            }),
        )
    });
    with(&|s| s.phase[2] = Phase::AtCall(0));
    with(&|s| s.call_index_behind[2] = true);
    with(&|s| s.call_index_behind[0] = true);
    with(&|s| s.cache.set(0, Some(ActionState::holding([1]))));
    with(&|s| {
        s.log.set(
            17,
            Some(Records {
                latest: ActionState::holding([0, 2]),
                offset: 0,
                landed: StateSet(1 << ActionState::holding([0, 2]).index()),
            }),
        )
    });
    with(&|s| s.checkpoints = 4);
    with(&|s| s.crashes = 3);
    with(&|s| s.phase[2] = Phase::AwaitCompletion);
    let put = |slot, offset| {
        Some(Put {
            record: Record {
                state_key: StateKey::of_slot(slot),
                state: st,
            },
            offset,
        })
    };
    let last = MAX_SLOTS - 1;
    let last_key = StateKey::of_slot(last).key as usize;
    with(&|s| s.puts[0] = put(0, None));
    with(&|s| s.puts[0] = put(0, Some(0)));
    with(&|s| s.puts[last_key] = put(last, None));
    with(&|s| {
        s.puts[0] = put(0, Some(0));
        s.puts[last_key] = put(last, Some(0));
    });
    with(&|s| s.failed_sends = 1);
    with(&|s| s.scaled_in = true);
    with(&|s| {
        s.zombie = Some(Record {
            state_key: StateKey::of_slot(0),
            state: st,
        })
    });
    with(&|s| s.events.duplicate_output = true);
    with(&|s| s.events.committed_rerun = true);
    with(&|s| {
        s.pending[2] = Some(Checkpoint {
            next_seq: [0; MAX_KEYS],
            finished: [0; MAX_KEYS],
            next_action: [0; MAX_KEYS],
            marker: [0; MAX_PARTITIONS],
            awaiting_subtask: false,
        })
    });
    with(&|s| {
        s.pending[1] = Some(Checkpoint {
            next_seq: [0; MAX_KEYS],
            finished: [0; MAX_KEYS],
            next_action: [0; MAX_KEYS],
            marker: [0; MAX_PARTITIONS],
            awaiting_subtask: true,
        })
    });
    with(&|s| s.events.checkpoint_over_saved = true);
    with(&|s| s.events.marker_rewound = true);

    let prints: std::collections::HashSet<u64> = variants.iter().map(fingerprint).collect();
    assert_eq!(prints.len(), variants.len());
    // The ghost is left out.
    let mut ghost = base.clone();
    ghost.supplier_runs.bump(StateKey::of_slot(0), 0);
    assert_eq!(fingerprint(&ghost), fingerprint(&base));
}

#[test]
fn every_state_key_has_its_slot() {
    for slot in 0..MAX_SLOTS {
        assert_eq!(StateKey::of_slot(slot).slot(), slot);
    }
}
