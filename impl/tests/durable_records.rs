//! The action state record format of the store (flink-agents issue 1158: one record
//! per put carries the whole action state, and a restore decodes it again): exact
//! bytes, round trips of every field and variant, and a named
//! [`StoreError::Decode`] for each kind of damage, never a panic.

use proptest::prelude::*;
use serde_json::json;
use steadfast::durable::store::{decode_record, encode_record, RECORD_FORMAT};
use steadfast::durable::{
    args_digest, ActionState, ActionStateStore, CallOutcome, CallResult, Datum, LogRecord,
    Ownership, Rebuild, RecoveryMarker, StateKey, StoreError,
};

fn sk(key: &str, seq: u64, action: &str) -> StateKey {
    StateKey {
        key: key.into(),
        seq,
        action: action.into(),
    }
}

fn encode(key: &StateKey, state: &ActionState) -> LogRecord {
    let (mut k, mut v) = (Vec::new(), Vec::new());
    encode_record(key, state, &mut k, &mut v).expect("encodes");
    LogRecord {
        partition: 2,
        offset: 7,
        key: k,
        value: v,
    }
}

/// The decode error's reason, after checking it names the record's place.
fn reason(record: &LogRecord) -> String {
    match decode_record(record) {
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
    assert_eq!(RECORD_FORMAT, 1);
    assert_eq!(
        r.key,
        [1, 1, 0, 0, 0, b'k', 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, b'a']
    );
    let digest = [8, 7, 6, 5, 4, 3, 2, 1];
    let mut value = vec![1, 0b11, 2, 0, 0, 0];
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
            let (k, s) = decode_record(&encode(&key, state)).expect("decodes");
            assert_eq!((&k, &s), (&key, state));
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

    // Key layout: format, len 1, "k" (byte 5), seq, len 1, "a" (byte 18).
    let mut r = base.clone();
    r.key[5] = 0xff;
    assert!(reason(&r).starts_with("key: input key is not UTF-8"));
    let mut r = base.clone();
    r.key[18] = 0xff;
    assert!(reason(&r).starts_with("key: action name is not UTF-8"));

    // Value layout: format, flags (byte 1), count, len 1, "f" (byte 10), digest,
    // outcome tag (byte 19), len 1, "5" (byte 24).
    let mut r = base.clone();
    r.value[1] = 0b100;
    assert_eq!(reason(&r), "value: unknown flags 0b100");
    let mut r = base.clone();
    r.value[10] = 0xff;
    assert!(reason(&r).starts_with("value: function id is not UTF-8"));
    let mut r = base.clone();
    r.value[19] = 2;
    assert_eq!(reason(&r), "value: unknown outcome tag 2");
    let mut r = base.clone();
    r.value[24] = b'}';
    assert!(
        reason(&r).starts_with("value: call value: "),
        "{}",
        reason(&r)
    );
    let mut r = base.clone();
    r.value[19] = 1;
    r.value[24] = 0xff;
    assert!(reason(&r).starts_with("value: call error is not UTF-8"));
    // A bad output's JSON text.
    let mut r = base.clone();
    r.value[1] = 0b10;
    r.value.extend([1, 0, 0, 0, b'?']);
    assert!(reason(&r).starts_with("value: output: "), "{}", reason(&r));
    // A damaged count claims four billion results: an error, not an allocation.
    let mut r = base.clone();
    r.value[2..6].copy_from_slice(&u32::MAX.to_le_bytes());
    r.value.truncate(6);
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
        &RecoveryMarker { offsets: vec![0] },
        Default::default(),
        Ownership::All,
    );
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
        prop_assert_eq!(decoded, (k, s));
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
