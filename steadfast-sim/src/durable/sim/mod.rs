//! The driver loop: its messages, its state, and the handling of each message and of
//! the operator's effects in one synchronous section.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use steadfast::durable::{
    ActionDef, CallOutcome, CallRef, Checkpoint, Effect, Event, Operator, OperatorError, PutId,
    PutRecord,
};
use steadfast_log::storage::Storage;
use steadfast_log::{FileLog, FileLogOptions};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{CallRuns, Config, Outcome, DEADLINE_DELAYS, FAILURE_PERCENT, LOG_DIR, MAX_STEPS};
use crate::rng::Rng;

mod commit;
mod crash;
mod tasks;

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
pub(super) struct Sim {
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
    pub(super) fn new(config: Config, storage: Arc<dyn Storage>) -> Result<Sim, String> {
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

    pub(super) async fn run(&mut self) -> Result<Outcome, String> {
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

    pub(super) fn abort_tasks(&mut self) {
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
