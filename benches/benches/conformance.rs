//! Conformance benchmarks: every transition of the fixed leadership model (FLINK-39704)
//! and of the fixed durable-actions model (flink-agents issue 1158, at the conformance
//! bounds of `conformance/tests/durable.rs`) replayed on the runtime with the refusal
//! probes, reported as runtime steps per second; and the generation of each model's
//! transition-covering trace set, reported as traces per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use steadfast_conformance::cover::cover;
use steadfast_conformance::durable::DurableBinding;
use steadfast_conformance::leadership::LeadershipBinding;
use steadfast_conformance::trace::trace_set;
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
    let model = durable();
    let steps = cover::<DurableBinding>(&model)
        .expect("the runtime conforms")
        .steps;
    g.throughput(Throughput::Elements(steps as u64));
    g.bench_function("durable_fixed_all_transitions", |b| {
        b.iter(|| cover::<DurableBinding>(&model).expect("conforms").steps)
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

criterion_group!(benches, replay, traces);
criterion_main!(benches);
