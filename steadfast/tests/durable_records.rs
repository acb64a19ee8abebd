//! The action state record format of the store (flink-agents issue 1158: one record
//! per put carries the whole action state, and a restore decodes it again), with the
//! epoch of the incarnation that wrote it, and the restore's fence record: exact
//! bytes, round trips of every field and variant, records of format 1 read as epoch 0,
//! and a named [`StoreError::Decode`] for each kind of damage, never a panic.

use proptest::prelude::*;
use serde_json::json;
use steadfast::durable::{
    args_digest, ActionState, ActionStateStore, CallOutcome, CallResult, Datum, Entry, Epoch,
    LogRecord, Ownership, Rebuild, RecoveryMarker, StateKey, StoreError,
};
use steadfast::durable::{decode_entry, decode_record, encode_record, fence_record, RECORD_FORMAT};

/// The epoch the records of these tests are written at.
const EPOCH: Epoch = 5;

fn sk(key: &str, seq: u64, action: &str) -> StateKey {
    StateKey {
        key: key.into(),
        seq,
        action: action.into(),
    }
}

fn encode(key: &StateKey, state: &ActionState) -> LogRecord {
    let (mut k, mut v) = (Vec::new(), Vec::new());
    encode_record(key, state, EPOCH, &mut k, &mut v).expect("encodes");
    LogRecord {
        partition: 2,
        offset: 7,
        key: k,
        value: v,
    }
}

/// The decode error's reason, after checking it names the record's place.
fn reason(record: &LogRecord) -> String {
    match decode_entry(record) {
        Err(StoreError::Decode {
            partition,
            offset,
            reason,
        }) => {
            assert_eq!((partition, offset), (2, 7));
            reason
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
}

fn saved(function: &str, outcome: CallOutcome) -> CallResult {
    CallResult {
        function: function.into(),
        args_digest: 0x0102_0304_0506_0708,
        outcome,
    }
}

#[test]
fn a_record_has_exactly_the_documented_bytes() {
    let state = ActionState {
        call_results: vec![
            saved("f", CallOutcome::Value(json!(5))),
            saved("g", CallOutcome::Error("no".into())),
        ],
        completed: true,
        output: Some(json!("x")),
    };
    let r = encode(&sk("k", 3, "a"), &state);
    assert_eq!(RECORD_FORMAT, 2);
    assert_eq!(
        r.key,
        [2, 0, 1, 0, 0, 0, b'k', 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, b'a']
    );
    let digest = [8, 7, 6, 5, 4, 3, 2, 1];
    let mut value = vec![2, 5, 0, 0, 0, 0, 0, 0, 0, 0b11, 2, 0, 0, 0];
    value.extend([1, 0, 0, 0, b'f']);
    value.extend(digest);
    value.extend([0, 1, 0, 0, 0, b'5']);
    value.extend([1, 0, 0, 0, b'g']);
    value.extend(digest);
    value.extend([1, 2, 0, 0, 0, b'n', b'o']);
    value.extend([3, 0, 0, 0, b'"', b'x', b'"']);
    assert_eq!(r.value, value);
}

#[test]
fn a_fence_record_has_exactly_the_documented_bytes() {
    let fence = fence_record(3, 0x0102);
    assert_eq!(fence.partition, 3);
    assert_eq!(fence.key, [2, 1]);
    assert_eq!(fence.value, [2, 2, 1, 0, 0, 0, 0, 0, 0]);
    let r = LogRecord {
        partition: 3,
        offset: 4,
        key: fence.key,
        value: fence.value,
    };
    assert_eq!(decode_entry(&r).unwrap(), Entry::Fence { epoch: 0x0102 });
    // Readers that look for action states pass it by.
    assert_eq!(decode_record(&r).unwrap(), None);
}

/// A record of format 1 (before records had an epoch), byte for byte as that format
/// wrote it, is read as a state of epoch 0.
#[test]
fn a_record_of_format_1_decodes_as_a_state_of_epoch_0() {
    let key = [
        1, 1, 0, 0, 0, b'k', 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, b'a',
    ];
    let mut value = vec![1, 0b11, 1, 0, 0, 0];
    value.extend([1, 0, 0, 0, b'f']);
    value.extend([8, 7, 6, 5, 4, 3, 2, 1]);
    value.extend([0, 1, 0, 0, 0, b'5']);
    value.extend([3, 0, 0, 0, b'"', b'x', b'"']);
    let r = LogRecord {
        partition: 2,
        offset: 7,
        key: key.to_vec(),
        value,
    };
    let state = ActionState {
        call_results: vec![saved("f", CallOutcome::Value(json!(5)))],
        completed: true,
        output: Some(json!("x")),
    };
    assert_eq!(
        decode_entry(&r).unwrap(),
        Entry::State {
            key: sk("k", 3, "a"),
            state,
            epoch: 0
        }
    );
    // The formats of key and value must agree.
    let mut mixed = r.clone();
    mixed.value[0] = 2;
    assert_eq!(
        reason(&mixed),
        "value: record format 2 behind a key of format 1"
    );
}

#[test]
fn a_truncated_epoch_or_an_unknown_kind_is_a_named_error() {
    let full = encode(&sk("k", 0, "a"), &ActionState::default());
    let mut r = full.clone();
    r.value.truncate(4);
    assert_eq!(reason(&r), "value: truncated: epoch needs 8 bytes, 3 left");
    let mut r = full.clone();
    r.key[1] = 7;
    assert_eq!(reason(&r), "key: unknown record kind 7");
    let fence = fence_record(2, 9);
    let at = |key: &[u8], value: &[u8]| LogRecord {
        partition: 2,
        offset: 7,
        key: key.to_vec(),
        value: value.to_vec(),
    };
    assert_eq!(
        reason(&at(&fence.key, &fence.value[..5])),
        "value: truncated: epoch needs 8 bytes, 4 left"
    );
    assert_eq!(
        reason(&at(&[2], &fence.value)),
        "key: truncated: kind needs 1 bytes, 0 left"
    );
    assert_eq!(
        reason(&at(&[2, 1, 0], &fence.value)),
        "key: 1 bytes after the end"
    );
    assert_eq!(
        reason(&at(&fence.key, &[fence.value.as_slice(), &[0]].concat())),
        "value: 1 bytes after the end"
    );
    // A fence's key before a state's value: the state's fields are bytes after the end.
    assert!(reason(&at(&fence.key, &full.value)).starts_with("value: "));
    assert_eq!(
        reason(&at(&fence.key, &[1])),
        "value: record format 1 behind a key of format 2"
    );
}

#[test]
fn every_field_and_variant_round_trips() {
    let values = [
        json!(null),
        json!(true),
        json!(-12),
        json!(u64::MAX),
        json!(0.1),
        json!("tab\t\"quoted\" é"),
        json!([1, [2, {"b": 1, "a": [null]}]]),
        json!({}),
    ];
    let mut states = vec![ActionState::default()];
    for (completed, output) in [
        (false, None),
        (true, None),
        (false, Some(json!(1))),
        (true, Some(json!({"k": "v"}))),
    ] {
        states.push(ActionState {
            call_results: values
                .iter()
                .map(|v| saved("fn", CallOutcome::Value(v.clone())))
                .chain([saved("", CallOutcome::Error(String::new()))])
                .chain([saved("ünï", CallOutcome::Error("boom ✗".into()))])
                .collect(),
            completed,
            output,
        });
    }
    for key in [
        sk("", 0, ""),
        sk("user-1", u64::MAX, "enrich"),
        sk("κλειδί", 9, "ação"),
    ] {
        for state in &states {
            let decoded = decode_entry(&encode(&key, state)).expect("decodes");
            let want = Entry::State {
                key: key.clone(),
                state: state.clone(),
                epoch: EPOCH,
            };
            assert_eq!(decoded, want);
        }
    }
}

#[test]
fn a_json_record_of_the_earlier_format_is_refused_by_name() {
    let r = LogRecord {
        partition: 2,
        offset: 7,
        key: br#"{"key":"k","seq":0,"action":"a"}"#.to_vec(),
        value: br#"{"call_results":[],"completed":false,"output":null}"#.to_vec(),
    };
    assert_eq!(reason(&r), "key: unknown record format 123");
    let mut r = encode(&sk("k", 0, "a"), &ActionState::default());
    r.value[0] = b'{';
    assert_eq!(reason(&r), "value: unknown record format 123");
}

#[test]
fn every_truncation_is_a_named_error() {
    let state = ActionState {
        call_results: vec![
            saved("f", CallOutcome::Value(json!([1, 2]))),
            saved("g", CallOutcome::Error("e".into())),
        ],
        completed: true,
        output: Some(json!({"a": 1})),
    };
    let full = encode(&sk("key", 1, "act"), &state);
    for n in 0..full.key.len() {
        let mut r = full.clone();
        r.key.truncate(n);
        let why = reason(&r);
        assert!(why.starts_with("key: truncated: "), "{n}: {why}");
    }
    for n in 0..full.value.len() {
        let mut r = full.clone();
        r.value.truncate(n);
        let why = reason(&r);
        // A cut inside a value's JSON text is caught by its length, before parsing.
        assert!(why.starts_with("value: truncated: "), "{n}: {why}");
    }
    let mut r = full.clone();
    r.value.truncate(full.value.len() - 8);
    assert_eq!(reason(&r), "value: truncated: output needs 4 bytes, 3 left");
}

#[test]
fn trailing_bytes_are_an_error() {
    let mut r = encode(&sk("k", 0, "a"), &ActionState::default());
    r.key.push(0);
    assert_eq!(reason(&r), "key: 1 bytes after the end");
    let mut r = encode(&sk("k", 0, "a"), &ActionState::default());
    r.value.extend([0, 0]);
    assert_eq!(reason(&r), "value: 2 bytes after the end");
}

#[test]
fn damaged_fields_are_named() {
    let one = ActionState {
        call_results: vec![saved("f", CallOutcome::Value(json!(5)))],
        completed: false,
        output: None,
    };
    let base = encode(&sk("k", 0, "a"), &one);

    // Key layout: format, kind, len 1, "k" (byte 6), seq, len 1, "a" (byte 19).
    let mut r = base.clone();
    r.key[6] = 0xff;
    assert!(reason(&r).starts_with("key: input key is not UTF-8"));
    let mut r = base.clone();
    r.key[19] = 0xff;
    assert!(reason(&r).starts_with("key: action name is not UTF-8"));

    // Value layout: format, epoch, flags (byte 9), count, len 1, "f" (byte 18), digest,
    // outcome tag (byte 27), len 1, "5" (byte 32).
    let mut r = base.clone();
    r.value[9] = 0b100;
    assert_eq!(reason(&r), "value: unknown flags 0b100");
    let mut r = base.clone();
    r.value[18] = 0xff;
    assert!(reason(&r).starts_with("value: function id is not UTF-8"));
    let mut r = base.clone();
    r.value[27] = 2;
    assert_eq!(reason(&r), "value: unknown outcome tag 2");
    let mut r = base.clone();
    r.value[32] = b'}';
    assert!(
        reason(&r).starts_with("value: call value: "),
        "{}",
        reason(&r)
    );
    let mut r = base.clone();
    r.value[27] = 1;
    r.value[32] = 0xff;
    assert!(reason(&r).starts_with("value: call error is not UTF-8"));
    // A bad output's JSON text.
    let mut r = base.clone();
    r.value[9] = 0b10;
    r.value.extend([1, 0, 0, 0, b'?']);
    assert!(reason(&r).starts_with("value: output: "), "{}", reason(&r));
    // A damaged count claims four billion results: an error, not an allocation.
    let mut r = base.clone();
    r.value[10..14].copy_from_slice(&u32::MAX.to_le_bytes());
    r.value.truncate(14);
    assert_eq!(
        reason(&r),
        "value: truncated: function id needs 4 bytes, 0 left"
    );
}

#[test]
fn a_damaged_record_in_the_log_fails_the_rebuild_with_its_place() {
    let store = ActionStateStore::new(1);
    let put = store
        .encode_put(&sk("k", 0, "a"), &ActionState::default())
        .expect("encode");
    let mut rebuild = Rebuild::new(
        &RecoveryMarker::unfenced(vec![0]),
        Default::default(),
        Ownership::All,
        1,
    )
    .expect("a marker without fences");
    let record = |offset, key: &[u8], value: &[u8]| LogRecord {
        partition: 0,
        offset,
        key: key.to_vec(),
        value: value.to_vec(),
    };
    rebuild
        .feed(&record(0, &put.key, &put.value))
        .expect("a good record");
    // A key cut after its format byte at offset 1.
    match rebuild.feed(&record(1, b"\x01", b"\x01\x00")) {
        Err(StoreError::Decode {
            partition: 0,
            offset: 1,
            reason,
        }) => assert_eq!(reason, "key: truncated: input key needs 4 bytes, 0 left"),
        other => panic!("expected a decode error at offset 1, got {other:?}"),
    }
    // The refused record moved nothing: offset 1 is still the one expected, and the
    // rebuild ends with what the good records hold.
    rebuild
        .feed(&record(1, &put.key, &put.value))
        .expect("the intact record at the refused one's offset");
    let (store, report) = rebuild.finish(&[2]).expect("read to the end");
    assert_eq!((report.records_scanned, store.cached_len()), (2, 1));
}

/// FNV-1a over bytes, written out here as the reference for [`args_digest`].
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[test]
fn the_argument_digest_is_fnv1a_over_the_compact_json_text() {
    for v in [
        json!(null),
        json!([1, 0]),
        json!({"b": [1.5, "x\n"], "a": {"z": null}}),
    ] {
        assert_eq!(args_digest(&v), fnv1a(v.to_string().as_bytes()), "{v}");
    }
    // Pinned: `[1,0]`, the second call's arguments of a chain on input 1.
    assert_eq!(args_digest(&json!([1, 0])), fnv1a(b"[1,0]"));
    assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
}

fn datum() -> impl Strategy<Value = Datum> {
    let leaf = prop_oneof![
        Just(Datum::Null),
        any::<bool>().prop_map(Datum::from),
        any::<i64>().prop_map(Datum::from),
        any::<u64>().prop_map(Datum::from),
        "\\PC{0,8}".prop_map(Datum::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Datum::from),
            prop::collection::btree_map("[a-z]{0,3}", inner, 0..4)
                .prop_map(|m| Datum::Object(m.into_iter().collect())),
        ]
    })
}

fn state() -> impl Strategy<Value = ActionState> {
    let outcome = prop_oneof![
        datum().prop_map(CallOutcome::Value),
        "\\PC{0,8}".prop_map(CallOutcome::Error),
    ];
    let result =
        ("\\PC{0,6}", any::<u64>(), outcome).prop_map(|(function, args_digest, outcome)| {
            CallResult {
                function,
                args_digest,
                outcome,
            }
        });
    (
        prop::collection::vec(result, 0..4),
        any::<bool>(),
        prop::option::of(datum()),
    )
        .prop_map(|(call_results, completed, output)| ActionState {
            call_results,
            completed,
            output,
        })
}

proptest! {
    #[test]
    fn random_states_round_trip(key in "\\PC{0,8}", seq in any::<u64>(), action in "\\PC{0,8}", s in state()) {
        let k = StateKey { key, seq, action };
        let decoded = decode_record(&encode(&k, &s)).expect("decodes");
        prop_assert_eq!(decoded, Some((k, s)));
    }

    #[test]
    fn random_damage_never_panics(s in state(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut r = encode(&sk("k", 1, "a"), &s);
        let i = at.index(r.value.len());
        r.value[i] = byte;
        // Either a valid state or a decode error; reaching here means no panic.
        if let Err(e) = decode_record(&r) {
            prop_assert!(matches!(e, StoreError::Decode { .. }), "{:?}", e);
        }
    }
}
