//! The durable action operator of flink-agents issue 1158 runs concurrently: a source,
//! a supplier, a log with group commit, a checkpoint coordinator and task crashes, all on
//! a tokio runtime, around the production sans-IO [`Operator`] and [`FileLog`].
//!
//! **One owner.** A single driver loop owns the operator, the open file log and the run's
//! randomness. Everything else is a task that sleeps a drawn delay and then sends the loop
//! one message over an mpsc channel: an input, a supplier's outcome, the flusher's turn, a
//! put's answer, a checkpoint's trigger or completion, a crash. The loop feeds each
//! message to the operator and carries out the effects in the same synchronous section,
//! so a run's log is a sequence of whole operator steps, and every random draw happens in
//! the loop in a fixed order: one seed replays the same run.
//!
//! **The components.**
//! - The source delivers each key's inputs in order; after a restore it resumes each key
//!   at the restored checkpoint's `next_seq` (from 0 without one).
//! - The supplier runs every requested call after a delay and logs when it returns (the
//!   model's `CallSupplier` step); the outcome then travels back to the loop.
//! - The log commits in groups: appended records wait in a queue until the flusher's
//!   turn, which sends every queued record to the file log and flushes once (one fsync for
//!   them all); each put's answer then reaches the operator after a delay of its own, so
//!   answers arrive in any order.
//! - The checkpoint coordinator triggers at most one checkpoint at a time, only when no
//!   put is in flight (the operator refuses a snapshot otherwise, and the coordinator
//!   tries again later), and completes it after a delay.
//! - A crash aborts every task of the incarnation (nothing of it logs or delivers after
//!   the crash line), drops the operator and the log handle, reopens the log from disk,
//!   fences every partition with the new incarnation's epoch as the blocking driver does
//!   (`durable.driver fence`), and restores from the latest completed checkpoint,
//!   replaying the log from its marker. Queued records that were never sent are lost;
//!   sent ones landed.
//! - With [`Config::zombie_sends`], a record still queued at a crash may instead stay
//!   with the crashed incarnation's producer (a zombie, one at a time) and land later,
//!   before the restore's fences or at a drawn time in a later incarnation, through the
//!   new incarnation's log handle (`Sim::land_zombie` says why).
//!
//! **Faults.** A put may fail before its record lands (it is never sent) or after (sent
//! and flushed, then answered with a failure), at most [`Config::send_failures`] times.
//! The fixed operator fails on a failed put, as the task would, and the driver crashes and
//! restores it; with [`Defect::CacheBeforeAck`] the operator ignores the failure and goes
//! on. The driver's own seed bug, [`UNFENCED`], restores without fences.
//!
//! **Environment assumptions the driver keeps**, because the model's verdicts rest on
//! them (`specs/durable-actions.md`, "Assumptions"): a crash comes only once a checkpoint
//! completed (the model's `Crash` needs one unless `restart-without-checkpoint`, under
//! which every design repeats calls), so a put fails only while a crash is left in the
//! budget and a checkpoint completed, the crash that failure forces being one the model
//! allows; one checkpoint is pending at most (`concurrent-checkpoints` 1); snapshots wait
//! for every put's answer (`synchronous-puts`).
//!
//! The file log is opened under a fixed relative name that its storage resolves inside
//! the run's data directory, so the log lines that name its files are the same
//! whatever directory a run is given. The clock is tokio's, paused: timers fire in
//! virtual time and the single-threaded scheduler makes a seed replay the same run, byte
//! for byte in its log.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;
/// The seed bugs the operator can carry, with their command-line names.
pub use steadfast::durable::Defect;
use steadfast::durable::{
    partition_for, ActionDef, CallChain, CallOutcome, CallRef, Checkpoint, Effect, Event, Limits,
    LogError, Operator, OperatorError, PutId, PutRecord, StateKey,
};
use steadfast_log::storage::{LockGuard, StdStorage, Storage, StorageFile};
use steadfast_log::{
    append_fences, group_commit, restart_without_checkpoint, restore_from_log, AckError, AckPoll,
    Cancellation, Cancelled, FileLog, FileLogOptions, Log, PendingAck,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::log::LogFile;
use crate::rng::Rng;

/// Most keys a run drives (the model's bound).
pub const MAX_KEYS: u8 = 3;
/// Most inputs per key (the model's bound).
pub const MAX_INPUTS: u8 = 3;
/// Most actions per input (the model's bound).
pub const MAX_ACTIONS: u8 = 2;
/// Most durable calls per action (the model's bound).
pub const MAX_CALLS: u8 = 3;
/// Most log partitions (the model's bound).
pub const MAX_PARTITIONS: u8 = 2;
/// Most crashes per run (the model's ghost counts at most `crashes + 1 <= 4` runs).
pub const MAX_CRASHES: u8 = 3;
/// Most checkpoints triggered per run.
pub const MAX_CHECKPOINTS: u8 = 4;
/// Most injected put failures per run.
pub const MAX_SEND_FAILURES: u8 = 2;
/// Longest delay a task may wait, in milliseconds of the virtual clock.
pub const MAX_DELAY_MS: u64 = 60_000;

/// Messages the loop handles at most before it gives up: a bound, so that a driver
/// defect shows as an error rather than a run that never ends.
const MAX_STEPS: u64 = 200_000;
/// The virtual-time bound of a run, in multiples of the largest delay.
const DEADLINE_DELAYS: u64 = 100_000;
/// How much longer than a message's delay the wait before a crash may be: long enough
/// that crashes fall anywhere in a run, not only at its start.
const CRASH_DELAYS: u64 = 8;
/// The same for the wait before the coordinator next tries to trigger a checkpoint.
const CHECKPOINT_DELAYS: u64 = 3;
/// How much shorter than a message's delay the wait before the coordinator tries a
/// refused trigger again is.
const RETRY_DIVISOR: u64 = 5;
/// Chance, in percent, that a put is picked to fail while the budget allows one.
const FAILURE_PERCENT: u64 = 15;
/// The file log's directory as the log names it ([`Rooted`] resolves it).
const LOG_DIR: &str = "durable-log";
/// Chance, in percent, that a record queued at a crash stays with the old producer
/// (`zombie_sends`).
const ZOMBIE_PERCENT: u64 = 60;
/// Chance, in percent, that a zombie lands before the restore's fences rather than in
/// the new incarnation.
const EARLY_ZOMBIE_PERCENT: u64 = 30;
/// How much longer than a message's delay a zombie's wait in the new incarnation may be:
/// long enough to land after the records the new incarnation writes for its state.
const ZOMBIE_DELAYS: u64 = 4;

/// One run's settings (the model's parameters of the same names, where it has them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Config {
    /// Keys, 1 to [`MAX_KEYS`].
    pub keys: u8,
    /// Inputs per key, 1 to [`MAX_INPUTS`].
    pub inputs: u8,
    /// Actions per input, 1 to [`MAX_ACTIONS`].
    pub actions: u8,
    /// Durable calls per action, 1 to [`MAX_CALLS`].
    pub calls: u8,
    /// Log partitions, 1 to [`MAX_PARTITIONS`].
    pub partitions: u8,
    /// The seed every choice is drawn from.
    pub seed: u64,
    /// Crashes at most, 0 to [`MAX_CRASHES`] (forced ones included).
    pub crashes: u8,
    /// Checkpoints triggered at most, 0 to [`MAX_CHECKPOINTS`].
    pub checkpoints: u8,
    /// Injected put failures at most, 0 to [`MAX_SEND_FAILURES`].
    pub send_failures: u8,
    /// Longest delay of a task, 1 to [`MAX_DELAY_MS`] virtual milliseconds.
    pub max_delay_ms: u64,
    /// Seed bugs put back into the operator.
    #[serde(serialize_with = "defect_names")]
    pub defects: Vec<Defect>,
    /// A crash may leave a queued put with the old producer, to land later (the model's
    /// `zombie-sends`); needs one key, as the model's zombie needs sequential puts.
    pub zombie_sends: bool,
    /// A restore fences every partition before it reads the log (the model's
    /// `epoch-fencing`); off is the seed bug [`UNFENCED`].
    pub fencing: bool,
}

fn defect_names<S: serde::Serializer>(defects: &[Defect], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(defects.iter().map(|d| d.name()))
}

/// The command-line name of the driver's seed bug: a restore writes no fences
/// ([`Config::fencing`] off).
pub const UNFENCED: &str = "unfenced";

/// Every seed bug's command-line name: the operator's, then the driver's.
pub fn bug_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = Defect::ALL.iter().map(|d| d.name()).collect();
    names.push(UNFENCED);
    names
}

impl Default for Config {
    fn default() -> Self {
        Config {
            keys: 2,
            inputs: 2,
            actions: 1,
            calls: 2,
            partitions: 1,
            seed: 0,
            crashes: 2,
            checkpoints: 3,
            send_failures: 1,
            max_delay_ms: 50,
            defects: Vec::new(),
            zombie_sends: false,
            fencing: true,
        }
    }
}

impl Config {
    /// The largest bounds the driver and the model share, every budget at its bound;
    /// the other settings are the defaults'.
    pub fn largest() -> Config {
        Config {
            keys: MAX_KEYS,
            inputs: MAX_INPUTS,
            actions: MAX_ACTIONS,
            calls: MAX_CALLS,
            partitions: MAX_PARTITIONS,
            crashes: MAX_CRASHES,
            checkpoints: MAX_CHECKPOINTS,
            send_failures: MAX_SEND_FAILURES,
            ..Config::default()
        }
    }

    /// Why these settings cannot run, if they cannot: one line naming the field.
    pub fn check(&self) -> Result<(), String> {
        let ranges: [(&str, u8, u8, u8); 8] = [
            ("keys", self.keys, 1, MAX_KEYS),
            ("inputs", self.inputs, 1, MAX_INPUTS),
            ("actions", self.actions, 1, MAX_ACTIONS),
            ("calls", self.calls, 1, MAX_CALLS),
            ("partitions", self.partitions, 1, MAX_PARTITIONS),
            ("crashes", self.crashes, 0, MAX_CRASHES),
            ("checkpoints", self.checkpoints, 0, MAX_CHECKPOINTS),
            ("send_failures", self.send_failures, 0, MAX_SEND_FAILURES),
        ];
        for (field, value, low, high) in ranges {
            if !(low..=high).contains(&value) {
                return Err(format!("{field} must be {low} to {high}, not {value}"));
            }
        }
        if self.max_delay_ms == 0 || self.max_delay_ms > MAX_DELAY_MS {
            return Err(format!(
                "max_delay_ms must be 1 to {MAX_DELAY_MS}, not {}",
                self.max_delay_ms
            ));
        }
        // The group commit keeps one put per key in flight; the model's single zombie
        // needs puts one at a time, which only one key gives.
        if self.zombie_sends && self.keys > 1 {
            return Err(format!(
                "zombie_sends needs keys 1 (one put in flight at a time), not {}",
                self.keys
            ));
        }
        Ok(())
    }

    /// The seed bugs the run carries, by command-line name.
    pub fn bug_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&str> = self.defects.iter().map(|d| d.name()).collect();
        if !self.fencing {
            names.push(UNFENCED);
        }
        names
    }

    /// The key names, in model order: model key `k` is named `key{k}.{n}` for the first
    /// `n` whose name hashes to partition `k mod partitions` (the model's placement).
    pub fn key_names(&self) -> Vec<String> {
        let partitions = u32::from(self.partitions.max(1));
        (0..self.keys)
            .map(|k| {
                let want = u32::from(k) % partitions;
                // Half the names hash to each partition, so the search ends at once.
                (0u32..)
                    .map(|n| format!("key{k}.{n}"))
                    .find(|name| partition_for(name, partitions) == want)
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The action names, in model order.
    pub fn action_names(&self) -> Vec<String> {
        (0..self.actions).map(|a| format!("action{a}")).collect()
    }

    /// The operator's actions: each calls `f0`, `f1`, ... in turn, `calls` of them.
    fn defs(&self) -> Vec<ActionDef> {
        let functions: Vec<String> = (0..self.calls).map(|c| format!("f{c}")).collect();
        self.action_names()
            .into_iter()
            .map(|a| ActionDef::new(a, CallChain::new(functions.clone())))
            .collect()
    }

    /// The operator's queue bounds, the model's: one pending checkpoint, and room for
    /// every input of a key.
    fn limits(&self) -> Limits {
        Limits {
            pending_inputs_per_key: usize::from(self.inputs),
            pending_checkpoints: 1,
        }
    }
}

/// How often the supplier ran for one durable call, over the whole run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallRuns {
    /// The state key the call's result is saved under.
    pub state: StateKey,
    /// The call's index in its action.
    pub index: u32,
    /// Supplier runs.
    pub runs: u32,
    /// Runs whose result never reached the log: the outcome was lost in a crash, or its
    /// record failed before landing or was lost unsent in a crash.
    pub unlanded: u32,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Lines in the log.
    pub events: u64,
    /// Messages the driver loop handled.
    pub steps: u64,
    /// Crashes, forced ones included.
    pub crashes: u32,
    /// Crashes forced by the operator failing on a failed put.
    pub forced_crashes: u32,
    /// Checkpoints triggered.
    pub checkpoints_triggered: u32,
    /// Checkpoints completed.
    pub checkpoints_completed: u32,
    /// Snapshots the operator refused (a put was in flight after all).
    pub snapshots_refused: u32,
    /// Puts failed before their record landed.
    pub failures_before_landing: u32,
    /// Puts failed after their record landed.
    pub failures_after_landing: u32,
    /// Supplier runs, over all calls.
    pub supplier_calls: u64,
    /// Flushes (fsyncs) of the log, each covering every record queued before it.
    pub flushes: u64,
    /// Records sent to the log.
    pub records_sent: u64,
    /// Outputs emitted, over all incarnations.
    pub outputs: u64,
    /// Queued puts a crash left with the old producer (`zombie_sends`).
    pub zombies: u32,
    /// Zombies that landed.
    pub zombies_landed: u32,
    /// Zombies that landed behind a fence of a newer epoch in their partition.
    pub zombies_stale: u32,
    /// Records the restores' rebuilds skipped as stale (behind a newer fence).
    pub fenced_skipped: u64,
    /// The virtual time the run took, in milliseconds.
    pub virtual_ms: u64,
    /// Per durable call, how often the supplier ran, in call order.
    pub calls: Vec<CallRuns>,
}

impl Outcome {
    /// The calls that break the fix's promise, supplier runs <= 1 + runs whose result
    /// never reached the log (the model's "call at most once").
    pub fn repeated_calls(&self) -> Vec<&CallRuns> {
        self.calls
            .iter()
            .filter(|c| c.runs > 1 + c.unlanded)
            .collect()
    }
}

/// Runs one simulation, writing its log to `log_path` and the file log into `data_dir`,
/// an empty directory the caller made (and removes). One seed gives the same log, byte
/// for byte.
pub fn run(config: &Config, log_path: &Path, data_dir: &Path) -> Result<Outcome, String> {
    config.check()?;
    let empty = std::fs::read_dir(data_dir)
        .map_err(|e| format!("data directory {}: {e}", data_dir.display()))?
        .next()
        .is_none();
    if !empty {
        return Err(format!(
            "data directory {} is not empty",
            data_dir.display()
        ));
    }
    let log = LogFile::create(log_path)
        .map_err(|e| format!("creating the log {}: {e}", log_path.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    let result: Result<Outcome, String> = local.block_on(&runtime, async {
        let dispatch = log.dispatch();
        let _guard = tracing::dispatcher::set_default(&dispatch);
        let started = Instant::now();
        let storage: Arc<dyn Storage> = Arc::new(Rooted {
            root: data_dir.to_path_buf(),
        });
        let mut sim = Sim::new(config.clone(), storage)?;
        let result = sim.run().await;
        // Nothing of the last incarnation runs on once the loop is done.
        sim.abort_tasks();
        let mut outcome = result?;
        outcome.virtual_ms = started.elapsed().as_millis() as u64;
        Ok(outcome)
    });
    let lines = log
        .finish()
        .map_err(|e| format!("writing the log {}: {e}", log_path.display()))?;
    let mut outcome = result?;
    outcome.events = lines;
    Ok(outcome)
}

/// A [`Storage`] that resolves [`LOG_DIR`] inside `root`: the file log names its files
/// by the fixed name, the disk holds them in the run's data directory.
struct Rooted {
    root: PathBuf,
}

impl Rooted {
    fn real(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(LOG_DIR) {
            Ok(rest) if rest.as_os_str().is_empty() => self.root.clone(),
            Ok(rest) => self.root.join(rest),
            Err(_) => path.to_path_buf(),
        }
    }

    fn named(&self, path: PathBuf) -> PathBuf {
        match path.strip_prefix(&self.root) {
            Ok(rest) => Path::new(LOG_DIR).join(rest),
            Err(_) => path,
        }
    }
}

impl Storage for Rooted {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        StdStorage.create_dir_all(&self.real(dir))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        StdStorage.read(&self.real(path))
    }

    fn write_synced(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        StdStorage.write_synced(&self.real(path), bytes)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdStorage.rename(&self.real(from), &self.real(to))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut paths: Vec<PathBuf> = StdStorage
            .list(&self.real(dir))?
            .into_iter()
            .map(|p| self.named(p))
            .collect();
        // The directory's order is the file system's; the log's is the names'.
        paths.sort();
        Ok(paths)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        StdStorage.sync_dir(&self.real(dir))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        StdStorage.open_append(&self.real(path))
    }

    fn lock_exclusive(&self, path: &Path) -> io::Result<LockGuard> {
        StdStorage.lock_exclusive(&self.real(path))
    }
}

/// A message to the driver loop, from a task of incarnation `inc`.
#[derive(Debug)]
struct Msg {
    inc: u64,
    what: Message,
}

#[derive(Debug)]
enum Message {
    /// The source's input `seq` of key `key` (an index into the key names).
    Input { key: usize, seq: u64 },
    /// The supplier ran `call` and returned `outcome`.
    Supplied { call: CallRef, outcome: CallOutcome },
    /// The flusher's turn.
    Flush,
    /// A put's answer reaches the operator.
    Answer(Event),
    /// The coordinator tries to trigger a checkpoint.
    Trigger,
    /// Checkpoint `id` completes.
    Complete { id: u64 },
    /// The task crashes.
    Crash,
    /// The old producer delivers the zombie.
    LandZombie,
}

/// What becomes of a queued put.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Acked,
    FailBeforeLanding,
    FailAfterLanding,
}

/// A record waiting for the flusher.
#[derive(Debug)]
struct Queued {
    key: String,
    put: PutId,
    record: PutRecord,
    fate: Fate,
}

/// A put of a crashed incarnation still with that incarnation's producer.
#[derive(Debug)]
struct Zombie {
    /// The record as sent: its bytes carry the crashed incarnation's epoch.
    record: PutRecord,
    epoch: u64,
    /// The durable call whose result it saves, and the supplier's runs of it at the
    /// crash.
    call: Option<(CallRef, u32)>,
}

/// Per durable call, supplier runs and runs whose result never reached the log.
#[derive(Clone, Copy, Debug, Default)]
struct Runs {
    runs: u32,
    unlanded: u32,
}

/// The driver loop's state: the operator, its log, its incarnation's tasks and what the
/// run did so far.
struct Sim {
    config: Config,
    keys: Vec<String>,
    defs: Vec<ActionDef>,
    storage: Arc<dyn Storage>,
    rng: Rng,
    tx: mpsc::UnboundedSender<Msg>,
    rx: mpsc::UnboundedReceiver<Msg>,
    op: Operator,
    /// The log handle; `None` only inside a crash, between the old handle's drop and
    /// the reopen (the log's directory lock admits one handle at a time).
    log: Option<FileLog>,
    /// Crashes so far: a message of an earlier incarnation is stale.
    inc: u64,
    /// Every task of the current incarnation, aborted at its crash.
    tasks: Vec<JoinHandle<()>>,
    /// Records appended and not yet sent.
    queue: Vec<Queued>,
    flusher_armed: bool,
    /// The durable call each put of this incarnation saves a result of.
    put_calls: HashMap<PutId, CallRef>,
    next_checkpoint: u64,
    pending: Option<Checkpoint>,
    completed: Option<Checkpoint>,
    failures: u8,
    runs: BTreeMap<CallRef, Runs>,
    /// The send a crash left with the producer, not landed yet.
    zombie: Option<Zombie>,
    /// Per partition, the highest epoch a fence was appended with.
    fence_levels: Vec<u64>,
    outcome: Outcome,
}

impl Sim {
    fn new(config: Config, storage: Arc<dyn Storage>) -> Result<Sim, String> {
        let keys = config.key_names();
        let defs = config.defs();
        let (tx, rx) = mpsc::unbounded_channel();
        tracing::info!(
            component = "run",
            event = "start",
            model = "durable",
            keys = config.keys,
            inputs = config.inputs,
            actions = config.actions,
            calls = config.calls,
            partitions = config.partitions,
            crashes = config.crashes,
            checkpoints = config.checkpoints,
            concurrent_checkpoints = 1u8,
            send_failures = config.send_failures,
            seed = config.seed,
            zombie_sends = config.zombie_sends,
            fencing = config.fencing,
            key_names = %keys.join(" "),
            action_names = %config.action_names().join(" "),
            defects = %config.bug_names().join(","),
        );
        let log = open_log(&storage, config.partitions)?;
        let mut op = Operator::new(defs.clone(), u32::from(config.partitions))
            .map_err(|e| format!("starting the operator: {e}"))?;
        op.set_limits(config.limits());
        op.set_defects(&config.defects);
        let rng = Rng::new(config.seed);
        let fence_levels = vec![0; usize::from(config.partitions)];
        Ok(Sim {
            config,
            keys,
            defs,
            storage,
            rng,
            tx,
            rx,
            op,
            log: Some(log),
            inc: 0,
            tasks: Vec::new(),
            queue: Vec::new(),
            flusher_armed: false,
            put_calls: HashMap::new(),
            next_checkpoint: 1,
            pending: None,
            completed: None,
            failures: 0,
            runs: BTreeMap::new(),
            zombie: None,
            fence_levels,
            outcome: Outcome::default(),
        })
    }

    async fn run(&mut self) -> Result<Outcome, String> {
        self.start_incarnation();
        let deadline_ms = self.config.max_delay_ms * DEADLINE_DELAYS;
        let deadline = Instant::now() + Duration::from_millis(deadline_ms);
        while !self.finished() {
            if self.outcome.steps >= MAX_STEPS {
                return Err(format!("the run did not finish within {MAX_STEPS} steps"));
            }
            let msg = match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(msg)) => msg,
                // The loop holds a sender itself, so the channel never closes.
                Ok(None) => return Err("the driver's channel closed".into()),
                Err(_) => {
                    return Err(format!(
                        "the run did not finish within {deadline_ms} virtual ms"
                    ))
                }
            };
            self.outcome.steps += 1;
            self.handle(msg)?;
        }
        // Supplier runs whose outcome is still on its way count too.
        while let Ok(msg) = self.rx.try_recv() {
            if let Message::Supplied { call, .. } = msg.what {
                self.count_run(call, true);
            }
        }
        let mut outcome = self.outcome.clone();
        outcome.calls = self
            .runs
            .iter()
            .map(|(call, r)| CallRuns {
                state: call.state_key(),
                index: call.index,
                runs: r.runs,
                unlanded: r.unlanded,
            })
            .collect();
        Ok(outcome)
    }

    /// Every key's inputs delivered and finished, nothing in flight, and no zombie left
    /// to land.
    fn finished(&self) -> bool {
        let last = u64::from(self.config.inputs) - 1;
        self.keys.iter().all(|k| {
            self.op.keys().get(k).is_some_and(|ks| {
                ks.last_completed == Some(last)
                    && ks.queue.is_empty()
                    && ks.pending_inputs.is_empty()
            })
        }) && self.op.puts_in_flight().is_empty()
            && self.op.outstanding_calls().is_empty()
            && self.zombie.is_none()
    }

    fn handle(&mut self, msg: Msg) -> Result<(), String> {
        if msg.inc != self.inc {
            // Sent before the crash, handled after it: the operator it was for is gone.
            if let Message::Supplied { call, .. } = msg.what {
                self.count_run(call, true);
            }
            return Ok(());
        }
        match msg.what {
            Message::Input { key, seq } => {
                let name = self.keys[key].clone();
                let next = self.op.keys().get(&name).map_or(0, |ks| ks.next_seq);
                if next != seq {
                    return Err(format!(
                        "the source delivered input {seq} of {name}, the operator expects {next}"
                    ));
                }
                self.feed(Event::Input {
                    key: name,
                    value: json!(seq),
                })
            }
            Message::Supplied { call, outcome } => {
                self.count_run(call.clone(), false);
                self.feed(Event::CallReturned { call, outcome })
            }
            Message::Flush => self.flush(),
            Message::Answer(event) => self.feed(event),
            Message::Trigger => self.trigger(),
            Message::Complete { id } => self.complete(id),
            Message::Crash => {
                if self.completed.is_some() {
                    self.crash(false)
                } else {
                    // No restore point yet: the crash waits for one.
                    self.arm_crash();
                    Ok(())
                }
            }
            Message::LandZombie => self.land_zombie(),
        }
    }

    fn count_run(&mut self, call: CallRef, lost: bool) {
        let r = self.runs.entry(call).or_default();
        r.runs += 1;
        if lost {
            r.unlanded += 1;
        }
        self.outcome.supplier_calls += 1;
    }

    /// Hands `event` to the operator and carries out its effects; a failed put fails
    /// the fixed operator, and the task crashes and restores.
    fn feed(&mut self, event: Event) -> Result<(), String> {
        let call = match &event {
            Event::CallReturned { call, .. } => Some(call.clone()),
            _ => None,
        };
        match self.op.handle(event) {
            Ok(effects) => {
                if let Some(call) = call {
                    // The put a returned call causes saves its result.
                    for effect in &effects {
                        if let Effect::Append { put, .. } = effect {
                            self.put_calls.insert(*put, call.clone());
                        }
                    }
                }
                self.execute(effects);
                Ok(())
            }
            Err(OperatorError::PutFailed { .. }) => {
                self.outcome.forced_crashes += 1;
                self.crash(true)
            }
            Err(e) => Err(format!("the operator refused an event: {e}")),
        }
    }

    fn execute(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Call {
                    call,
                    function,
                    args,
                } => {
                    let outcome = CallOutcome::Value(json!(format!("{function}{args}")));
                    let delay = self.delay();
                    let tx = self.tx.clone();
                    let inc = self.inc;
                    self.spawn(async move {
                        sleep(delay).await;
                        tracing::info!(
                            component = "durable.supplier",
                            event = "call",
                            key = %call.key,
                            seq = call.seq,
                            action = %call.action,
                            index = call.index,
                        );
                        let _ = tx.send(Msg {
                            inc,
                            what: Message::Supplied { call, outcome },
                        });
                    });
                }
                Effect::Emit { .. } => self.outcome.outputs += 1,
                Effect::Append { key, put, record } => {
                    let fate = self.fate();
                    self.queue.push(Queued {
                        key,
                        put,
                        record,
                        fate,
                    });
                }
                Effect::Flush => {
                    if !self.flusher_armed {
                        self.flusher_armed = true;
                        let delay = self.delay();
                        self.after(delay, Message::Flush);
                    }
                }
            }
        }
    }

    /// Whether a put fails, and how: only while a failure and a crash are left in the
    /// budgets and a checkpoint completed, so that the crash it forces is one the model
    /// allows.
    fn fate(&mut self) -> Fate {
        let allowed = self.failures < self.config.send_failures
            && self.outcome.crashes < u32::from(self.config.crashes)
            && self.completed.is_some();
        if !allowed || !self.rng.chance(FAILURE_PERCENT) {
            return Fate::Acked;
        }
        self.failures += 1;
        if self.rng.chance(50) {
            self.outcome.failures_before_landing += 1;
            Fate::FailBeforeLanding
        } else {
            self.outcome.failures_after_landing += 1;
            Fate::FailAfterLanding
        }
    }

    /// The flusher's turn: every queued record is sent, one flush makes them durable,
    /// and each put's answer goes back after its own delay.
    fn flush(&mut self) -> Result<(), String> {
        self.flusher_armed = false;
        let queued = std::mem::take(&mut self.queue);
        let mut puts = Vec::new();
        let mut answers = Vec::new();
        for q in queued {
            let call = self.put_calls.remove(&q.put);
            if q.fate == Fate::FailBeforeLanding {
                if let Some(call) = call {
                    self.runs.entry(call).or_default().unlanded += 1;
                }
                let error =
                    LogError::SendFailed("injected failure before the record landed".into());
                answers.push(Event::PutFailed {
                    key: q.key,
                    put: q.put,
                    error,
                });
                continue;
            }
            puts.push(((q.key, q.put, q.fate), q.record));
        }
        // The file log answers a flushed send at once: an acknowledgement still pending
        // after the flush breaks its contract, and stops the run (as a cancelled wait).
        let committed = group_commit(self.log()?, puts, |ack| match ack.poll() {
            AckPoll::Acked(offset) => Ok(offset),
            AckPoll::Failed(e) => Err(AckError::Log(e)),
            AckPoll::Pending => Err(AckError::Cancelled),
        })
        .map_err(|Cancelled| "a flushed send is unacknowledged".to_string())?;
        self.outcome.records_sent += committed.answers.len() as u64;
        if committed.flushed {
            self.outcome.flushes += 1;
        }
        for ((key, put, fate), _, answer) in committed.answers {
            let offset = answer.map_err(|e| format!("the log failed a put: {e}"))?;
            answers.push(match fate {
                Fate::FailAfterLanding => Event::PutFailed {
                    key,
                    put,
                    error: LogError::SendFailed("injected failure after the record landed".into()),
                },
                _ => Event::PutAcked { key, put, offset },
            });
        }
        for answer in answers {
            let delay = self.delay();
            self.after(delay, Message::Answer(answer));
        }
        Ok(())
    }

    /// The coordinator's try: a checkpoint is triggered when the budget allows, none is
    /// pending, and no put is in flight; otherwise it tries again later.
    fn trigger(&mut self) -> Result<(), String> {
        if self.next_checkpoint > u64::from(self.config.checkpoints) || self.pending.is_some() {
            return Ok(());
        }
        if !self.op.puts_in_flight().is_empty() {
            self.retry_trigger();
            return Ok(());
        }
        let ends = self
            .log()?
            .end_offsets()
            .map_err(|e| format!("reading the log's end offsets: {e}"))?;
        let id = self.next_checkpoint;
        match self.op.snapshot(id, &ends) {
            Ok(checkpoint) => {
                self.next_checkpoint += 1;
                self.outcome.checkpoints_triggered += 1;
                self.pending = Some(checkpoint);
                let delay = self.delay();
                self.after(delay, Message::Complete { id });
                Ok(())
            }
            Err(OperatorError::PutInFlight { .. }) => {
                self.outcome.snapshots_refused += 1;
                self.retry_trigger();
                Ok(())
            }
            Err(e) => Err(format!("snapshot {id}: {e}")),
        }
    }

    fn complete(&mut self, id: u64) -> Result<(), String> {
        let Some(checkpoint) = self.pending.take_if(|c| c.id == id) else {
            return Err(format!("checkpoint {id} completed without being pending"));
        };
        if self.op.checkpoint_complete(id).is_none() {
            return Err(format!("the operator does not know checkpoint {id}"));
        }
        self.outcome.checkpoints_completed += 1;
        self.completed = Some(checkpoint);
        self.arm_trigger();
        Ok(())
    }

    /// The task crashes and restarts at once: every task of the incarnation is aborted,
    /// the operator and the log handle are dropped, the log is reopened, fenced, and the
    /// operator restored from the latest completed checkpoint.
    fn crash(&mut self, forced: bool) -> Result<(), String> {
        if !forced && self.outcome.crashes >= u32::from(self.config.crashes) {
            return Ok(());
        }
        tracing::info!(component = "durable.task", event = "crash");
        self.outcome.crashes += 1;
        self.abort_tasks();
        self.inc += 1;
        self.flusher_armed = false;
        self.drop_queue();
        self.put_calls.clear();
        self.pending = None;
        // The old handle goes with the process, before the reopen: the log's directory
        // stays locked while it lives. It holds nothing unsent or unflushed (a flush
        // follows its sends in one step).
        self.log = None;
        self.log = Some(open_log(&self.storage, self.config.partitions)?);
        if self.zombie.is_some() && self.rng.chance(EARLY_ZOMBIE_PERCENT) {
            self.land_zombie()?;
        }
        // The incarnation's epoch: one more than the crashes so far.
        let epoch = self.inc + 1;
        if self.config.fencing {
            self.fence(epoch)?;
        }
        let mut op = self.restored(epoch)?;
        op.set_limits(self.config.limits());
        op.set_defects(&self.config.defects);
        self.op = op;
        self.start_incarnation();
        self.feed(Event::Resume)
    }

    /// The crashed incarnation's queued records: never sent, so lost with the process,
    /// but with `zombie_sends` one may stay with its producer instead. A queued record
    /// is the model's unlanded send (`Crash { landed: false }`): its `put_sent` is
    /// logged and it is in no file; a flushed one has landed, as the file log lands and
    /// flushes in one step. A record not kept is, to the model, a zombie that never lands.
    fn drop_queue(&mut self) {
        let epoch = self.op.epoch();
        for q in std::mem::take(&mut self.queue) {
            let call = self.put_calls.remove(&q.put);
            if let Some(call) = &call {
                // Its result has not reached the log (a zombie's may yet).
                self.runs.entry(call.clone()).or_default().unlanded += 1;
            }
            let keep = self.config.zombie_sends
                && self.zombie.is_none()
                && self.rng.chance(ZOMBIE_PERCENT);
            if keep {
                self.outcome.zombies += 1;
                let call = call.map(|c| {
                    let runs = self.runs.get(&c).map_or(0, |r| r.runs);
                    (c, runs)
                });
                self.zombie = Some(Zombie {
                    record: q.record,
                    epoch,
                    call,
                });
            }
        }
    }

    /// Appends a fence of `epoch` to every partition and awaits the acknowledgements,
    /// as the blocking driver's restore does.
    fn fence(&mut self, epoch: u64) -> Result<(), String> {
        append_fences(self.log()?, epoch, &Cancellation::new())
            .map_err(|e| format!("fencing the log at epoch {epoch}: {e}"))?;
        for level in &mut self.fence_levels {
            *level = epoch;
        }
        Ok(())
    }

    /// The operator of incarnation `epoch`: restored from the completed checkpoint, or
    /// restarted without one (after its own fences, when it fenced).
    fn restored(&mut self, epoch: u64) -> Result<Operator, String> {
        let fencing = self.config.fencing;
        let partitions = u32::from(self.config.partitions);
        let log = self
            .log
            .as_mut()
            .ok_or_else(|| "the log is not open (crashed)".to_string())?;
        match &self.completed {
            Some(checkpoint) => {
                let (op, report) = restore_from_log(self.defs.clone(), checkpoint, log, epoch)
                    .map_err(|e| format!("restoring checkpoint {}: {e}", checkpoint.id))?;
                self.outcome.fenced_skipped += report.fenced_skipped;
                Ok(op)
            }
            None if fencing => restart_without_checkpoint(self.defs.clone(), log, epoch)
                .map_err(|e| format!("restarting the operator: {e}")),
            None => Operator::new_at(self.defs.clone(), partitions, epoch)
                .map_err(|e| format!("restarting the operator: {e}")),
        }
    }

    /// The old producer delivers the zombie's record, late. It is appended through this
    /// incarnation's handle only because the file log admits one writer per directory:
    /// the append stands for the broker taking the crashed producer's request, not for a
    /// send of this incarnation (its bytes carry the old epoch). Behind a newer fence it
    /// is stale; otherwise it is an ordinary record, and if the supplier has not run its
    /// call again since the crash, that call's result reached the log after all.
    fn land_zombie(&mut self) -> Result<(), String> {
        let Some(z) = self.zombie.take() else {
            return Ok(());
        };
        let log = self.log()?;
        let mut ack = log
            .send(z.record.partition, &z.record.key, &z.record.value)
            .map_err(|e| format!("landing a zombie: {e}"))?;
        log.flush().map_err(|e| format!("flushing the log: {e}"))?;
        if !matches!(ack.poll(), AckPoll::Acked(_)) {
            return Err("a zombie's flushed send is unacknowledged".into());
        }
        self.outcome.zombies_landed += 1;
        if self.fence_levels[z.record.partition as usize] > z.epoch {
            self.outcome.zombies_stale += 1;
        } else if let Some((call, runs)) = z.call {
            let r = self.runs.entry(call).or_default();
            if r.runs == runs {
                r.unlanded -= 1;
            }
        }
        Ok(())
    }

    /// Starts the source of every key at the operator's positions, and arms the crash
    /// and the checkpoint coordinator.
    fn start_incarnation(&mut self) {
        for key in 0..self.keys.len() {
            let from = self
                .op
                .keys()
                .get(&self.keys[key])
                .map_or(0, |ks| ks.next_seq);
            let delays: Vec<(u64, u64)> = (from..u64::from(self.config.inputs))
                .map(|seq| (seq, self.delay()))
                .collect();
            if delays.is_empty() {
                continue;
            }
            let tx = self.tx.clone();
            let inc = self.inc;
            self.spawn(async move {
                for (seq, delay) in delays {
                    sleep(delay).await;
                    let _ = tx.send(Msg {
                        inc,
                        what: Message::Input { key, seq },
                    });
                }
            });
        }
        self.arm_crash();
        self.arm_trigger();
        if self.zombie.is_some() {
            let delay = self
                .rng
                .between(0, ZOMBIE_DELAYS * self.config.max_delay_ms);
            self.after(delay, Message::LandZombie);
        }
    }

    fn arm_crash(&mut self) {
        if self.outcome.crashes < u32::from(self.config.crashes) {
            let delay = self.rng.between(1, CRASH_DELAYS * self.config.max_delay_ms);
            self.after(delay, Message::Crash);
        }
    }

    fn arm_trigger(&mut self) {
        if self.next_checkpoint <= u64::from(self.config.checkpoints) {
            let delay = self
                .rng
                .between(1, CHECKPOINT_DELAYS * self.config.max_delay_ms);
            self.after(delay, Message::Trigger);
        }
    }

    /// The coordinator looks again soon: with eager scheduling a put is nearly always
    /// in flight, and the windows between them are short.
    fn retry_trigger(&mut self) {
        let delay = self
            .rng
            .between(1, (self.config.max_delay_ms / RETRY_DIVISOR).max(1));
        self.after(delay, Message::Trigger);
    }

    fn delay(&mut self) -> u64 {
        self.rng.between(0, self.config.max_delay_ms)
    }

    /// A task of the incarnation that sends `what` to the loop after `delay_ms`.
    fn after(&mut self, delay_ms: u64, what: Message) {
        let tx = self.tx.clone();
        let inc = self.inc;
        self.spawn(async move {
            sleep(delay_ms).await;
            let _ = tx.send(Msg { inc, what });
        });
    }

    fn spawn(&mut self, task: impl std::future::Future<Output = ()> + 'static) {
        if self.tasks.len() >= 64 {
            self.tasks.retain(|t| !t.is_finished());
        }
        self.tasks.push(tokio::task::spawn_local(task));
    }

    fn log(&mut self) -> Result<&mut FileLog, String> {
        self.log
            .as_mut()
            .ok_or_else(|| "the log is not open (crashed)".to_string())
    }

    fn abort_tasks(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
    }
}

async fn sleep(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

fn open_log(storage: &Arc<dyn Storage>, partitions: u8) -> Result<FileLog, String> {
    let options = FileLogOptions {
        partitions: Some(u32::from(partitions)),
        ..FileLogOptions::default()
    };
    FileLog::open_on(Arc::clone(storage), LOG_DIR, options)
        .map_err(|e| format!("opening the file log: {e}"))
}
