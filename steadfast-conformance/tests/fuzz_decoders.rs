//! Property-based fuzzing of the trace decoders (our JSON and ITF): valid trace files
//! mutated (bytes flipped, cut short, spliced with another trace, runs of random bytes)
//! and plain random bytes are parsed and, where they parse, replayed against the
//! runtime. Nothing may panic; every refusal is a typed `TraceError`.
//!
//! CI runs a few thousand cases; `STEADFAST_FUZZ_CASES=1000000 cargo test --release -p
//! steadfast-conformance --test fuzz_decoders` is the soak run.

use proptest::prelude::*;
use proptest::test_runner::Config;
use steadfast_conformance::leadership::LeadershipBinding;
use steadfast_conformance::trace;
use steadfast_model::leadership::Leadership;
use steadfast_model::{Settings, Spec};

fn cases(default: u32) -> u32 {
    std::env::var("STEADFAST_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A few valid trace files of each format, as text.
fn seeds() -> Vec<String> {
    let m = Leadership::build(
        "fixed",
        &Settings::parse(Leadership::params(), &[]).unwrap(),
    )
    .unwrap();
    let set = trace::trace_set(&m);
    let mut out = Vec::new();
    for (init, actions) in set.iter().step_by(997).take(6) {
        let json = serde_json::to_value(trace::to_json(&m, *init, actions).unwrap()).unwrap();
        out.push(serde_json::to_string(&json).unwrap());
        let itf = trace::to_itf(&m, *init, actions).unwrap();
        out.push(serde_json::to_string(&itf).unwrap());
    }
    out
}

/// Parses `bytes` as a trace file and replays it if it parses: Ok or a typed error.
fn decode_and_replay(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Ok(loaded) = trace::parse("fuzz", text) {
        if loaded.model == "leadership" {
            // A replay error is a `TraceError`; a divergence is a report. Either is fine.
            let _ = trace::replay::<LeadershipBinding>(&loaded);
        }
    }
}

#[derive(Clone, Debug)]
enum Damage {
    Flip {
        at: prop::sample::Index,
        byte: u8,
    },
    Cut {
        at: prop::sample::Index,
    },
    Splice {
        at: prop::sample::Index,
        other: usize,
        from: prop::sample::Index,
    },
    Noise {
        at: prop::sample::Index,
        bytes: Vec<u8>,
    },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<prop::sample::Index>(), any::<u8>())
            .prop_map(|(at, byte)| Damage::Flip { at, byte }),
        any::<prop::sample::Index>().prop_map(|at| Damage::Cut { at }),
        (
            any::<prop::sample::Index>(),
            0..12usize,
            any::<prop::sample::Index>()
        )
            .prop_map(|(at, other, from)| Damage::Splice { at, other, from }),
        (
            any::<prop::sample::Index>(),
            prop::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(at, bytes)| Damage::Noise { at, bytes }),
    ]
}

fn apply(seeds: &[String], seed: usize, damages: &[Damage]) -> Vec<u8> {
    let mut bytes = seeds[seed % seeds.len()].as_bytes().to_vec();
    for d in damages {
        if bytes.is_empty() {
            break;
        }
        match d {
            Damage::Flip { at, byte } => {
                let i = at.index(bytes.len());
                bytes[i] = *byte;
            }
            Damage::Cut { at } => bytes.truncate(at.index(bytes.len())),
            Damage::Splice { at, other, from } => {
                let other = seeds[other % seeds.len()].as_bytes();
                let i = at.index(bytes.len());
                bytes.truncate(i);
                bytes.extend_from_slice(&other[from.index(other.len())..]);
            }
            Damage::Noise { at, bytes: noise } => {
                let i = at.index(bytes.len());
                bytes.splice(i..i, noise.iter().copied());
            }
        }
    }
    bytes
}

#[test]
fn mutated_trace_files_never_panic() {
    let seeds = seeds();
    proptest!(Config::with_cases(cases(2_000)), |(seed in 0..12usize, damages in prop::collection::vec(damage(), 1..4))| {
        decode_and_replay(&apply(&seeds, seed, &damages));
    });
}

#[test]
fn random_bytes_never_panic() {
    proptest!(Config::with_cases(cases(2_000)), |(bytes in prop::collection::vec(any::<u8>(), 0..256))| {
        decode_and_replay(&bytes);
    });
}
