//! A real zombie send on a real broker (`specs/durable-actions.md`, "zombie-sends" and
//! "epoch-fencing"): three worker processes (this test binary re-run) take turns over
//! one topic on tansu, and the first one's send lands after the second one's restore.
//!
//! 1. Worker 1 (epoch 1) takes a checkpoint with its one action queued, runs call 0 and
//!    hands its result to librdkafka, which holds it (`linger.ms`); its log's flush says
//!    so on stdout and then sleeps, and the test stops the process (SIGSTOP) there. The
//!    record has not reached the broker: the topic is still empty.
//! 2. Worker 2 (epoch 2, `Driver::after_crash`) restores from worker 1's checkpoint,
//!    fences every partition, runs call 0 again and call 1 (both acknowledged), takes a
//!    checkpoint with the action still queued (its marker rewinds to that state's
//!    record) and exits before call 2.
//! 3. The test resumes worker 1 (SIGCONT). Its producer's linger ran out while it was
//!    stopped, so librdkafka sends the record at once: the zombie, call 0's result
//!    alone at epoch 1, lands at the end of the partition, after worker 2's fence and
//!    records. The test sees the end offset grow by one, then kills worker 1.
//! 4. Worker 3 (epoch 3) restores from worker 2's checkpoint and finishes the action.
//!
//! With fencing, worker 3 skips the zombie (it is behind epoch 2's fence): call 1's
//! saved result is reused, and no call whose result was acknowledged runs again. With
//! fencing off in every worker, worker 3 reads the zombie's older state last and runs
//! call 1 again, the model's counterexample. Supplier runs are counted across the
//! processes in a file each worker appends to.
//!
//! The workers append their production log to one file behind a run header with
//! `zombie_sends` and `fencing`; `steadfast validate` finds the fenced run a run of the
//! fixed durable model, and the unfenced one a run that breaks "call at most once" at
//! worker 3's second run of call 1.

mod broker;

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use broker::{append_line, write_atomically, Broker};
use rustix::process::{kill_process, Pid, Signal};
use serde_json::json;
use steadfast::durable::decode_entry;
use steadfast::durable::{
    partition_for, ActionDef, CallChain, CallOutcome, CallRef, Checkpoint, Entry, LogError,
    LogRecord, Offset, Partition,
};
use steadfast_conformance::validate::{validate, Options, Validation, Verdict};
use steadfast_kafka::{KafkaAck, KafkaLog, KafkaLogOptions};
use steadfast_log::{Driver, Log};

/// The worker's environment: broker, topic, state directory, which worker, fencing.
const ENV_BROKER: &str = "STEADFAST_ZOMBIE_BROKER";
const ENV_TOPIC: &str = "STEADFAST_ZOMBIE_TOPIC";
const ENV_DIR: &str = "STEADFAST_ZOMBIE_DIR";
const ENV_ROLE: &str = "STEADFAST_ZOMBIE_ROLE";
const ENV_FENCING: &str = "STEADFAST_ZOMBIE_FENCING";

/// Worker 1's line on stdout once its send is queued and its flush is held.
const HELD: &str = "zombie-send-held";

/// Hang guards, far above what each step takes on a loaded machine.
const GUARD: Duration = Duration::from_secs(180);
/// How long worker 1's producer holds a record before sending it: long enough for the
/// test to stop the process before the record leaves, short enough not to slow the
/// test (worker 2 usually takes longer, so the record goes at SIGCONT).
const LINGER: Duration = Duration::from_secs(8);
/// How long worker 1's flush sleeps before flushing: the test kills it long before.
const HOLD: Duration = Duration::from_secs(600);

const TOPIC: &str = "zombie";
/// The one key with an input, on partition 0 (the model's key 0).
const KEY: &str = "bob";
/// The model has no partition without a key: the header names a second key, on
/// partition 1, which gets no input.
const IDLE_KEY: &str = "alice";
const PARTITIONS: u32 = 2;
/// Calls 0 and 1 are acknowledged before worker 2's checkpoint; call 2 keeps the action
/// queued (after a last call the action completes at once).
const CALLS: [&str; 3] = ["lookup", "enrich", "publish"];
const INPUT: i64 = 10;

/// The value call `index` answers.
fn answer(index: u32) -> i64 {
    INPUT * 7 + i64::from(index)
}

/// Send this process's `tracing` events to `path` as JSON lines, appended, each written
/// whole as it is logged.
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

/// The run header the validator reads the model's bounds from: two crashes (workers 1
/// and 2), one checkpoint each, a zombie send, and whether restores fence.
fn log_run_header(fencing: bool) {
    tracing::info!(
        component = "run",
        event = "start",
        model = "durable",
        keys = 2u8,
        inputs = 1u8,
        actions = 1u8,
        calls = CALLS.len(),
        partitions = PARTITIONS,
        crashes = 2u8,
        checkpoints = 2u8,
        concurrent_checkpoints = 1u8,
        send_failures = 0u8,
        zombie_sends = true,
        fencing,
        key_names = %format!("{KEY} {IDLE_KEY}"),
        action_names = "act",
    );
}

/// The Kafka log whose first flush stops short: it says so on stdout and sleeps, so a
/// send stays with the producer (which holds it for its linger) while the test stops
/// the process.
struct HeldLog {
    inner: KafkaLog,
    held: bool,
}

impl Log for HeldLog {
    type Ack = KafkaAck;

    fn partition_count(&self) -> u32 {
        self.inner.partition_count()
    }

    fn send(
        &mut self,
        partition: Partition,
        key: &[u8],
        value: &[u8],
    ) -> Result<KafkaAck, LogError> {
        self.inner.send(partition, key, value)
    }

    fn flush(&mut self) -> Result<(), LogError> {
        if !self.held {
            self.held = true;
            println!("{HELD}");
            std::io::stdout().flush().expect("stdout");
            std::thread::sleep(HOLD);
        }
        self.inner.flush()
    }

    fn read(&mut self, p: Partition, from: Offset, max: usize) -> Result<Vec<LogRecord>, LogError> {
        self.inner.read(p, from, max)
    }

    fn end_offsets(&mut self) -> Result<Vec<Offset>, LogError> {
        self.inner.end_offsets()
    }
}

/// What every worker shares: its directory, the supplier that writes its runs down, and
/// the action.
struct Worker {
    dir: PathBuf,
    options: KafkaLogOptions,
    fencing: bool,
}

impl Worker {
    fn from_env() -> Option<(Worker, u8)> {
        let (Ok(bootstrap), Ok(topic), Ok(dir), Ok(role), Ok(fencing)) = (
            std::env::var(ENV_BROKER),
            std::env::var(ENV_TOPIC),
            std::env::var(ENV_DIR),
            std::env::var(ENV_ROLE),
            std::env::var(ENV_FENCING),
        ) else {
            return None;
        };
        let worker = Worker {
            dir: PathBuf::from(dir),
            options: KafkaLogOptions::new(bootstrap, topic),
            fencing: fencing == "true",
        };
        log_to(&worker.dir.join("run.log"));
        Some((worker, role.parse().expect("worker role")))
    }

    fn actions() -> Vec<ActionDef> {
        vec![ActionDef::new("act", CallChain::new(CALLS))]
    }

    /// Answers call `index` with `answer(index)`, after writing the run down.
    fn supplier(&self) -> steadfast_log::Supplier {
        let calls = self.dir.join("calls.log");
        Box::new(move |call: &CallRef, _f: &str, _args: &serde_json::Value| {
            append_line(&calls, &format!("{}/{}/{}", call.key, call.seq, call.index));
            CallOutcome::Value(json!(answer(call.index)))
        })
    }

    /// The driver of the process that takes over from crashed epoch `crashed`, restored
    /// from the checkpoint in `file`.
    fn take_over(&self, crashed: u64, file: &str) -> Driver<KafkaLog> {
        let options = self.options.clone();
        let reopen = Box::new(move || KafkaLog::open(options.clone()));
        let mut driver = Driver::after_crash(Self::actions(), reopen, self.supplier(), crashed);
        driver.set_fencing(self.fencing);
        let text = std::fs::read_to_string(self.dir.join(file)).expect("checkpoint file");
        let checkpoint: Checkpoint = serde_json::from_str(&text).expect("checkpoint");
        driver.input(KEY, json!(INPUT)).expect("source");
        driver.adopt_checkpoint(checkpoint, 1);
        driver.restore().expect("restore");
        driver
    }

    fn save_checkpoint<L: Log>(&self, driver: &mut Driver<L>, file: &str) {
        let id = driver.checkpoint().expect("checkpoint");
        driver.complete_checkpoint(id).expect("complete checkpoint");
        let checkpoint = driver.completed_checkpoint().expect("completed");
        let text = serde_json::to_string(checkpoint).expect("checkpoint text");
        write_atomically(&self.dir.join(file), &text);
    }

    /// Worker 1: checkpoint with the action queued, then call 0, whose put stays held.
    fn first(&self) {
        log_run_header(self.fencing);
        let mut options = self.options.clone();
        options.linger = LINGER;
        // A record may wait out the linger and the stop: it must not expire meanwhile.
        options.delivery_timeout = HOLD;
        let reopen = Box::new(move || {
            KafkaLog::open(options.clone()).map(|inner| HeldLog { inner, held: false })
        });
        let mut driver = Driver::new(Self::actions(), reopen, self.supplier()).expect("driver");
        driver.set_fencing(self.fencing);
        driver.input(KEY, json!(INPUT)).expect("input");
        self.save_checkpoint(&mut driver, "checkpoint-1.json");
        driver.call(0).expect("call 0");
        panic!("worker 1 was not stopped while its flush was held");
    }

    /// Worker 2: restore, calls 0 and 1 acknowledged, checkpoint with the action queued.
    fn second(&self) {
        let mut driver = self.take_over(1, "checkpoint-1.json");
        driver.call(0).expect("call 0");
        driver.call(0).expect("call 1");
        self.save_checkpoint(&mut driver, "checkpoint-2.json");
    }

    /// Worker 3: restore from worker 2's checkpoint and finish; write what the rebuild
    /// did and what was emitted.
    fn third(&self) {
        let mut driver = self.take_over(2, "checkpoint-2.json");
        let fenced = driver.last_rebuild().expect("a rebuild").fenced_skipped;
        driver.run_until_idle().expect("the rest of the action");
        let outputs: Vec<_> = driver.emitted().iter().map(|o| o.outputs.clone()).collect();
        let result = json!({ "fenced_skipped": fenced, "outputs": outputs });
        write_atomically(&self.dir.join("result.json"), &result.to_string());
    }
}

/// The worker process, started by the tests below; does nothing when run on its own.
#[test]
#[ignore = "worker process of the zombie tests"]
fn zombie_worker() {
    let Some((worker, role)) = Worker::from_env() else {
        return;
    };
    match role {
        1 => worker.first(),
        2 => worker.second(),
        3 => worker.third(),
        other => panic!("no worker {other}"),
    }
}

// The test's side.

/// The children started so far: SIGKILLed and reaped when the test ends, passed or not
/// (a stopped process dies of SIGKILL too).
#[derive(Default)]
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn signal(child: &Child, sig: Signal) {
    let pid = Pid::from_raw(child.id() as i32).expect("a child's pid");
    kill_process(pid, sig).expect("signal the worker");
}

/// A run of the three workers, on its own broker.
struct Run {
    broker: Broker,
    dir: tempfile::TempDir,
    fencing: bool,
    children: Children,
}

/// What a run left: supplier runs per call, partition 0's records as (offset, entry),
/// where the zombie landed, and worker 3's result and the combined production log.
struct Outcome {
    runs: BTreeMap<String, u32>,
    records: Vec<(Offset, Entry)>,
    zombie_at: Offset,
    result: serde_json::Value,
    log: String,
}

impl Run {
    fn new(fencing: bool) -> Run {
        assert_eq!(
            partition_for(KEY, PARTITIONS),
            0,
            "the model's key 0 is on partition 0"
        );
        assert_eq!(
            partition_for(IDLE_KEY, PARTITIONS),
            1,
            "the model's key 1 is on 1"
        );
        let broker = Broker::start();
        broker.create_topic(TOPIC, PARTITIONS);
        Run {
            broker,
            dir: tempfile::tempdir().expect("worker directory"),
            fencing,
            children: Children::default(),
        }
    }

    /// Start worker `role`, its stdout piped, its stderr in a file of the directory.
    fn start(&mut self, role: u8) -> usize {
        let stderr = std::fs::File::create(self.dir.path().join(format!("worker-{role}.err")))
            .expect("worker's stderr");
        let child = Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "zombie_worker", "--ignored", "--nocapture"])
            .env(ENV_BROKER, self.broker.bootstrap())
            .env(ENV_TOPIC, TOPIC)
            .env(ENV_DIR, self.dir.path())
            .env(ENV_ROLE, role.to_string())
            .env(ENV_FENCING, self.fencing.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start a worker process");
        self.children.0.push(child);
        self.children.0.len() - 1
    }

    fn stderr_of(&self, role: u8) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("worker-{role}.err")))
            .unwrap_or_default()
    }

    /// Run worker `role` to its end, which must be a success.
    fn run_to_end(&mut self, role: u8) {
        let i = self.start(role);
        let start = Instant::now();
        let status: ExitStatus = loop {
            if let Some(status) = self.children.0[i].try_wait().expect("worker status") {
                break status;
            }
            assert!(
                start.elapsed() < GUARD,
                "worker {role} did not finish within {GUARD:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            status.success(),
            "worker {role} failed ({status}): {}",
            self.stderr_of(role)
        );
    }

    /// Wait until worker `i` says its send is held.
    fn await_held(&mut self, i: usize) {
        let stdout = self.children.0[i].stdout.take().expect("worker's stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let held = BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .any(|line| line == HELD);
            let _ = tx.send(held);
        });
        match rx.recv_timeout(GUARD) {
            Ok(true) => {}
            Ok(false) => panic!(
                "worker 1 ended before holding its send: {}",
                self.stderr_of(1)
            ),
            Err(_) => panic!("worker 1 did not hold its send within {GUARD:?}"),
        }
    }

    fn end_of_partition_0(&self, log: &mut KafkaLog) -> Offset {
        log.end_offsets().expect("end offsets")[0]
    }

    /// Wait until partition 0's end passes `end`: the zombie landed.
    fn await_landing(&self, log: &mut KafkaLog, end: Offset) -> Offset {
        let start = Instant::now();
        loop {
            let now = self.end_of_partition_0(log);
            if now > end {
                return now;
            }
            assert!(
                start.elapsed() < GUARD,
                "worker 1's send did not land within {GUARD:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Partition 0's records, decoded.
    fn records(&self, log: &mut KafkaLog) -> Vec<(Offset, Entry)> {
        let end = self.end_of_partition_0(log);
        let records = log.read(0, 0, end as usize).expect("read partition 0");
        let entries = records
            .iter()
            .map(|r| (r.offset, decode_entry(r).expect("a record")));
        entries.collect()
    }

    /// The scenario of the module's documentation.
    fn play(mut self) -> Outcome {
        let first = self.start(1);
        self.await_held(first);
        signal(&self.children.0[first], Signal::STOP);
        let mut view = self.broker.open(TOPIC);
        assert_eq!(
            self.end_of_partition_0(&mut view),
            0,
            "worker 1's send left before the stop"
        );

        self.run_to_end(2);
        let before = self.end_of_partition_0(&mut view);
        signal(&self.children.0[first], Signal::CONT);
        let resumed = Instant::now();
        let after = self.await_landing(&mut view, before);
        assert_eq!(after, before + 1, "one record landed: the zombie");
        println!(
            "worker 2 left partition 0 at end offset {before}; worker 1's send landed at offset \
             {before} {:?} after SIGCONT",
            resumed.elapsed()
        );
        signal(&self.children.0[first], Signal::KILL);
        let records = self.records(&mut view);

        self.run_to_end(3);
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name));
        let mut runs = BTreeMap::new();
        for line in read("calls.log").expect("calls").lines() {
            *runs.entry(line.to_string()).or_default() += 1;
        }
        let result = serde_json::from_str(&read("result.json").expect("result")).expect("json");
        Outcome {
            runs,
            records,
            zombie_at: before,
            result,
            log: read("run.log").expect("run log"),
        }
    }
}

fn runs_of(outcome: &Outcome, index: u32) -> u32 {
    outcome
        .runs
        .get(&format!("{KEY}/0/{index}"))
        .copied()
        .unwrap_or(0)
}

/// The zombie: call 0's result alone, written at epoch 1.
fn assert_zombie(outcome: &Outcome) {
    let (offset, zombie) = outcome.records.last().expect("records");
    assert_eq!(*offset, outcome.zombie_at);
    match zombie {
        Entry::State { state, epoch, .. } => {
            assert_eq!((*epoch, state.call_results.len()), (1, 1), "{zombie:?}");
        }
        other => panic!("the last record is no state: {other:?}"),
    }
}

#[test]
fn a_zombie_send_landing_after_the_fence_is_skipped_and_no_acknowledged_call_repeats() {
    let started = Instant::now();
    let outcome = Run::new(true).play();
    // Worker 2's fence, its two states, then the zombie behind them.
    let epochs: Vec<String> = outcome
        .records
        .iter()
        .map(|(o, e)| describe(*o, e))
        .collect();
    assert_eq!(
        epochs,
        [
            "0 fence 2",
            "1 state 2 calls 1",
            "2 state 2 calls 2",
            "3 state 1 calls 1"
        ]
    );
    assert_zombie(&outcome);

    assert_eq!(outcome.result["fenced_skipped"], 1, "{}", outcome.result);
    // Call 0 ran in worker 1 (its record had not landed) and again in worker 2; calls
    // 1 and 2, acknowledged in one worker, ran once.
    assert_eq!(
        (
            runs_of(&outcome, 0),
            runs_of(&outcome, 1),
            runs_of(&outcome, 2)
        ),
        (2, 1, 1)
    );
    assert_eq!(outcome.result["outputs"], json!([[answer(2)]]));

    // Worker 3's rebuild warned of the zombie at its offset.
    let lines: Vec<&str> = outcome.log.lines().collect();
    let last_crash = lines
        .iter()
        .rposition(|l| l.contains(r#""component":"durable.task","event":"crash""#))
        .expect("worker 3 logs worker 2's crash");
    let fenced: Vec<&&str> = lines[last_crash..]
        .iter()
        .filter(|l| l.contains(r#""event":"fenced_record""#))
        .collect();
    assert_eq!(fenced.len(), 1, "{fenced:?}");
    assert!(fenced[0].contains(r#""level":"WARN""#), "{}", fenced[0]);
    assert!(
        fenced[0].contains(r#""component":"durable.store""#),
        "{}",
        fenced[0]
    );
    assert!(
        fenced[0].contains(&format!(r#""offset":{}"#, outcome.zombie_at)),
        "{}",
        fenced[0]
    );

    // The workers' combined log is a run of the fixed durable model with zombie sends
    // and epoch fencing.
    let validation = validated(&outcome);
    assert_eq!(validation.verdict, Verdict::Valid, "{}", outcome.log);
    assert!(
        validation.violations.is_empty(),
        "{:?}",
        validation.violations
    );
    println!("fenced run took {:?}", started.elapsed());
}

#[test]
fn without_fencing_the_zombie_send_makes_an_acknowledged_call_run_again() {
    let started = Instant::now();
    let outcome = Run::new(false).play();
    let epochs: Vec<String> = outcome
        .records
        .iter()
        .map(|(o, e)| describe(*o, e))
        .collect();
    assert_eq!(
        epochs,
        [
            "0 state 2 calls 1",
            "1 state 2 calls 2",
            "2 state 1 calls 1"
        ]
    );
    assert_zombie(&outcome);

    assert_eq!(outcome.result["fenced_skipped"], 0, "{}", outcome.result);
    // Call 1's result was acknowledged in worker 2, and worker 3 runs it again.
    assert_eq!(
        (
            runs_of(&outcome, 0),
            runs_of(&outcome, 1),
            runs_of(&outcome, 2)
        ),
        (2, 2, 1)
    );
    assert_eq!(outcome.result["outputs"], json!([[answer(2)]]));
    assert!(!outcome.log.contains(r#""event":"fenced_record""#));

    // The validator rejects the run at worker 3's second run of call 1.
    let lines: Vec<&str> = outcome.log.lines().collect();
    let repeated = lines
        .iter()
        .rposition(|l| {
            l.contains(r#""component":"durable.supplier""#) && l.contains(r#""index":1"#)
        })
        .expect("worker 3 runs call 1") as u64
        + 1;
    let validation = validated(&outcome);
    // Explained by the model (its counterexample), and breaking "call at most once"
    // at the repeated call.
    assert_eq!(validation.verdict, Verdict::Valid, "{}", outcome.log);
    let broken: Vec<(&str, u64)> = validation
        .violations
        .iter()
        .map(|v| (v.property, v.line))
        .collect();
    assert_eq!(broken, [("call at most once", repeated)], "{}", outcome.log);
    println!("unfenced run took {:?}", started.elapsed());
}

fn validated(outcome: &Outcome) -> Validation {
    let validation = validate(outcome.log.as_bytes(), Options::default()).expect("a readable log");
    assert_eq!(validation.model, "durable");
    validation
}

/// A record as `offset kind epoch [calls n]`.
fn describe(offset: Offset, entry: &Entry) -> String {
    match entry {
        Entry::Fence { epoch } => format!("{offset} fence {epoch}"),
        Entry::State { state, epoch, .. } => {
            format!("{offset} state {epoch} calls {}", state.call_results.len())
        }
    }
}
