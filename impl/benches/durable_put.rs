//! Put cost of the action state store (flink-agents issue 1158): on the in-memory
//! log, on the file log with an fsync per flush and with group commit, the disk's
//! raw write+fsync rate for comparison, and the put order on a log whose
//! acknowledgements wait out a linger interval (await-then-flush against
//! flush-then-await; the seed measured 6.88 ms against 0.84 ms per put with
//! kafka-clients' 5 ms default linger).

use std::fs::OpenOptions;
use std::io::Write;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;
use steadfast::durable::store::{decode_record, encode_record};
use steadfast::durable::{
    args_digest, ActionState, ActionStateStore, CallOutcome, CallResult, Cancellation, FileLog,
    FileLogOptions, Log, LogRecord, MemoryLog, PendingAck, PutOrder, StateKey,
};

fn state() -> ActionState {
    ActionState {
        call_results: vec![CallResult {
            function: "lookup".into(),
            args_digest: args_digest(&json!({"city": "Berlin"})),
            outcome: CallOutcome::Value(json!(70)),
        }],
        completed: false,
        output: None,
    }
}

fn key(i: u64) -> StateKey {
    StateKey {
        key: format!("user-{}", i % 64),
        seq: i,
        action: "enrich".into(),
    }
}

fn bench_dir() -> tempfile::TempDir {
    // On the target directory's disk, not a RAM-backed /tmp.
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir")
}

fn put_memory(c: &mut Criterion) {
    let mut g = c.benchmark_group("put");
    g.throughput(Throughput::Elements(1));
    let s = state();
    g.bench_function("memory_log", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                // A fresh log per chunk keeps memory bounded.
                let mut store = ActionStateStore::new(MemoryLog::new(4));
                let n = (iters - done).min(50_000);
                // Keys and states are built outside the timed loop.
                let work: Vec<(StateKey, ActionState)> =
                    (0..n).map(|i| (key(i), s.clone())).collect();
                let start = Instant::now();
                for (k, st) in work {
                    store.put(&k, st).expect("put");
                }
                total += start.elapsed();
                done += n;
            }
            total
        })
    });
    // The parts of a put alone, to see how much of it each is: the record encoding,
    // its decoding (a rebuild's cost per record), and the in-memory log's send, flush
    // and acknowledgement of an encoded record.
    let k = key(1);
    let mut kb = Vec::new();
    let mut vb = Vec::new();
    g.bench_function("encode_only", |b| {
        b.iter(|| {
            encode_record(&k, &s, &mut kb, &mut vb).expect("encode");
            kb.len() + vb.len()
        })
    });
    let record = LogRecord {
        partition: 0,
        offset: 0,
        key: kb.clone(),
        value: vb.clone(),
    };
    g.bench_function("decode_only", |b| {
        b.iter(|| decode_record(&record).expect("decode"))
    });
    g.bench_function("memory_log_append_only", |b| {
        let cancel = Cancellation::new();
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                let mut log = MemoryLog::new(4);
                let n = (iters - done).min(50_000);
                let start = Instant::now();
                for i in 0..n {
                    let mut ack = log.send((i % 4) as u32, &kb, &vb).expect("send");
                    log.flush().expect("flush");
                    ack.wait(&cancel).expect("ack");
                }
                total += start.elapsed();
                done += n;
            }
            total
        })
    });
    g.finish();
}

fn put_file(c: &mut Criterion) {
    let mut g = c.benchmark_group("put_file");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements(1));
    let s = state();
    let dir = bench_dir();
    let mut store = ActionStateStore::new(
        FileLog::open(
            dir.path().join("store"),
            FileLogOptions {
                partitions: Some(4),
                ..FileLogOptions::default()
            },
        )
        .expect("open"),
    );
    let mut i = 0u64;
    g.bench_function("fsync_per_put", |b| {
        b.iter(|| {
            i += 1;
            store.put(&key(i), s.clone()).expect("put")
        })
    });

    // Group commit: 16 sends, one flush (one fsync), then every acknowledgement.
    const GROUP: u64 = 16;
    let mut log = FileLog::open(
        dir.path().join("group"),
        FileLogOptions {
            partitions: Some(1),
            ..FileLogOptions::default()
        },
    )
    .expect("open");
    let (mut kb, mut value) = (Vec::new(), Vec::new());
    encode_record(&key(0), &s, &mut kb, &mut value).expect("encode");
    g.throughput(Throughput::Elements(GROUP));
    g.bench_function("group_commit_16", |b| {
        b.iter(|| {
            let mut acks: Vec<_> = (0..GROUP)
                .map(|_| log.send(0, b"k", &value).expect("send"))
                .collect();
            log.flush().expect("flush");
            for ack in &mut acks {
                ack.wait(&Cancellation::new()).expect("ack");
            }
        })
    });
    g.finish();
}

fn raw_fsync(c: &mut Criterion) {
    let mut g = c.benchmark_group("disk");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements(1));
    let dir = bench_dir();
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("raw"))
        .expect("open");
    let buf = [0x5au8; 160];
    g.bench_function("write_fsync_160b", |b| {
        b.iter(|| {
            f.write_all(&buf).expect("write");
            f.sync_data().expect("fsync");
        })
    });
    g.finish();
}

fn put_order(c: &mut Criterion) {
    let mut g = c.benchmark_group("put_order_linger_5ms");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(200));
    g.measurement_time(Duration::from_secs(2));
    g.throughput(Throughput::Elements(1));
    let s = state();
    for (name, order) in [
        ("flush_then_await", PutOrder::FlushThenAwait),
        ("await_then_flush", PutOrder::AwaitThenFlush),
    ] {
        let mut store = ActionStateStore::new(MemoryLog::with_linger(1, Duration::from_millis(5)));
        store.set_put_order(order);
        let mut i = 0u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                store.put(&key(i), s.clone()).expect("put")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, put_memory, put_file, raw_fsync, put_order);
criterion_main!(benches);
