//! The durable action operator of flink-agents issue 1158 runs concurrently: a source,
//! a supplier, a log with group commit, a checkpoint coordinator and task crashes, all on
//! a tokio runtime, around the production sans-IO
//! [`Operator`](steadfast::durable::Operator) and [`FileLog`](steadfast_log::FileLog).
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

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
/// The seed bugs the operator can carry, with their command-line names.
pub use steadfast::durable::Defect;
use steadfast::durable::{partition_for, ActionDef, CallChain, Limits, StateKey};
use steadfast_log::storage::Storage;
use tokio::time::Instant;

use crate::log::LogFile;
pub use crate::RunError;

mod rooted;
mod sim;

use rooted::Rooted;
use sim::Sim;

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
pub fn run(config: &Config, log_path: &Path, data_dir: &Path) -> Result<Outcome, RunError> {
    config.check().map_err(RunError::Config)?;
    let io = |what: String| move |error| RunError::Io { what, error };
    let empty = std::fs::read_dir(data_dir)
        .map_err(io(format!("data directory {}", data_dir.display())))?
        .next()
        .is_none();
    if !empty {
        return Err(RunError::Config(format!(
            "data directory {} is not empty",
            data_dir.display()
        )));
    }
    let log = LogFile::create(log_path)
        .map_err(io(format!("creating the log {}", log_path.display())))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(io("starting the runtime".to_string()))?;
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
        .map_err(io(format!("writing the log {}", log_path.display())))?;
    let mut outcome = result.map_err(RunError::Failed)?;
    outcome.events = lines;
    Ok(outcome)
}
