//! flink-agents issue 1158 across processes, on a real Kafka-protocol broker: a worker
//! process runs actions through the blocking `Driver` over a `KafkaLog`, taking a
//! checkpoint (kept in a file, as a job keeps its checkpoints outside the task) after
//! every second action's first call, so every checkpoint holds an action between its
//! calls. The
//! test kills it with SIGKILL while a call's supplier runs, starts a second worker that
//! restores from the last checkpoint file and finishes, and counts every supplier run
//! the workers wrote down: the call that was killed may run again (its record never
//! reached the broker), every other call ran exactly once, and every input's output
//! was emitted with the right value.
//!
//! Both workers append their production log (the operator's, store's and driver's
//! events, as JSON lines) to one file, the first behind a run header with the model's
//! bounds; the restarted worker starts its part with the crash of the first, which that
//! process could not log. `steadfast validate` must find the file a run of the fixed
//! durable model, and must reject it with the restart's reuse of a saved call rewritten
//! as a second run of its supplier.

mod broker;

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use broker::{append_line, write_atomically, Broker};
use serde_json::json;
use steadfast::durable::{partition_for, ActionDef, CallChain, CallOutcome, Checkpoint};
use steadfast_conformance::validate::{validate, Options, Verdict};
use steadfast_kafka::{KafkaLog, KafkaLogOptions};
use steadfast_log::Driver;

/// The worker's environment: broker, topic, state directory, and the call whose
/// supplier blocks until the process is killed (`key/seq/index`; none in the restart).
const ENV_BROKER: &str = "STEADFAST_KAFKA_WORKER_BROKER";
const ENV_TOPIC: &str = "STEADFAST_KAFKA_WORKER_TOPIC";
const ENV_DIR: &str = "STEADFAST_KAFKA_WORKER_DIR";
const ENV_BLOCK: &str = "STEADFAST_KAFKA_WORKER_BLOCK";

/// Hang guards, far above what each step takes.
const GUARD: Duration = Duration::from_secs(300);

/// The keys, in the model's order: the model writes its key `k` to partition
/// `k % PARTITIONS`, and these names hash to partitions 0, 1 and 0.
const KEYS: [&str; 3] = ["bob", "alice", "carol"];
/// Partitions of the topic.
const PARTITIONS: u32 = 2;
/// Inputs per key, durable calls per action.
const INPUTS_PER_KEY: usize = 2;
const CALLS: usize = 2;
/// A checkpoint after every second input's first call: inputs 1 and 3 in the first
/// worker (the process is killed in input 3's second call), 5 in the restarted one.
const CHECKPOINT_EVERY: usize = 2;

/// The source: three keys, two inputs each, in this order.
fn inputs() -> Vec<(String, i64)> {
    (0..KEYS.len() * INPUTS_PER_KEY)
        .map(|i| (KEYS[i % KEYS.len()].to_string(), 10 * (i as i64 + 1)))
        .collect()
}

/// Send this process's `tracing` events to `path` as JSON lines, appended, each written
/// whole as it is logged (no buffer a SIGKILL could lose).
fn log_to(path: &Path) {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("worker's production log");
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(Mutex::new(file))
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("one subscriber per process");
}

/// The run header the validator reads the model's bounds from.
fn log_run_header() {
    tracing::info!(
        component = "run",
        event = "start",
        model = "durable",
        keys = KEYS.len(),
        inputs = INPUTS_PER_KEY,
        actions = 1u8,
        calls = CALLS,
        partitions = PARTITIONS,
        crashes = 1u8,
        checkpoints = KEYS.len() * INPUTS_PER_KEY / CHECKPOINT_EVERY,
        concurrent_checkpoints = 1u8,
        send_failures = 0u8,
        // The driver's restore fences the log before it reads it.
        fencing = true,
        key_names = %KEYS.join(" "),
        action_names = "act",
    );
}

/// The value of call `index` for input `value`: what the supplier answers.
fn answer(value: i64, index: u64) -> i64 {
    value * 7 + index as i64
}

/// The worker process: started by `a_worker_killed_mid_call_restarts_without_repeating_acknowledged_calls`;
/// does nothing when run on its own (hence ignored in normal runs).
#[test]
#[ignore = "worker process of a_worker_killed_mid_call_restarts_without_repeating_acknowledged_calls"]
fn kafka_worker() {
    let (Ok(bootstrap), Ok(topic), Ok(dir)) = (
        std::env::var(ENV_BROKER),
        std::env::var(ENV_TOPIC),
        std::env::var(ENV_DIR),
    ) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let block = std::env::var(ENV_BLOCK).ok();
    let calls_path = dir.join("calls.log");
    let blocked_path = dir.join("blocked");
    let options = KafkaLogOptions::new(bootstrap, topic);
    // A log already there is the log of an earlier incarnation, which was killed.
    let run_log = dir.join("run.log");
    let restart = run_log.exists();
    log_to(&run_log);

    // Input i's value is 10 * (i + 1); call `index` of an input answers from it.
    let supplier_calls = calls_path.clone();
    let supplier = Box::new(
        move |call: &steadfast::durable::CallRef, _f: &str, args: &serde_json::Value| {
            let name = format!("{}/{}/{}", call.key, call.seq, call.index);
            append_line(&supplier_calls, &name);
            if block.as_deref() == Some(name.as_str()) {
                // The call hangs until the test kills this process.
                append_line(&blocked_path, &name);
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            let value = args[0].as_i64().unwrap_or(0);
            CallOutcome::Value(json!(answer(value, u64::from(call.index))))
        },
    );
    let actions = vec![ActionDef::new("act", CallChain::new(["lookup", "publish"]))];
    let reopen = Box::new(move || KafkaLog::open(options.clone()));
    let source = inputs();
    let checkpoint_path = dir.join("checkpoint.json");
    let mut next = 0;
    let mut driver: Driver<KafkaLog> = if restart {
        // The source re-reads up to the checkpoint's position, and the operator
        // restores from the checkpoint, replaying the broker's log from its marker.
        // The killed worker was the first incarnation: epoch 1.
        let mut driver = Driver::after_crash(actions, reopen, supplier, 1);
        if let Ok(text) = std::fs::read_to_string(&checkpoint_path) {
            let saved: serde_json::Value = serde_json::from_str(&text).expect("checkpoint file");
            let checkpoint: Checkpoint =
                serde_json::from_value(saved["checkpoint"].clone()).expect("checkpoint");
            let pos = saved["source_pos"].as_u64().expect("source position") as usize;
            for (key, value) in &source[..pos] {
                driver.input(key.clone(), json!(value)).expect("source");
            }
            driver.adopt_checkpoint(checkpoint, pos);
            next = pos;
        }
        driver.restore().expect("restore after the crash");
        driver.run_until_idle().expect("restored actions");
        driver
    } else {
        log_run_header();
        Driver::new(actions, reopen, supplier).expect("worker's driver over the Kafka log")
    };
    let outputs_path = dir.join("outputs.log");
    let mut written = 0;
    let mut write_outputs = |driver: &Driver<KafkaLog>| {
        for out in &driver.emitted()[written..] {
            append_line(
                &outputs_path,
                &format!("{}/{} {}", out.key, out.seq, json!(out.outputs)),
            );
        }
        written = driver.emitted().len();
    };
    write_outputs(&driver);
    for (key, value) in &source[next..] {
        driver.input(key.clone(), json!(value)).expect("input");
        // The first call of this input's action, saved; then, after every second
        // input's, a checkpoint with the action between its calls, kept in the
        // checkpoint file; then the rest.
        driver.call(0).expect("first call");
        next += 1;
        if next % CHECKPOINT_EVERY == 0 {
            let id = driver.checkpoint().expect("checkpoint");
            driver.complete_checkpoint(id).expect("complete checkpoint");
            let saved = json!({
                "checkpoint": driver.completed_checkpoint().expect("completed"),
                "source_pos": next,
            });
            write_atomically(&checkpoint_path, &saved.to_string());
        }
        driver.run_until_idle().expect("rest of the action");
        write_outputs(&driver);
    }
}

fn start_worker(broker: &Broker, dir: &Path, block: Option<&str>) -> Child {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args(["--exact", "kafka_worker", "--ignored", "--nocapture"])
        .env(ENV_BROKER, broker.bootstrap())
        .env(ENV_TOPIC, "worker")
        .env(ENV_DIR, dir)
        .env_remove(ENV_BLOCK)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(call) = block {
        cmd.env(ENV_BLOCK, call);
    }
    cmd.spawn().expect("start the worker process")
}

#[test]
fn a_worker_killed_mid_call_restarts_without_repeating_acknowledged_calls() {
    for (k, key) in KEYS.iter().enumerate() {
        assert_eq!(
            partition_for(key, PARTITIONS),
            k as u32 % PARTITIONS,
            "key {key} is not on the partition the model gives its key {k}"
        );
    }
    let broker = Broker::start();
    broker.create_topic("worker", PARTITIONS);
    let dir = tempfile::tempdir().unwrap();
    // The fourth input (bob, its second input: seq 1) blocks in its second call, after
    // a checkpoint that holds its saved first call.
    let killed_call = "bob/1/1";
    let mut first = start_worker(&broker, dir.path(), Some(killed_call));
    let start = Instant::now();
    while !dir.path().join("blocked").exists() {
        if let Ok(Some(status)) = first.try_wait() {
            panic!("the first worker exited with {status} before reaching the blocking call");
        }
        if start.elapsed() > GUARD {
            let _ = first.kill();
            panic!("the first worker did not reach the blocking call within 300 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL (Child::kill on Unix), mid-call.
    first.kill().unwrap();
    first.wait().unwrap();

    let mut second = start_worker(&broker, dir.path(), None);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = second.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > GUARD {
            let _ = second.kill();
            panic!("the restarted worker did not finish within 300 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "the restarted worker failed: {status}");

    let calls = std::fs::read_to_string(dir.path().join("calls.log")).unwrap();
    let mut runs: BTreeMap<&str, u32> = BTreeMap::new();
    for line in calls.lines() {
        *runs.entry(line).or_default() += 1;
    }
    let source = inputs();
    let mut seqs: BTreeMap<&str, u64> = BTreeMap::new();
    for (key, _) in &source {
        let seq = seqs.entry(key).or_default();
        for index in 0..CALLS {
            let name = format!("{key}/{seq}/{index}");
            let n = runs.get(name.as_str()).copied().unwrap_or(0);
            if name == killed_call {
                // Killed before its result was saved: the killed run and one after
                // the restart (the fix allows a rerun of a record that never landed).
                assert_eq!(n, 2, "killed call {name} ran {n} times");
            } else {
                assert_eq!(n, 1, "call {name} ran {n} times");
            }
        }
        *seq += 1;
    }
    // The killed input's first call was saved before the checkpoint: reused.
    assert_eq!(runs["bob/1/0"], 1);

    // Each input's output once (the killed worker wrote those it emitted, the restarted
    // one the rest), with the value of its last call.
    let outputs = std::fs::read_to_string(dir.path().join("outputs.log")).unwrap();
    let mut emitted: Vec<&str> = outputs.lines().collect();
    emitted.sort();
    let mut expected = Vec::new();
    let mut seqs: BTreeMap<&str, u64> = BTreeMap::new();
    for (key, value) in &source {
        let seq = seqs.entry(key).or_default();
        expected.push(format!("{key}/{seq} {}", json!([answer(*value, 1)])));
        *seq += 1;
    }
    expected.sort();
    assert_eq!(emitted, expected);

    // The two processes' production log is a run of the fixed durable model.
    let log = std::fs::read_to_string(dir.path().join("run.log")).unwrap();
    let validation = validate(log.as_bytes(), Options::default()).expect("a readable log");
    assert_eq!(validation.model, "durable");
    assert_eq!(validation.verdict, Verdict::Valid, "{log}");
    assert!(
        validation.violations.is_empty(),
        "{:?}",
        validation.violations
    );
    let lines: Vec<&str> = log.lines().collect();
    let crash = lines
        .iter()
        .position(|l| l.contains(r#""component":"durable.task","event":"crash""#))
        .expect("the restarted worker logs the first one's crash");
    assert_eq!(
        lines[crash + 1..]
            .iter()
            .filter(|l| l.contains(r#""event":"crash""#))
            .count(),
        0,
        "one crash"
    );

    // The same log with the restart's reuse of the killed input's first call turned
    // into a second run of its supplier: no run of the model, which reuses a result
    // acknowledged before the checkpoint it restored.
    let reuse = lines[crash..]
        .iter()
        .position(|l| {
            l.contains(r#""event":"call_reused""#)
                && l.contains(r#""key":"bob""#)
                && l.contains(r#""seq":1,"#)
        })
        .map(|i| crash + i)
        .expect("the restart reuses bob's saved first call");
    let rerun = lines[reuse]
        .replace(
            r#""component":"durable.operator""#,
            r#""component":"durable.supplier""#,
        )
        .replace(r#""event":"call_reused""#, r#""event":"call""#);
    let mut tampered: Vec<&str> = lines.clone();
    tampered[reuse] = &rerun;
    let tampered = tampered.join("\n");
    let validation = validate(tampered.as_bytes(), Options::default()).expect("a readable log");
    match validation.verdict {
        Verdict::Unexplained { line, .. } => assert_eq!(line, reuse as u64 + 1),
        other => panic!("a repeated acknowledged call passed as {other:?}"),
    }
}
