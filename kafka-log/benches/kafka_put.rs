//! Puts through the blocking durable driver on the Kafka log (tansu started on loopback,
//! storing in SQLite) beside the embedded file log (fsync per flush), with one key in
//! flight (every put waits for its own acknowledgement) and with sixteen (the puts of
//! all sixteen keys share one flush: group commit). One input makes two puts: its call's
//! result and its completion.
//!
//! `cargo bench -p steadfast-kafka --bench kafka_put` (needs `tansu`, as the tests do).

#[path = "../tests/broker/mod.rs"]
mod broker;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;
use steadfast::durable::{ActionDef, CallChain, CallOutcome, Driver, FileLog, FileLogOptions, Log};
use steadfast_kafka::KafkaLog;

const KEYS: u64 = 16;

fn driver<L: Log + 'static>(reopen: steadfast::durable::Reopen<L>) -> Driver<L> {
    Driver::new(
        vec![ActionDef::new("enrich", CallChain::new(["lookup"]))],
        reopen,
        Box::new(|_, _, _| CallOutcome::Value(json!(70))),
    )
    .expect("driver")
}

fn run<L: Log>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    one: &mut Driver<L>,
    group: &mut Driver<L>,
) {
    let mut seq = 0u64;
    g.throughput(Throughput::Elements(2));
    g.bench_function(format!("{name}_1_key"), |b| {
        b.iter(|| {
            seq += 1;
            one.input("user-0", json!(seq)).expect("input");
            one.run_until_idle().expect("run");
        })
    });
    g.throughput(Throughput::Elements(2 * KEYS));
    g.bench_function(format!("{name}_16_keys"), |b| {
        b.iter(|| {
            seq += 1;
            for k in 0..KEYS {
                group.input(format!("user-{k}"), json!(seq)).expect("input");
            }
            group.run_until_idle_grouped().expect("run");
        })
    });
    // Completed inputs are pruned at a checkpoint: memory stays bounded between runs.
    for d in [one, group] {
        let id = d.checkpoint().expect("checkpoint");
        d.complete_checkpoint(id).expect("complete");
    }
}

fn puts(c: &mut Criterion) {
    let mut g = c.benchmark_group("put_driver");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));

    let broker = broker::Broker::start();
    let mut drivers = Vec::new();
    for topic in ["bench-one", "bench-group"] {
        broker.create_topic(topic, 4);
        let options = broker.options(topic);
        drivers.push(driver(Box::new(move || KafkaLog::open(options.clone()))));
    }
    let (mut one, mut group) = (drivers.remove(0), drivers.remove(0));
    run(&mut g, "kafka", &mut one, &mut group);

    // On the target directory's disk, not a RAM-backed /tmp.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let file = |sub: &str| -> Driver<FileLog> {
        let path = dir.path().join(sub);
        driver(Box::new(move || {
            FileLog::open(
                &path,
                FileLogOptions {
                    partitions: Some(4),
                    ..FileLogOptions::default()
                },
            )
        }))
    };
    let (mut one, mut group) = (file("one"), file("group"));
    run(&mut g, "file", &mut one, &mut group);
    g.finish();
}

criterion_group!(benches, puts);
criterion_main!(benches);
