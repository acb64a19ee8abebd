//! A durable log's lines as the model reads them: the JSON fields, the run header's
//! bounds and names, and the model event each line stands for.

use super::*;

/// One line of the log, as the JSON formatter writes it.
#[derive(Deserialize)]
pub(super) struct Line<'a> {
    #[serde(borrow)]
    pub(super) fields: Fields<'a>,
}

#[derive(Deserialize, Default)]
pub(super) struct Fields<'a> {
    #[serde(borrow, default)]
    pub(super) component: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) event: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) outcome: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) key: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) action: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) seq: Option<u64>,
    #[serde(default)]
    pub(super) index: Option<u64>,
    #[serde(default)]
    pub(super) results: Option<u64>,
    #[serde(default)]
    pub(super) completed: Option<bool>,
    #[serde(default)]
    pub(super) checkpoint: Option<u64>,
    #[serde(default)]
    pub(super) restored: Option<bool>,
    #[serde(default)]
    pub(super) partition: Option<u64>,
    // The run header's.
    #[serde(borrow, default)]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) keys: Option<u64>,
    #[serde(default)]
    pub(super) inputs: Option<u64>,
    #[serde(default)]
    pub(super) actions: Option<u64>,
    #[serde(default)]
    pub(super) calls: Option<u64>,
    #[serde(default)]
    pub(super) partitions: Option<u64>,
    #[serde(default)]
    pub(super) crashes: Option<u64>,
    #[serde(default)]
    pub(super) checkpoints: Option<u64>,
    #[serde(default)]
    pub(super) concurrent_checkpoints: Option<u64>,
    #[serde(default)]
    pub(super) send_failures: Option<u64>,
    #[serde(borrow, default)]
    pub(super) key_names: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) action_names: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) zombie_sends: Option<bool>,
    #[serde(default)]
    pub(super) fencing: Option<bool>,
}

pub(super) fn small(n: u64) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

/// The model a run header describes, and its names.
pub(super) fn from_header(
    f: &Fields<'_>,
    design: &str,
    line: u64,
) -> Result<(Durable, Names), LogError> {
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
pub(super) fn event_of(
    f: &Fields<'_>,
    names: &Names,
    line: u64,
    restoring: bool,
) -> Result<Option<DurableEvent>, LogError> {
    let r = LineReader::new(f, names, line)?;
    let e = match (r.component, r.event) {
        ("durable.operator", "start") => DurableEvent::Start {
            restored: r.flag("restored", f.restored)?,
        },
        ("durable.operator", "input") => r.input()?,
        ("durable.operator", "call_reused") => r.call(false)?,
        ("durable.supplier", "call") => r.call(true)?,
        ("durable.operator", "put_sent") => r.put_sent()?,
        ("durable.store", "put") => return r.put(),
        ("durable.operator", "failed") => DurableEvent::Failed,
        ("durable.operator", "snapshot") => DurableEvent::Snapshot {
            checkpoint: r.need("checkpoint", f.checkpoint)?,
        },
        ("durable.operator", "checkpoint_complete") => DurableEvent::CheckpointComplete {
            checkpoint: r.need("checkpoint", f.checkpoint)?,
        },
        ("durable.task", "crash") => DurableEvent::Crash,
        ("durable.driver", "fence") => DurableEvent::Fence {
            partition: r.need("partition", f.partition)?,
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
            return Err(r.err(format!(
                "an event of an unknown component {} in a durable log",
                quote(other)
            )))
        }
    };
    Ok(Some(e))
}

/// One log line's fields as the model reads them, each missing or unknown one an error
/// naming the line and the event.
struct LineReader<'a, 'f> {
    f: &'a Fields<'f>,
    names: &'a Names,
    line: u64,
    component: &'a str,
    event: &'a str,
}

impl<'a, 'f> LineReader<'a, 'f> {
    /// The reader of line `line`'s fields `f`, which name a component and an event.
    fn new(f: &'a Fields<'f>, names: &'a Names, line: u64) -> Result<Self, LogError> {
        let err = |why: String| LogError { line, why };
        let component = f
            .component
            .as_deref()
            .ok_or_else(|| err("an event without a `component` field".into()))?;
        let event = f
            .event
            .as_deref()
            .ok_or_else(|| err(format!("a {component} event without an `event` field")))?;
        Ok(LineReader {
            f,
            names,
            line,
            component,
            event,
        })
    }

    /// An error at this line.
    fn err(&self, why: String) -> LogError {
        LogError {
            line: self.line,
            why,
        }
    }

    /// The error for a missing field `name`.
    fn missing(&self, name: &str) -> LogError {
        self.err(format!(
            "a {} {} event without a `{name}` field",
            self.component, self.event
        ))
    }

    /// A number field the event needs, as the model's small number.
    fn need(&self, name: &str, v: Option<u64>) -> Result<u8, LogError> {
        v.map(small).ok_or_else(|| self.missing(name))
    }

    /// A flag field the event needs.
    fn flag(&self, name: &str, v: Option<bool>) -> Result<bool, LogError> {
        v.ok_or_else(|| self.missing(name))
    }

    /// The model's index of the line's key.
    fn key(&self) -> Result<u8, LogError> {
        let name = self.f.key.as_deref().ok_or_else(|| self.missing("key"))?;
        self.names
            .keys
            .iter()
            .position(|k| k == name)
            .map(|k| k as u8)
            .ok_or_else(|| self.err(format!("key {name:?} is not one the run header names")))
    }

    /// The model's index of the line's action.
    fn action(&self) -> Result<u8, LogError> {
        let name = self.f.action.as_deref().ok_or_else(|| {
            self.err(format!(
                "a {} {} event without an `action` field",
                self.component, self.event
            ))
        })?;
        self.names
            .actions
            .iter()
            .position(|a| a == name)
            .map(|a| a as u8)
            .ok_or_else(|| self.err(format!("action {name:?} is not one the run header names")))
    }

    /// `durable.operator input`.
    fn input(&self) -> Result<DurableEvent, LogError> {
        Ok(DurableEvent::Input {
            key: self.key()?,
            seq: self.need("seq", self.f.seq)?,
        })
    }

    /// `durable.supplier call` (`supplier`) or `durable.operator call_reused`.
    fn call(&self, supplier: bool) -> Result<DurableEvent, LogError> {
        let f = self.f;
        let (key, seq, action, index) = (
            self.key()?,
            self.need("seq", f.seq)?,
            self.action()?,
            self.need("index", f.index)?,
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
    }

    /// `durable.operator put_sent`.
    fn put_sent(&self) -> Result<DurableEvent, LogError> {
        let f = self.f;
        Ok(DurableEvent::PutSent {
            key: self.key()?,
            seq: self.need("seq", f.seq)?,
            action: self.action()?,
            results: self.need("results", f.results)?,
            completed: self.flag("completed", f.completed)?,
        })
    }

    /// `durable.store put`, by its outcome; `None` for a record a restore's rebuild read
    /// back (part of the restore).
    fn put(&self) -> Result<Option<DurableEvent>, LogError> {
        let f = self.f;
        let e = match f.outcome.as_deref() {
            Some("acked") => DurableEvent::PutAcked {
                key: self.key()?,
                seq: self.need("seq", f.seq)?,
                action: self.action()?,
                results: self.need("results", f.results)?,
                completed: self.flag("completed", f.completed)?,
            },
            Some("failed") => DurableEvent::PutFailed { key: self.key()? },
            Some("replayed") => return Ok(None),
            Some(_) => DurableEvent::Unknown,
            None => {
                return Err(self.err("a durable.store put event without an `outcome` field".into()))
            }
        };
        Ok(Some(e))
    }
}

/// An event line as a short phrase: component, event and the fields the model reads.
pub(super) fn shown(f: &Fields<'_>) -> String {
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
