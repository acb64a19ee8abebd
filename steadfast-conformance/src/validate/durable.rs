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
//! another process is validated in `steadfast-kafka/tests/sigkill_restart.rs`.

use std::borrow::Cow;
use std::io::Read;
use steadfast_model::quote::{quote, shorten};

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

mod line;
use line::*;

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
    let mut reader = DurableReader::new(design, limit);
    let mut line_no = 0u64;
    while let Some((line_no_now, text)) = lines.next_line()? {
        line_no = line_no_now;
        if reader.line(line_no, text)? {
            return Ok(reader.out);
        }
    }
    reader.finish(lines.read(), line_no)
}

/// What the durable validation holds while it reads a log: the run its header
/// describes, and the validation filled in as the log is read (its verdict set where
/// the reading ends).
struct DurableReader {
    design: &'static str,
    /// Most places at once.
    limit: usize,
    out: Validation,
    /// Once the run header is read: the search, the run's names and the tracker.
    run: Option<(Search<DurableLog>, Names, Tracker<State, DurableEvent>)>,
    /// The model's safety properties.
    safety: Vec<stateright::Property<Durable>>,
    /// Between a crash and the next start: a restore is under way.
    restoring: bool,
}

impl DurableReader {
    /// A reader for `design`, before any line.
    fn new(design: &'static str, limit: usize) -> DurableReader {
        DurableReader {
            design,
            limit,
            out: Validation {
                model: "durable",
                lines: 0,
                events: 0,
                jobs: 1,
                widest: 0,
                late_signal: false,
                verdict: Verdict::Valid,
                violations: Vec::new(),
            },
            run: None,
            safety: Vec::new(),
            restoring: false,
        }
    }

    /// Reads line `line_no`; whether it ends the reading with a verdict.
    fn line(&mut self, line_no: u64, text: &str) -> Result<bool, LogError> {
        let parsed: Line<'_> = serde_json::from_str(text).map_err(|e| LogError {
            line: line_no,
            why: format!("not a log event: {}", shorten(&e.to_string())),
        })?;
        let f = parsed.fields;
        if f.component.as_deref() == Some("run") {
            return self.header(line_no, &f).map(|()| false);
        }
        self.event(line_no, &f)
    }

    /// The run header: the model, its bounds and names; the search starts here.
    fn header(&mut self, line_no: u64, f: &Fields<'_>) -> Result<(), LogError> {
        let err = |why: String| LogError { line: line_no, why };
        if self.run.is_some() {
            return Err(err("a second run header".into()));
        }
        match f.model.as_deref() {
            Some("durable") => {}
            Some(other) => {
                return Err(err(format!(
                    "a log of the {} model, not of durable",
                    quote(other)
                )))
            }
            None => return Err(err("the run header has no `model` field".into())),
        }
        let (model, names) = from_header(f, self.design, line_no)?;
        self.safety = model
            .properties()
            .into_iter()
            .filter(|p| p.expectation == stateright::Expectation::Always)
            .collect();
        let init = model.init_states().remove(0);
        let mut tracker = Tracker::new(Entry::new(
            init,
            vec![DurableEvent::Start { restored: false }],
        ));
        tracker.limit = self.limit;
        self.run = Some((Search::new(DurableLog { model }), names, tracker));
        Ok(())
    }

    /// An event line: the tracker takes its model event; whether the model cannot
    /// explain it (the verdict is then set). Safety properties it newly breaks are
    /// reported.
    fn event(&mut self, line_no: u64, f: &Fields<'_>) -> Result<bool, LogError> {
        let Some((search, names, tracker)) = self.run.as_mut() else {
            return Err(LogError {
                line: line_no,
                why: "a durable log starts with its run header (component=run, model=durable)"
                    .into(),
            });
        };
        let out = &mut self.out;
        out.events += 1;
        let Some(event) = event_of(f, names, line_no, self.restoring)? else {
            return Ok(false);
        };
        match event {
            DurableEvent::Crash => self.restoring = true,
            DurableEvent::Start { .. } => self.restoring = false,
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
                event: shown(f),
                possible,
                states,
                expected,
            };
            return Ok(true);
        }
        out.widest = out.widest.max(tracker.frontier.len());
        for property in tracker.newly_broken(&search.observed.model, &self.safety) {
            out.violations.push(Violation {
                property,
                job: 0,
                line: line_no,
                event: shown(f),
            });
        }
        Ok(false)
    }

    /// The validation at the log's end, after `lines` lines (`last` the last non-blank
    /// one, 0 for none): truncated if the events stop inside a model step.
    fn finish(mut self, lines: u64, last: u64) -> Result<Validation, LogError> {
        self.out.lines = lines;
        let Some((_, names, tracker)) = self.run.as_ref() else {
            return Err(LogError {
                line: 0,
                why: if last == 0 {
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
            self.out.verdict = Verdict::Truncated { job: 0, missing };
        }
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests;
