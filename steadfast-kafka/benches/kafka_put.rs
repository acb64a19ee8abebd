//! Puts through the blocking durable driver on the Kafka log (tansu started on loopback,
//! storing in SQLite) beside the embedded file log (fsync per flush), with one key in
//! flight (every put waits for its own acknowledgement) and with sixteen (the puts of
//! all sixteen keys share one flush: group commit). One input makes two puts: its call's
//! result and its completion.
//!
//! The cost of epoch fencing beside them: a restore from a checkpoint that holds sixteen
//! actions between their calls, on four partitions, with fencing (one fence appended to
//! every partition and acknowledged before the replay) and without (a test-only switch).
//! Every fenced restore leaves its four fences, which later restores replay too. Puts
//! carry their epoch either way, so they have nothing to compare against. Each restore
//! opens a new producer, and librdkafka's idempotent producer asks for its producer id
//! on a 500 ms timer from its creation: whichever append comes first waits for it, the
//! fences or, unfenced, the first put. So the first append of a fresh producer and the
//! fences of a warm one are measured too.
//!
//! `cargo bench -p steadfast-kafka --bench kafka_put` (needs the test broker that `scripts/test` builds, as the tests do).

#[path = "../tests/broker/mod.rs"]
mod broker;

use std::time::Duration;

use criterion::{criterion_main, Criterion, Throughput};
use serde_json::json;
use steadfast::durable::{ActionDef, CallChain, CallOutcome};
use steadfast_kafka::KafkaLog;
use steadfast_log::{
    append_fences, Cancellation, Driver, FileLog, FileLogOptions, Log, PendingAck, Reopen,
};

const KEYS: u64 = 16;
/// Partitions of every topic and file log.
const PARTITIONS: u32 = 4;

fn driver<L: Log + 'static>(reopen: Reopen<L>) -> Driver<L> {
    chain_driver(reopen, &["lookup"])
}

fn chain_driver<L: Log + 'static>(reopen: Reopen<L>, calls: &[&str]) -> Driver<L> {
    Driver::new(
        vec![ActionDef::new("enrich", CallChain::new(calls.to_vec()))],
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
        broker.create_topic(topic, PARTITIONS);
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
                    partitions: Some(PARTITIONS),
                    ..FileLogOptions::default()
                },
            )
        }))
    };
    let (mut one, mut group) = (file("one"), file("group"));
    run(&mut g, "file", &mut one, &mut group);
    g.finish();
}

/// A driver whose completed checkpoint holds `KEYS` actions between their two calls
/// (every first call saved, group-committed), restoring with or without fences.
fn queued<L: Log + 'static>(reopen: Reopen<L>, fencing: bool) -> Driver<L> {
    let mut d = chain_driver(reopen, &["lookup", "publish"]);
    d.set_fencing(fencing);
    for k in 0..KEYS {
        d.input(format!("user-{k}"), json!(k)).expect("input");
    }
    for _ in 0..KEYS {
        d.run_supplier(0).expect("lookup");
    }
    d.deliver_all().expect("deliver");
    let id = d.checkpoint().expect("checkpoint");
    d.complete_checkpoint(id).expect("complete");
    d
}

fn restore_each<L: Log>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    d: &mut Driver<L>,
) {
    g.bench_function(name, |b| {
        b.iter(|| {
            let report = d.restore().expect("restore").expect("from the checkpoint");
            assert_eq!(report.states_loaded, KEYS);
        })
    });
}

fn restores(c: &mut Criterion) {
    let mut g = c.benchmark_group("restore_driver");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));

    let broker = broker::Broker::start();
    for fencing in [true, false] {
        let topic = format!("restore-{fencing}");
        broker.create_topic(&topic, PARTITIONS);
        let options = broker.options(&topic);
        let mut d = queued(Box::new(move || KafkaLog::open(options.clone())), fencing);
        restore_each(&mut g, &format!("kafka_fencing_{fencing}"), &mut d);
    }
    broker.create_topic("appends", PARTITIONS);
    g.bench_function("kafka_fresh_producer_first_put", |b| {
        b.iter(|| {
            let mut log = broker.open("appends");
            let mut ack = log.send(0, b"k", b"v").expect("send");
            log.flush().expect("flush");
            ack.wait(&Cancellation::new()).expect("ack");
        })
    });
    let mut warm = broker.open("appends");
    let mut epoch = 0;
    g.bench_function("kafka_warm_producer_fences", |b| {
        b.iter(|| {
            epoch += 1;
            append_fences(&mut warm, epoch, &Cancellation::new()).expect("fences");
        })
    });
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    for fencing in [true, false] {
        let path = dir.path().join(format!("restore-{fencing}"));
        let options = FileLogOptions {
            partitions: Some(PARTITIONS),
            ..FileLogOptions::default()
        };
        let mut d = queued(
            Box::new(move || FileLog::open(&path, options.clone())),
            fencing,
        );
        restore_each(&mut g, &format!("file_fencing_{fencing}"), &mut d);
    }
    g.finish();
}

/// The benchmark group; criterion's macro writes its function bare.
mod group {
    #![allow(missing_docs, unreachable_pub)]
    use criterion::criterion_group;

    criterion_group!(benches, super::puts, super::restores);
}
criterion_main!(group::benches);
