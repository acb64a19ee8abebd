//! Conformance benchmarks: every transition of the fixed leadership model (FLINK-39704)
//! and of the fixed durable-actions model (flink-agents issue 1158, at the conformance
//! bounds of `steadfast-conformance/tests/durable.rs`) replayed on the runtime with the refusal
//! probes, reported as runtime steps per second; the same steps with nothing checked
//! (`*_unchecked`), which is what a replay costs before its projections are built and
//! compared, so the floor under the checked figure; and the generation of each model's
//! transition-covering trace set, reported as traces per second.

use criterion::{criterion_main, Criterion, Throughput};
use stateright::Model;
use steadfast_conformance::cover::{cover, FastMap, HashBytes};
use steadfast_conformance::durable::DurableBinding;
use steadfast_conformance::leadership::LeadershipBinding;
use steadfast_conformance::trace::trace_set;
use steadfast_conformance::walk::successors;
use steadfast_conformance::Binding;
use steadfast_model::durable::Durable;
use steadfast_model::leadership::Leadership;
use steadfast_model::{Settings, Spec};

fn leadership() -> Leadership {
    Leadership::build("fixed", &Settings::defaults(Leadership::params())).expect("defaults")
}

/// The durable conformance bounds: the defaults with one input per key and offsets as
/// log positions.
fn durable() -> Durable {
    let settings = Settings::parse(
        Durable::params(),
        &[("inputs", "1"), ("compact-offsets", "false")],
    )
    .expect("conformance bounds");
    Durable::build("fixed", &settings).expect("fixed design")
}

/// The runtime's side of [`cover`] without its checks: the same breadth-first walk of
/// the reachable graph (states told apart as `cover` does, by the bytes their `Hash`
/// writes), each transition taken on a clone of its source's runtime (the last one on
/// that runtime itself) and each probe on a clone, but no projection built or compared.
/// A probe the runtime accepts, or a transition it refuses, stops the bench: the walk
/// must take the steps `cover` takes. Returns the steps taken.
fn steps_unchecked<B: Binding>(model: &B::Model) -> usize {
    let mut seen: FastMap<Box<[u8]>, ()> = FastMap::default();
    let mut bytes = HashBytes::default();
    let mut level = Vec::new();
    for init in model.init_states() {
        let key = bytes.of(&init);
        if !seen.contains_key(key) {
            seen.insert(key.into(), ());
            let runtime = B::start(model, &init);
            level.push((init, runtime));
        }
    }
    let mut steps = 0;
    while !level.is_empty() {
        let mut next_level = Vec::new();
        for (state, runtime) in level {
            for probe in B::probes(model, &state) {
                let mut probed = runtime.clone();
                assert!(
                    B::step(model, &mut probed, &state, &probe).is_err(),
                    "the runtime refuses {probe:?}"
                );
                steps += 1;
            }
            let moves = successors(model, &state);
            let last = moves.len();
            let mut source = Some(runtime);
            for (i, (action, next)) in moves.into_iter().enumerate() {
                let mut runtime = if i + 1 == last {
                    source.take().expect("the source runtime is taken once")
                } else {
                    source.as_ref().expect("the source runtime").clone()
                };
                if let Err(e) = B::step(model, &mut runtime, &state, &action) {
                    panic!("the runtime refuses {action:?}: {e}");
                }
                steps += 1;
                let key = bytes.of(&next);
                if !seen.contains_key(key) {
                    seen.insert(key.into(), ());
                    next_level.push((next, runtime));
                }
            }
        }
        level = next_level;
    }
    steps
}

fn replay(c: &mut Criterion) {
    let mut g = c.benchmark_group("conformance");
    g.sample_size(10);
    let model = leadership();
    let steps = cover::<LeadershipBinding>(&model)
        .expect("the runtime conforms")
        .steps;
    g.throughput(Throughput::Elements(steps as u64));
    g.bench_function("leadership_fixed_all_transitions", |b| {
        b.iter(|| cover::<LeadershipBinding>(&model).expect("conforms").steps)
    });
    assert_eq!(steps_unchecked::<LeadershipBinding>(&model), steps);
    g.bench_function("leadership_fixed_all_transitions_unchecked", |b| {
        b.iter(|| steps_unchecked::<LeadershipBinding>(&model))
    });
    let model = durable();
    let steps = cover::<DurableBinding>(&model)
        .expect("the runtime conforms")
        .steps;
    g.throughput(Throughput::Elements(steps as u64));
    g.bench_function("durable_fixed_all_transitions", |b| {
        b.iter(|| cover::<DurableBinding>(&model).expect("conforms").steps)
    });
    assert_eq!(steps_unchecked::<DurableBinding>(&model), steps);
    g.bench_function("durable_fixed_all_transitions_unchecked", |b| {
        b.iter(|| steps_unchecked::<DurableBinding>(&model))
    });
    g.finish();
}

fn traces(c: &mut Criterion) {
    let mut g = c.benchmark_group("trace_set");
    g.sample_size(10);
    let model = leadership();
    g.throughput(Throughput::Elements(trace_set(&model).len() as u64));
    g.bench_function("leadership_fixed", |b| b.iter(|| trace_set(&model).len()));
    let model = durable();
    g.throughput(Throughput::Elements(trace_set(&model).len() as u64));
    g.bench_function("durable_fixed", |b| b.iter(|| trace_set(&model).len()));
    g.finish();
}

/// The benchmark group; criterion's macro writes its function bare.
mod group {
    #![allow(missing_docs, unreachable_pub)]
    use criterion::criterion_group;

    criterion_group!(benches, super::replay, super::traces);
}
criterion_main!(group::benches);
