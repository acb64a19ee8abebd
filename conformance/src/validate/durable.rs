//! Trace validation of the durable-actions runtime (flink-agents issue 1158): is the log
//! of one task's run (the operator, its store, the supplier and the task's crashes) a
//! behaviour of the durable model?
//!
//! The log names the run's bounds in its header (`component=run`, `model=durable`:
//! keys, inputs, actions, calls, partitions, crashes, checkpoints, pending checkpoints,
//! failing sends, and the key and action names in model order; optionally
//! `zombie_sends` and `fencing`, false when absent), and the validator checks it against
//! the model under those bounds with every environment the runtime may meet: concurrent
//! puts (group commit), a send that fails before or after its record landed, checkpoints
//! between an action's calls, a restart before any checkpoint completed. A header with
//! `zombie_sends` asks for the model's `zombie-sends` (a crashed incarnation's send may
//! land late), whose single zombie needs sequential puts; `fencing` asks for
//! `epoch-fencing` (a restore fences every partition before it reads). The search is
//! `validate::search`'s, over one projection (the task's).
//!
//! Mapping of the model's steps to logged events (the rest of the model's steps log
//! nothing; [`expected_log`]):
//! - `DeliverInput(k)`: `durable.operator input` of key `k` with its next sequence number;
//! - `ReuseResult(k)`: `durable.operator call_reused` with the head's state key and index;
//! - `CallSupplier(k)`: `durable.supplier call`, logged by the supplier as it returns;
//! - `SendPut(k)`, `CompleteAction(k)`: `durable.operator put_sent`, with the results it
//!   saves and whether the action completed;
//! - `AckPut(k)`: `durable.store put` with outcome `acked`, the same state;
//! - `FailPut`: `durable.store put` with outcome `failed`, then `durable.operator failed`;
//! - `TriggerCheckpoint`, `CompleteCheckpoint(id)`: `durable.operator snapshot` and
//!   `checkpoint_complete` with the checkpoint's id (ids count from 1 over the run);
//! - `Crash`: `durable.task crash` (whether the send in flight stays with the producer
//!   as a zombie is not logged); `Restore`: `durable.operator start`, `restored` when a
//!   completed checkpoint is restored (the first start is `restored=false`);
//! - `FencePartition(p)`: `durable.driver fence` of partition `p` (without `fencing` in
//!   the header no step explains a fence);
//! - `LandZombie`: nothing; the old producer's late delivery is invisible to the task.
//!
//! The operator's other events (an input's start, a call requested or returned, an
//! output, a resume, a prune, a rebuild, an aborted checkpoint), the blocking driver's
//! restore, and the logs' own (file, Kafka, in-memory) are internal to those steps and
//! read past; so is `durable.store fenced_record` (a rebuild skipped a stale record),
//! but only inside a restore, between a crash and the next start. Any other event of a
//! durable component is one no model step explains.
//!
//! Two runtimes write such logs: the simulated task (`steadfast simulate durable`) and
//! the blocking `Driver`, whose run over a Kafka log across a SIGKILL and a restart in
//! another process is validated in `kafka-log/tests/sigkill_restart.rs`.

use std::borrow::Cow;
use std::io::Read;

use serde::Deserialize;
use stateright::Model;
use steadfast_model::durable::{Action, Durable, Phase, State};
use steadfast_model::{Settings, Spec};

use super::search::{Entry, Observed, Search, Tracker};
use super::{LogError, Options, Validation, Verdict, Violation};

/// Most model states the report lists.
const REPORTED_STATES: usize = 3;

/// One logged event as the model names it: keys and actions by index, numbers
/// saturated at `u8::MAX` (the model's bounds are far below).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DurableEvent {
    /// The operator started, fresh or restored from a completed checkpoint.
    Start {
        /// Restored from a checkpoint.
        restored: bool,
    },
    /// An input of a key arrived, with its sequence number.
    Input {
        /// The key.
        key: u8,
        /// Its sequence number.
        seq: u8,
    },
    /// A durable call reused the saved result at its index.
    CallReused {
        /// Whose call: key, input, action.
        key: u8,
        /// The input.
        seq: u8,
        /// The action.
        action: u8,
        /// The call's index in the action.
        index: u8,
    },
    /// The supplier returned a durable call's result.
    SupplierCall {
        /// Whose call: key, input, action.
        key: u8,
        /// The input.
        seq: u8,
        /// The action.
        action: u8,
        /// The call's index in the action.
        index: u8,
    },
    /// A put of an action's state was sent.
    PutSent {
        /// Whose state: key, input, action.
        key: u8,
        /// The input.
        seq: u8,
        /// The action.
        action: u8,
        /// Call results it saves.
        results: u8,
        /// Whether it marks the action completed.
        completed: bool,
    },
    /// A put was acknowledged and its state cached.
    PutAcked {
        /// Whose state: key, input, action.
        key: u8,
        /// The input.
        seq: u8,
        /// The action.
        action: u8,
        /// Call results it saves.
        results: u8,
        /// Whether it marks the action completed.
        completed: bool,
    },
    /// A key's put failed.
    PutFailed {
        /// The key.
        key: u8,
    },
    /// The operator failed (the task fails with it).
    Failed,
    /// A checkpoint was taken.
    Snapshot {
        /// Its id.
        checkpoint: u8,
    },
    /// A checkpoint completed.
    CheckpointComplete {
        /// Its id.
        checkpoint: u8,
    },
    /// The task crashed.
    Crash,
    /// A restore's fence record was acknowledged.
    Fence {
        /// Its partition.
        partition: u8,
    },
    /// An event of a durable component that no model step logs.
    Unknown,
}

/// The events model step `action`, taken in `s`, logs, in order, in a design that
/// caches a state at its send (`caches_before_ack`: the unpatched put order) or at its
/// acknowledgement (the fix's). The old order counts a put saved at the send: the store
/// logs the state `acked` right after `put_sent`, and the answer (acknowledgement or
/// failure) logs nothing.
pub fn expected_log(caches_before_ack: bool, s: &State, action: &Action) -> Vec<DurableEvent> {
    let head = |k: u8| s.head(usize::from(k));
    let call = |k: u8| match s.phase[usize::from(k)] {
        Phase::AtCall(i) => i,
        _ => u8::MAX,
    };
    match *action {
        Action::DeliverInput(k) => vec![DurableEvent::Input {
            key: k,
            seq: s.next_seq[usize::from(k)],
        }],
        Action::StartAction(_) | Action::LandPut(_) => Vec::new(),
        Action::ReuseResult(k) => vec![DurableEvent::CallReused {
            key: k,
            seq: head(k).seq,
            action: head(k).action,
            index: call(k),
        }],
        Action::CallSupplier(k) => vec![DurableEvent::SupplierCall {
            key: k,
            seq: head(k).seq,
            action: head(k).action,
            index: call(k),
        }],
        Action::SendPut(k) | Action::CompleteAction(k) => {
            let (results, completed) = match s.phase[usize::from(k)] {
                Phase::HaveResult(i) => (i + 1, false),
                _ => (0, true),
            };
            let (seq, action) = (head(k).seq, head(k).action);
            let sent = DurableEvent::PutSent {
                key: k,
                seq,
                action,
                results,
                completed,
            };
            if caches_before_ack {
                let cached = DurableEvent::PutAcked {
                    key: k,
                    seq,
                    action,
                    results,
                    completed,
                };
                vec![sent, cached]
            } else {
                vec![sent]
            }
        }
        Action::AckPut(_) | Action::FailPut { .. } if caches_before_ack => Vec::new(),
        Action::AckPut(k) => match s.puts[usize::from(k)] {
            Some(put) => {
                let r = put.record;
                vec![DurableEvent::PutAcked {
                    key: r.state_key.key,
                    seq: r.state_key.seq,
                    action: r.state_key.action,
                    results: r.state.calls(),
                    completed: r.state.completed(),
                }]
            }
            None => Vec::new(),
        },
        Action::FailPut { key, .. } => vec![DurableEvent::PutFailed { key }, DurableEvent::Failed],
        Action::TriggerCheckpoint => vec![DurableEvent::Snapshot {
            checkpoint: s.checkpoints + 1,
        }],
        Action::CompleteCheckpoint(id) => vec![DurableEvent::CheckpointComplete { checkpoint: id }],
        Action::FencePartition(partition) => vec![DurableEvent::Fence { partition }],
        // The old producer's late delivery: the task sees nothing of it.
        Action::LandZombie => Vec::new(),
        // Never enabled here: the validator's model leaves `checkpoint-aborts`,
        // `lost-completions` and `rescale` off, as the driver never aborts a checkpoint
        // without a crash, never loses a notification, and runs one operator.
        Action::AbortCheckpoint(_)
        | Action::CompleteCheckpointUnnotified(_)
        | Action::RestoreScaledIn
        | Action::SnapshotSubtask => Vec::new(),
        Action::Crash { .. } => vec![DurableEvent::Crash],
        Action::Restore => vec![DurableEvent::Start {
            restored: s.completed.is_some(),
        }],
    }
}

/// The durable model seen through its log.
struct DurableLog {
    model: Durable,
}

impl Observed for DurableLog {
    type State = State;
    type Action = Action;
    type Record = DurableEvent;
    // A durable log rarely meets a state twice: the memo costs more than it saves.
    const MEMO_LIMIT: usize = 0;

    fn actions(&self, state: &State, out: &mut Vec<Action>) {
        self.model.actions(state, out);
    }

    fn next(&self, state: &State, action: &Action) -> Option<State> {
        self.model.next_state(state, *action)
    }

    fn records(&self, state: &State, action: &Action) -> Vec<DurableEvent> {
        expected_log(self.model.design.caches_before_ack(), state, action)
    }
}

/// The names a run gives the model's keys and actions (its header's).
struct Names {
    keys: Vec<String>,
    actions: Vec<String>,
}

impl Names {
    fn render(&self, e: &DurableEvent) -> String {
        let key = |k: u8| self.keys.get(usize::from(k)).map_or("?", |s| s.as_str());
        let action = |a: u8| self.actions.get(usize::from(a)).map_or("?", |s| s.as_str());
        match *e {
            DurableEvent::Start { restored } => {
                format!("durable.operator start restored={restored}")
            }
            DurableEvent::Input { key: k, seq } => {
                format!("durable.operator input key={} seq={seq}", key(k))
            }
            DurableEvent::CallReused {
                key: k,
                seq,
                action: a,
                index,
            } => format!(
                "durable.operator call_reused key={} seq={seq} action={} index={index}",
                key(k),
                action(a)
            ),
            DurableEvent::SupplierCall {
                key: k,
                seq,
                action: a,
                index,
            } => format!(
                "durable.supplier call key={} seq={seq} action={} index={index}",
                key(k),
                action(a)
            ),
            DurableEvent::PutSent {
                key: k,
                seq,
                action: a,
                results,
                completed,
            } => format!(
                "durable.operator put_sent key={} seq={seq} action={} results={results} completed={completed}",
                key(k),
                action(a)
            ),
            DurableEvent::PutAcked {
                key: k,
                seq,
                action: a,
                results,
                completed,
            } => format!(
                "durable.store put key={} seq={seq} action={} results={results} completed={completed} -> acked",
                key(k),
                action(a)
            ),
            DurableEvent::PutFailed { key: k } => {
                format!("durable.store put key={} -> failed", key(k))
            }
            DurableEvent::Failed => "durable.operator failed".into(),
            DurableEvent::Snapshot { checkpoint } => {
                format!("durable.operator snapshot checkpoint={checkpoint}")
            }
            DurableEvent::CheckpointComplete { checkpoint } => {
                format!("durable.operator checkpoint_complete checkpoint={checkpoint}")
            }
            DurableEvent::Crash => "durable.task crash".into(),
            DurableEvent::Fence { partition } => {
                format!("durable.driver fence partition={partition}")
            }
            DurableEvent::Unknown => "(an event no step logs)".into(),
        }
    }
}

/// One line of the log, as the JSON formatter writes it.
#[derive(Deserialize)]
pub(super) struct Line<'a> {
    #[serde(borrow)]
    fields: Fields<'a>,
}

#[derive(Deserialize, Default)]
struct Fields<'a> {
    #[serde(borrow, default)]
    component: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    event: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    outcome: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    key: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    action: Option<Cow<'a, str>>,
    #[serde(default)]
    seq: Option<u64>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    results: Option<u64>,
    #[serde(default)]
    completed: Option<bool>,
    #[serde(default)]
    checkpoint: Option<u64>,
    #[serde(default)]
    restored: Option<bool>,
    #[serde(default)]
    partition: Option<u64>,
    // The run header's.
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    keys: Option<u64>,
    #[serde(default)]
    inputs: Option<u64>,
    #[serde(default)]
    actions: Option<u64>,
    #[serde(default)]
    calls: Option<u64>,
    #[serde(default)]
    partitions: Option<u64>,
    #[serde(default)]
    crashes: Option<u64>,
    #[serde(default)]
    checkpoints: Option<u64>,
    #[serde(default)]
    concurrent_checkpoints: Option<u64>,
    #[serde(default)]
    send_failures: Option<u64>,
    #[serde(borrow, default)]
    key_names: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    action_names: Option<Cow<'a, str>>,
    #[serde(default)]
    zombie_sends: Option<bool>,
    #[serde(default)]
    fencing: Option<bool>,
}

fn small(n: u64) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

/// The model a run header describes, and its names.
fn from_header(f: &Fields<'_>, design: &str, line: u64) -> Result<(Durable, Names), LogError> {
    let err = |why: String| LogError { line, why };
    let mut overrides: Vec<(&str, String)> = Vec::new();
    for (param, value) in [
        ("keys", f.keys),
        ("inputs", f.inputs),
        ("actions", f.actions),
        ("calls", f.calls),
        ("partitions", f.partitions),
        ("crashes", f.crashes),
        ("checkpoints", f.checkpoints),
        ("concurrent-checkpoints", f.concurrent_checkpoints),
        ("send-failures", f.send_failures),
    ] {
        let value = value.ok_or_else(|| {
            err(format!(
                "the run header has no `{}` field",
                param.replace('-', "_")
            ))
        })?;
        overrides.push((param, value.to_string()));
    }
    // Every environment the runtime may meet.
    for param in [
        "fail-after-landing",
        "mid-action-checkpoints",
        "restart-without-checkpoint",
    ] {
        overrides.push((param, "true".into()));
    }
    // Optional flags, absent in logs written before them. The model keeps one zombie
    // send at a time, which needs sequential puts: a runtime that reports zombie sends
    // puts one record at a time.
    let zombie_sends = f.zombie_sends.unwrap_or(false);
    overrides.push(("zombie-sends", zombie_sends.to_string()));
    overrides.push(("concurrent-puts", (!zombie_sends).to_string()));
    overrides.push(("epoch-fencing", f.fencing.unwrap_or(false).to_string()));
    overrides.push(("synchronous-puts", "true".into()));
    overrides.push(("compact-offsets", "true".into()));
    let pairs: Vec<(&str, &str)> = overrides.iter().map(|(p, v)| (*p, v.as_str())).collect();
    let settings = Settings::parse(Durable::params(), &pairs)
        .map_err(|e| err(format!("the run header's bounds: {e}")))?;
    let model = Durable::build(design, &settings).map_err(|e| err(e.to_string()))?;
    let names = |field: &Option<Cow<'_, str>>, what: &str, want: u8| {
        let list: Vec<String> = field
            .as_deref()
            .ok_or_else(|| err(format!("the run header has no `{what}_names` field")))?
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        if list.len() != usize::from(want) {
            return Err(err(format!(
                "the run header names {} {what}s for {want}",
                list.len()
            )));
        }
        Ok(list)
    };
    let keys = names(&f.key_names, "key", model.bounds.keys)?;
    let actions = names(&f.action_names, "action", model.bounds.actions)?;
    let partitions = u32::from(model.bounds.partitions);
    for (k, name) in keys.iter().enumerate() {
        let want = k as u32 % partitions;
        let got = steadfast::durable::partition_for(name, partitions);
        if got != want {
            return Err(err(format!(
                "key {name} writes to partition {got}, the model's key {k} to partition {want}"
            )));
        }
    }
    Ok((model, Names { keys, actions }))
}

/// The model's event for a log line's fields; `None` for an event internal to a step.
/// `restoring`: the line comes between a crash and the next start, where a rebuild may
/// skip stale records.
fn event_of(
    f: &Fields<'_>,
    names: &Names,
    line: u64,
    restoring: bool,
) -> Result<Option<DurableEvent>, LogError> {
    let err = |why: String| LogError { line, why };
    let component = f
        .component
        .as_deref()
        .ok_or_else(|| err("an event without a `component` field".into()))?;
    let event = f
        .event
        .as_deref()
        .ok_or_else(|| err(format!("a {component} event without an `event` field")))?;
    let need = |name: &str, v: Option<u64>| {
        v.map(small).ok_or_else(|| {
            err(format!(
                "a {component} {event} event without a `{name}` field"
            ))
        })
    };
    let flag = |name: &str, v: Option<bool>| {
        v.ok_or_else(|| {
            err(format!(
                "a {component} {event} event without a `{name}` field"
            ))
        })
    };
    let key = || {
        let name = f
            .key
            .as_deref()
            .ok_or_else(|| err(format!("a {component} {event} event without a `key` field")))?;
        names
            .keys
            .iter()
            .position(|k| k == name)
            .map(|k| k as u8)
            .ok_or_else(|| err(format!("key {name:?} is not one the run header names")))
    };
    let action = || {
        let name = f.action.as_deref().ok_or_else(|| {
            err(format!(
                "a {component} {event} event without an `action` field"
            ))
        })?;
        names
            .actions
            .iter()
            .position(|a| a == name)
            .map(|a| a as u8)
            .ok_or_else(|| err(format!("action {name:?} is not one the run header names")))
    };
    let call = |supplier: bool| -> Result<DurableEvent, LogError> {
        let (key, seq, action, index) = (
            key()?,
            need("seq", f.seq)?,
            action()?,
            need("index", f.index)?,
        );
        Ok(if supplier {
            DurableEvent::SupplierCall {
                key,
                seq,
                action,
                index,
            }
        } else {
            DurableEvent::CallReused {
                key,
                seq,
                action,
                index,
            }
        })
    };
    let e = match (component, event) {
        ("durable.operator", "start") => DurableEvent::Start {
            restored: flag("restored", f.restored)?,
        },
        ("durable.operator", "input") => DurableEvent::Input {
            key: key()?,
            seq: need("seq", f.seq)?,
        },
        ("durable.operator", "call_reused") => call(false)?,
        ("durable.supplier", "call") => call(true)?,
        ("durable.operator", "put_sent") => DurableEvent::PutSent {
            key: key()?,
            seq: need("seq", f.seq)?,
            action: action()?,
            results: need("results", f.results)?,
            completed: flag("completed", f.completed)?,
        },
        ("durable.store", "put") => match f.outcome.as_deref() {
            Some("acked") => DurableEvent::PutAcked {
                key: key()?,
                seq: need("seq", f.seq)?,
                action: action()?,
                results: need("results", f.results)?,
                completed: flag("completed", f.completed)?,
            },
            Some("failed") => DurableEvent::PutFailed { key: key()? },
            // A record a restore's rebuild read back: part of the restore.
            Some("replayed") => return Ok(None),
            Some(_) => DurableEvent::Unknown,
            None => {
                return Err(err(
                    "a durable.store put event without an `outcome` field".into()
                ))
            }
        },
        ("durable.operator", "failed") => DurableEvent::Failed,
        ("durable.operator", "snapshot") => DurableEvent::Snapshot {
            checkpoint: need("checkpoint", f.checkpoint)?,
        },
        ("durable.operator", "checkpoint_complete") => DurableEvent::CheckpointComplete {
            checkpoint: need("checkpoint", f.checkpoint)?,
        },
        ("durable.task", "crash") => DurableEvent::Crash,
        ("durable.driver", "fence") => DurableEvent::Fence {
            partition: need("partition", f.partition)?,
        },
        // A rebuild's skip of a record behind a newer fence: part of a restore only.
        ("durable.store", "fenced_record") if restoring => return Ok(None),
        (
            "durable.operator",
            "input_started"
            | "call_requested"
            | "call_returned"
            | "action_completed"
            | "action_reused_completed"
            | "emit"
            | "resume"
            | "checkpoint_aborted"
            | "checkpoint_evicted",
        )
        | ("durable.store", "prune" | "recovery_marker" | "rebuild")
        | ("durable.driver", "restore")
        | ("durable.file_log" | "durable.kafka_log" | "durable.memory_log", _) => return Ok(None),
        (
            "durable.operator" | "durable.store" | "durable.supplier" | "durable.task"
            | "durable.driver",
            _,
        ) => DurableEvent::Unknown,
        (other, _) => {
            return Err(err(format!(
                "an event of an unknown component `{other}` in a durable log"
            )))
        }
    };
    Ok(Some(e))
}

/// An event line as a short phrase: component, event and the fields the model reads.
fn shown(f: &Fields<'_>) -> String {
    let mut out = format!(
        "{} {}",
        f.component.as_deref().unwrap_or("?"),
        f.event.as_deref().unwrap_or("?")
    );
    for (name, value) in [("key", &f.key), ("action", &f.action)] {
        if let Some(v) = value {
            out.push_str(&format!(" {name}={v}"));
        }
    }
    for (name, value) in [
        ("partition", f.partition),
        ("seq", f.seq),
        ("index", f.index),
        ("results", f.results),
        ("checkpoint", f.checkpoint),
    ] {
        if let Some(v) = value {
            out.push_str(&format!(" {name}={v}"));
        }
    }
    for (name, value) in [("completed", f.completed), ("restored", f.restored)] {
        if let Some(v) = value {
            out.push_str(&format!(" {name}={v}"));
        }
    }
    if let Some(o) = f.outcome.as_deref() {
        out.push_str(&format!(" -> {o}"));
    }
    out
}

/// Validates the log read from `input` against the durable model (design `fixed` unless
/// `options` names another) under the bounds its run header names.
pub fn validate_durable(input: impl Read, options: Options) -> Result<Validation, LogError> {
    validate_lines(super::LogLines::new(input), options, super::MAX_PLACES)
}

/// [`validate_durable`] of `lines`, with at most `limit` places at once.
pub(super) fn validate_lines<R: Read>(
    mut lines: super::LogLines<R>,
    options: Options,
    limit: usize,
) -> Result<Validation, LogError> {
    let design = options.design.unwrap_or("fixed");
    if !Durable::designs().contains(&design) {
        return Err(LogError {
            line: 0,
            why: format!(
                "unknown design `{design}` for durable (known: {})",
                Durable::designs().join(", ")
            ),
        });
    }
    if options.late_signal.is_some() {
        return Err(LogError {
            line: 0,
            why: "`late-signal` is a setting of the leadership model, not of durable".into(),
        });
    }
    let mut line_no = 0u64;
    let mut out = Validation {
        model: "durable",
        lines: 0,
        events: 0,
        jobs: 1,
        widest: 0,
        late_signal: false,
        verdict: Verdict::Valid,
        violations: Vec::new(),
    };
    let mut run: Option<(Search<DurableLog>, Names, Tracker<State, DurableEvent>)> = None;
    let mut safety: Vec<stateright::Property<Durable>> = Vec::new();
    // Between a crash and the next start: a restore is under way.
    let mut restoring = false;
    while let Some((line_no_now, text)) = lines.next_line()? {
        line_no = line_no_now;
        let parsed: Line<'_> = serde_json::from_str(text).map_err(|e| LogError {
            line: line_no,
            why: format!("not a log event: {e}"),
        })?;
        let f = parsed.fields;
        if f.component.as_deref() == Some("run") {
            if run.is_some() {
                return Err(LogError {
                    line: line_no,
                    why: "a second run header".into(),
                });
            }
            match f.model.as_deref() {
                Some("durable") => {}
                Some(other) => {
                    return Err(LogError {
                        line: line_no,
                        why: format!("a log of the {other} model, not of durable"),
                    })
                }
                None => {
                    return Err(LogError {
                        line: line_no,
                        why: "the run header has no `model` field".into(),
                    })
                }
            }
            let (model, names) = from_header(&f, design, line_no)?;
            safety = model
                .properties()
                .into_iter()
                .filter(|p| p.expectation == stateright::Expectation::Always)
                .collect();
            let init = model.init_states().remove(0);
            let mut tracker = Tracker::new(Entry::new(
                init,
                vec![DurableEvent::Start { restored: false }],
            ));
            tracker.limit = limit;
            run = Some((Search::new(DurableLog { model }), names, tracker));
            continue;
        }
        let Some((search, names, tracker)) = run.as_mut() else {
            return Err(LogError {
                line: line_no,
                why: "a durable log starts with its run header (component=run, model=durable)"
                    .into(),
            });
        };
        out.events += 1;
        let Some(event) = event_of(&f, names, line_no, restoring)? else {
            continue;
        };
        match event {
            DurableEvent::Crash => restoring = true,
            DurableEvent::Start { .. } => restoring = false,
            _ => {}
        }
        let taken = tracker.take(search, &event).map_err(|w| LogError {
            line: line_no,
            why: w.why(),
        })?;
        if !taken {
            let (possible, states) = tracker.states(REPORTED_STATES);
            let expected = tracker.expected(search, |e| names.render(e));
            out.lines = line_no;
            out.verdict = Verdict::Unexplained {
                line: line_no,
                job: 0,
                event: shown(&f),
                possible,
                states,
                expected,
            };
            return Ok(out);
        }
        out.widest = out.widest.max(tracker.frontier.len());
        for property in tracker.newly_broken(&search.observed.model, &safety) {
            out.violations.push(Violation {
                property,
                job: 0,
                line: line_no,
                event: shown(&f),
            });
        }
    }
    out.lines = lines.read();
    let Some((_, names, tracker)) = run.as_ref() else {
        return Err(LogError {
            line: 0,
            why: if line_no == 0 {
                "the log is empty".into()
            } else {
                "the log has no run header (component=run, model=durable)".into()
            },
        });
    };
    if !tracker.complete() {
        let missing = tracker
            .frontier
            .first()
            .and_then(|e| e.owed().first().copied())
            .map(|e| names.render(&e))
            .unwrap_or_default();
        out.verdict = Verdict::Truncated { job: 0, missing };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"fields":{"component":"run","event":"start","model":"durable","keys":2,"inputs":2,"actions":1,"calls":2,"partitions":1,"crashes":2,"checkpoints":3,"concurrent_checkpoints":1,"send_failures":1,"key_names":"key0.0 key1.0","action_names":"action0"}}"#;

    /// The log line the runtime writes for `e`.
    fn line(e: &DurableEvent) -> String {
        let key = |k: u8| format!("key{k}.0");
        let fields = match *e {
            DurableEvent::Start { restored } => {
                serde_json::json!({"component": "durable.operator", "event": "start", "restored": restored})
            }
            DurableEvent::Input { key: k, seq } => {
                serde_json::json!({"component": "durable.operator", "event": "input", "key": key(k), "seq": seq})
            }
            DurableEvent::CallReused {
                key: k,
                seq,
                action,
                index,
            } => serde_json::json!({
                "component": "durable.operator", "event": "call_reused", "key": key(k), "seq": seq,
                "action": format!("action{action}"), "index": index}),
            DurableEvent::SupplierCall {
                key: k,
                seq,
                action,
                index,
            } => serde_json::json!({
                "component": "durable.supplier", "event": "call", "key": key(k), "seq": seq,
                "action": format!("action{action}"), "index": index}),
            DurableEvent::PutSent {
                key: k,
                seq,
                action,
                results,
                completed,
            } => serde_json::json!({
                "component": "durable.operator", "event": "put_sent", "key": key(k), "seq": seq,
                "action": format!("action{action}"), "results": results, "completed": completed, "put": 7}),
            DurableEvent::PutAcked {
                key: k,
                seq,
                action,
                results,
                completed,
            } => serde_json::json!({
                "component": "durable.store", "event": "put", "key": key(k), "seq": seq,
                "action": format!("action{action}"), "results": results, "completed": completed,
                "outcome": "acked", "offset": 3}),
            DurableEvent::PutFailed { key: k } => serde_json::json!({
                "component": "durable.store", "event": "put", "key": key(k), "outcome": "failed"}),
            DurableEvent::Failed => {
                serde_json::json!({"component": "durable.operator", "event": "failed"})
            }
            DurableEvent::Snapshot { checkpoint } => serde_json::json!({
                "component": "durable.operator", "event": "snapshot", "checkpoint": checkpoint}),
            DurableEvent::CheckpointComplete { checkpoint } => serde_json::json!({
                "component": "durable.operator", "event": "checkpoint_complete", "checkpoint": checkpoint}),
            DurableEvent::Crash => {
                serde_json::json!({"component": "durable.task", "event": "crash"})
            }
            DurableEvent::Fence { partition } => serde_json::json!({
                "component": "durable.driver", "event": "fence", "partition": partition,
                "offset": 5, "epoch": 2}),
            DurableEvent::Unknown => {
                serde_json::json!({"component": "durable.operator", "event": "bogus"})
            }
        };
        serde_json::json!({ "timestamp": "0", "level": "INFO", "fields": fields }).to_string()
    }

    /// [`HEADER`] with zombie sends and fencing.
    fn fenced_header() -> String {
        HEADER.replace(
            "\"action_names\"",
            "\"zombie_sends\":true,\"fencing\":true,\"action_names\"",
        )
    }

    /// A seeded random walk of the validator's model, as log lines (the header first),
    /// with an internal event between steps.
    fn walk(seed: u64, steps: usize) -> Vec<String> {
        walk_under(HEADER, seed, steps)
    }

    /// [`walk`] of the model `header` names.
    fn walk_under(header_line: &str, seed: u64, steps: usize) -> Vec<String> {
        let header: Line<'_> = serde_json::from_str(header_line).unwrap();
        let (model, _) = from_header(&header.fields, "fixed", 1).unwrap();
        let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut s = model.init_states().remove(0);
        let mut out = vec![
            header_line.to_string(),
            line(&DurableEvent::Start { restored: false }),
        ];
        for _ in 0..steps {
            let mut enabled = Vec::new();
            model.actions(&s, &mut enabled);
            if enabled.is_empty() {
                break;
            }
            let a = enabled[(next() % enabled.len() as u64) as usize];
            out.extend(expected_log(false, &s, &a).iter().map(line));
            out.push(r#"{"fields":{"component":"durable.operator","event":"emit","key":"key0.0","seq":0}}"#.into());
            s = model.next_state(&s, a).unwrap();
        }
        out
    }

    fn check(lines: &[String]) -> Result<Validation, LogError> {
        validate_durable(lines.join("\n").as_bytes(), Options::default())
    }

    #[test]
    fn model_walks_are_valid_and_their_corruptions_are_not() {
        let mut rejected = 0;
        for seed in 0..30 {
            let lines = walk(seed, 60);
            let v = check(&lines).unwrap();
            assert!(v.is_valid(), "seed {seed}: {:?}", v.verdict);
            assert_eq!(v.model, "durable");
            // Removing one model event (not the header, not an internal one) breaks it,
            // unless the walk could have gone without it; at least most removals are
            // caught, and a removal is reported at or after the removed line.
            for at in (2..lines.len()).step_by(7) {
                if lines[at].contains("\"emit\"") {
                    continue;
                }
                let mut cut = lines.clone();
                cut.remove(at);
                let v = check(&cut).unwrap();
                if let Verdict::Unexplained { line, .. } = v.verdict {
                    assert!(
                        line as usize > at,
                        "seed {seed}: cut {at}, reported at {line}"
                    );
                    rejected += 1;
                }
            }
        }
        assert!(rejected > 50, "only {rejected} removals rejected");
    }

    #[test]
    fn fenced_walks_are_valid_and_their_fences_are_not_without_fencing() {
        let header = fenced_header();
        let fence = r#""event":"fence""#;
        let mut fenced = Vec::new();
        for seed in 0..30 {
            let lines = walk_under(&header, seed, 80);
            let v = check(&lines).unwrap();
            assert!(v.is_valid(), "seed {seed}: {:?}", v.verdict);
            if let Some(at) = lines.iter().position(|l| l.contains(fence)) {
                fenced.push((lines, at));
            }
        }
        assert!(fenced.len() >= 5, "only {} walks fenced", fenced.len());
        for (lines, at) in fenced {
            // Said off, or not said at all (a log from before the flag).
            for unfenced in [
                header.replace(r#""fencing":true"#, r#""fencing":false"#),
                header.replace(r#""fencing":true,"#, ""),
            ] {
                let mut lines = lines.clone();
                lines[0] = unfenced;
                let v = check(&lines).unwrap();
                let Verdict::Unexplained { line, event, .. } = v.verdict else {
                    panic!("{:?}", v.verdict)
                };
                assert_eq!(line as usize, at + 1);
                assert_eq!(event, "durable.driver fence partition=0");
            }
        }
    }

    #[test]
    fn a_fenced_record_is_read_past_only_inside_a_restore() {
        let skipped = r#"{"fields":{"component":"durable.store","event":"fenced_record","partition":0,"offset":4,"epoch":1,"fence":2}}"#;
        let start = line(&DurableEvent::Start { restored: false });
        let restore = vec![
            fenced_header(),
            start.clone(),
            line(&DurableEvent::Crash),
            line(&DurableEvent::Fence { partition: 0 }),
            skipped.to_string(),
            start.clone(),
        ];
        let v = check(&restore).unwrap();
        assert!(v.is_valid(), "{:?}", v.verdict);
        // A fence of a partition the log does not have is no step's.
        let mut wrong = restore.clone();
        wrong[3] = line(&DurableEvent::Fence { partition: 1 });
        let v = check(&wrong).unwrap();
        assert!(
            matches!(v.verdict, Verdict::Unexplained { line: 4, .. }),
            "{:?}",
            v.verdict
        );
        // Outside a restore a skipped record is unexplained.
        for at in [2, 6] {
            let mut lines = restore.clone();
            lines.insert(at, skipped.to_string());
            let v = check(&lines).unwrap();
            let Verdict::Unexplained { line, event, .. } = v.verdict else {
                panic!("{:?}", v.verdict)
            };
            assert_eq!(line as usize, at + 1);
            assert_eq!(event, "durable.store fenced_record partition=0");
        }
    }

    #[test]
    fn a_repeated_supplier_call_is_named() {
        let mut lines = vec![
            HEADER.to_string(),
            line(&DurableEvent::Start { restored: false }),
        ];
        let call = DurableEvent::SupplierCall {
            key: 0,
            seq: 0,
            action: 0,
            index: 0,
        };
        for e in [
            DurableEvent::Input { key: 0, seq: 0 },
            call,
            DurableEvent::PutSent {
                key: 0,
                seq: 0,
                action: 0,
                results: 1,
                completed: false,
            },
            DurableEvent::PutAcked {
                key: 0,
                seq: 0,
                action: 0,
                results: 1,
                completed: false,
            },
            call,
        ] {
            lines.push(line(&e));
        }
        let v = check(&lines).unwrap();
        let Verdict::Unexplained {
            line,
            event,
            expected,
            ..
        } = v.verdict
        else {
            panic!("{:?}", v.verdict)
        };
        assert_eq!(line, 7);
        assert_eq!(
            event,
            "durable.supplier call key=key0.0 action=action0 seq=0 index=0"
        );
        assert!(
            expected.iter().any(
                |e| e.contains("durable.supplier call key=key0.0 seq=0 action=action0 index=1")
            ),
            "{expected:?}"
        );
    }

    #[test]
    fn the_logs_and_the_blocking_drivers_own_events_are_read_past() {
        let start = line(&DurableEvent::Start { restored: false });
        let input = line(&DurableEvent::Input { key: 0, seq: 0 });
        let mut lines = vec![HEADER.to_string()];
        for component in ["kafka_log", "file_log", "memory_log"] {
            lines.push(format!(
                r#"{{"fields":{{"component":"durable.{component}","event":"open"}}}}"#
            ));
        }
        lines.push(start);
        lines.push(r#"{"fields":{"component":"durable.driver","event":"restore"}}"#.into());
        lines.push(input.clone());
        let v = check(&lines).unwrap();
        assert!(v.is_valid(), "{:?}", v.verdict);
        assert_eq!(v.events, 6);
        // Any other event of the driver is one no step explains.
        lines.insert(
            6,
            r#"{"fields":{"component":"durable.driver","event":"supplier_ran"}}"#.into(),
        );
        let v = check(&lines).unwrap();
        let Verdict::Unexplained { line, .. } = v.verdict else {
            panic!("{:?}", v.verdict)
        };
        assert_eq!(line, 7);
    }

    #[test]
    fn bad_logs_get_one_line_errors() {
        let start = line(&DurableEvent::Start { restored: false });
        let cases: Vec<(Vec<String>, &str)> = vec![
            (vec![start.clone()], "starts with its run header"),
            (vec![HEADER.replace("\"keys\":2,", "")], "no `keys` field"),
            (
                vec![HEADER.replace("\"keys\":2", "\"keys\":9")],
                "run header's bounds",
            ),
            (vec![HEADER.replace("key1.0", "")], "names 1 keys for 2"),
            (
                vec![
                    HEADER.into(),
                    start.replace("durable.operator", "durable.elsewhere"),
                ],
                "unknown component",
            ),
            (
                vec![
                    HEADER.into(),
                    start.clone(),
                    line(&DurableEvent::Input { key: 0, seq: 0 }).replace("key0.0", "nokey"),
                ],
                "not one the run header names",
            ),
            (
                vec![
                    HEADER.into(),
                    start.replace("\"restored\":false", "\"x\":1"),
                ],
                "without a `restored` field",
            ),
            (vec![HEADER.into(), HEADER.into()], "a second run header"),
            (vec![], "the log is empty"),
            (vec!["".into(), "  ".into(), "".into()], "the log is empty"),
        ];
        for (lines, named) in cases {
            let e = check(&lines).expect_err(named);
            assert!(e.to_string().contains(named), "{e} (wanted {named:?})");
            assert!(!e.to_string().contains('\n'));
        }
        let v = check(&[HEADER.into(), start, line(&DurableEvent::Unknown)]).unwrap();
        assert!(
            matches!(v.verdict, Verdict::Unexplained { line: 3, .. }),
            "{:?}",
            v.verdict
        );
    }

    #[test]
    fn a_log_that_names_too_little_is_refused_not_followed() {
        let text = walk(3, 60).join("\n");
        let widest = check(&text.split('\n').map(str::to_owned).collect::<Vec<_>>())
            .unwrap()
            .widest;
        assert!(widest >= 2, "{widest}");
        assert!(validate_lines(
            super::super::LogLines::new(text.as_bytes()),
            Options::default(),
            widest
        )
        .is_ok());
        let e = validate_lines(
            super::super::LogLines::new(text.as_bytes()),
            Options::default(),
            widest - 1,
        )
        .unwrap_err();
        assert!(e.line > 2, "{e}");
        assert_eq!(
            e.why,
            format!(
                "more than {} model places are possible at once: the log names too little to follow",
                widest - 1
            )
        );
        let late = Options {
            late_signal: Some(true),
            ..Options::default()
        };
        let e = validate_durable(text.as_bytes(), late).unwrap_err();
        assert!(
            e.why
                .contains("`late-signal` is a setting of the leadership model"),
            "{e}"
        );
    }

    #[test]
    fn blank_lines_before_the_header_are_counted_not_kept() {
        let mut lines = vec![
            HEADER.to_string(),
            line(&DurableEvent::Start { restored: false }),
        ];
        lines.push(line(&DurableEvent::Unknown));
        // Far more blank bytes than one line may hold.
        let blank = "\n".repeat(200_000);
        let text = format!("{blank}{}", lines.join("\n"));
        let v = super::super::validate(text.as_bytes(), Options::default()).unwrap();
        assert_eq!(v.model, "durable");
        assert!(
            matches!(v.verdict, Verdict::Unexplained { line: 200_003, .. }),
            "{:?}",
            v.verdict
        );
        let e = super::super::validate(blank.as_bytes(), Options::default()).unwrap_err();
        assert_eq!(e.to_string(), "the log is empty");
    }

    #[test]
    fn a_log_cut_inside_a_step_is_truncated() {
        let mut lines = vec![
            HEADER.to_string(),
            line(&DurableEvent::Start { restored: false }),
        ];
        lines.push(line(&DurableEvent::Input { key: 0, seq: 0 }));
        lines.push(line(&DurableEvent::SupplierCall {
            key: 0,
            seq: 0,
            action: 0,
            index: 0,
        }));
        lines.push(line(&DurableEvent::PutSent {
            key: 0,
            seq: 0,
            action: 0,
            results: 1,
            completed: false,
        }));
        // The crash budget needs no checkpoint (restart-without-checkpoint).
        lines.push(line(&DurableEvent::PutFailed { key: 0 }));
        let v = check(&lines).unwrap();
        assert_eq!(
            v.verdict,
            Verdict::Truncated {
                job: 0,
                missing: "durable.operator failed".into()
            }
        );
    }
}
