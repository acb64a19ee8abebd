//! Leadership benchmarks: checking the fixed model at default bounds, and the runtime
//! runner handling one whole lifecycle (grant, queries, process start, terminal result,
//! forward, close, service termination) event by event.

use criterion::{criterion_main, BatchSize, Criterion, Throughput};
use steadfast::leadership::{Event, JobId, JobStatus, ProcessResult, Runner, Session};
use steadfast_model::check::{check, CheckOptions, Strategy, Traces};
use steadfast_model::leadership::Leadership;
use steadfast_model::{Settings, Spec};

fn checking(c: &mut Criterion) {
    let mut g = c.benchmark_group("leadership_check");
    g.sample_size(10);
    for design in Leadership::designs() {
        let model =
            Leadership::build(design, &Settings::defaults(Leadership::params())).expect("defaults");
        let states = check(
            &model,
            &CheckOptions {
                traces: Traces::None,
                ..CheckOptions::default()
            },
        )
        .unique_states;
        g.throughput(Throughput::Elements(states as u64));
        for strategy in [Strategy::Bfs, Strategy::Dfs] {
            let options = CheckOptions {
                traces: Traces::None,
                strategy,
                ..CheckOptions::default()
            };
            g.bench_function(format!("{design}/{strategy:?}/1-thread"), |b| {
                b.iter(|| check(&model, &options).unique_states)
            });
        }
    }
    g.finish();
}

/// One lifecycle of a runner, as the events a driver would feed it.
fn lifecycle() -> Vec<Event> {
    let s = Session(1);
    vec![
        Event::LeadershipGranted { session: s },
        Event::JobResultStoreAnswered { has_entry: false },
        Event::LeadershipConfirmed {
            session: s,
            held: true,
        },
        Event::ProcessResultCompleted {
            session: s,
            value: ProcessResult::Terminal(JobStatus::Finished),
        },
        Event::ForwardCallback { session: s },
        Event::LeadershipConfirmed {
            session: s,
            held: true,
        },
        Event::CloseRequested,
        Event::ProcessServiceTerminated { session: s },
    ]
}

fn runtime(c: &mut Criterion) {
    let events = lifecycle();
    // The sequence must be accepted whole, or the figure would time error paths.
    let mut probe = Runner::new(JobId(1));
    for e in &events {
        probe
            .handle(*e)
            .expect("the lifecycle is a valid event sequence");
    }
    let mut g = c.benchmark_group("leadership_runtime");
    g.throughput(Throughput::Elements(events.len() as u64));
    g.bench_function("runner_lifecycle_events", |b| {
        b.iter_batched(
            || (Runner::new(JobId(1)), events.clone()),
            |(mut runner, events)| {
                for e in events {
                    let _ = runner.handle(e);
                }
                runner
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// The benchmark group; criterion's macro writes its function bare.
mod group {
    #![allow(missing_docs, unreachable_pub)]
    use criterion::criterion_group;

    criterion_group!(benches, super::checking, super::runtime);
}
criterion_main!(group::benches);
