//! Conformance benchmark: every transition of the fixed leadership model replayed on the
//! runtime (with the refusal probes), reported as runtime steps per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use steadfast_conformance::cover::cover;
use steadfast_conformance::leadership::LeadershipBinding;
use steadfast_model::leadership::Leadership;
use steadfast_model::{Settings, Spec};

fn replay(c: &mut Criterion) {
    let model =
        Leadership::build("fixed", &Settings::defaults(Leadership::params())).expect("defaults");
    let steps = cover::<LeadershipBinding>(&model)
        .expect("the runtime conforms")
        .steps;
    let mut g = c.benchmark_group("conformance");
    g.sample_size(20);
    g.throughput(Throughput::Elements(steps as u64));
    g.bench_function("leadership_fixed_all_transitions", |b| {
        b.iter(|| cover::<LeadershipBinding>(&model).expect("conforms").steps)
    });
    g.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
