//! The durable-actions model (`steadfast_model::durable`, flink-agents issue 1158) bound to
//! the production operator (`steadfast::durable`).
//!
//! The runtime is the sans-IO operator with stepwise scheduling, plus the environment the
//! model's choices configure: a log (one list of records per partition, appended to as
//! the model's records land), a scripted supplier, a source that delivers one input at a
//! time, a checkpoint coordinator and a sink that commits outputs per completed
//! checkpoint. The operator is a plain value and the log's partitions are shared until
//! appended to, so cloning a runtime at every branch of the state graph copies little.
//!
//! The impl implements the `fixed` design. With the `defects` feature a [`Variant`] can
//! switch on the operator's own seed bugs: with both, the end-offset marker and the old
//! put order, it is the model's `unpatched` design, and a failed put goes on as saved.
//!
//! Mapping of the model's steps, one to one:
//! - `DeliverInput(k)`: [`Event::Input`] with the key's next sequence number as value;
//! - `StartAction(k)`: [`Event::Continue`], the start of the queue's head (the operator
//!   reuses saved results as far as they go, then asks for a call or awaits completion);
//! - `ReuseResult(k)`: nothing; checked: the operator did not ask for that call;
//! - `CallSupplier(k)`: the supplier runs for the call the operator asked for, which must
//!   be the model's call (same state key and index); its outcome is held back;
//! - `SendPut(k)`: [`Event::CallReturned`] with the held outcome; the operator must answer
//!   with exactly [`Effect::Append`] of the model's record (state key, saved results)
//!   and [`Effect::Flush`]; the put is then in flight;
//! - `CompleteAction(k)`: [`Event::Continue`]; the same check, for the completed state;
//! - `LandPut(k)`: the log takes key `k`'s in-flight record (asynchronous or concurrent
//!   puts only);
//! - `AckPut(k)`: the log takes the record if it has not yet, then [`Event::PutAcked`]
//!   with its offset;
//! - `FailPut { key, landed }`: the log takes the record if `landed`, then
//!   [`Event::PutFailed`]; the operator must fail (with `handled-put-errors` the model's
//!   action goes on instead: the runtime departs there by design, see
//!   `specs/durable-actions.md`);
//! - `TriggerCheckpoint`: [`Operator::snapshot`] with the next checkpoint id (ids count
//!   from 1, as the model's do) and the log's end offsets; `CompleteCheckpoint(id)`:
//!   [`Operator::checkpoint_complete`] of that id, and the sink commits what was emitted
//!   before its snapshot; older pending checkpoints are subsumed (the coordinator
//!   forgets them, and so must the operator);
//! - `CompleteCheckpointUnnotified(id)`: nothing reaches the operator, which keeps the
//!   checkpoint (and those it subsumes) until a later completion or until a snapshot
//!   past its bound forgets the oldest; it is the restore point, and its outputs are
//!   committed at the restore; `AbortCheckpoint(id)`: [`Operator::checkpoint_aborted`];
//! - `LandZombie`: the log appends the record of the put a crash left in flight
//!   (`zombie-sends`), at the epoch of the operator that sent it; no operator sees it
//!   land, and once a fence of a newer epoch precedes it, the view skips it as every
//!   rebuild does;
//! - `FencePartition(p)`: the log appends `fence_record(p, crashes + 1)`, the restoring
//!   incarnation's fence (`epoch-fencing`); the restore that follows is
//!   [`Operator::restore`] at that epoch, and its report's stale records must be those a
//!   reading of the whole log finds behind a newer fence;
//! - `Crash { landed }`: the log takes the in-flight record if `landed`; the coordinator
//!   aborts every pending checkpoint; the operator, held calls, the pending checkpoints
//!   and uncommitted outputs are dropped; `Restore`: [`Operator::restore`] from the
//!   completed checkpoint, fed the log's records from its marker
//!   ([`Operator::new`] without one).
//!
//! With `subtasks` 2, two operators share the log, key `k` on subtask `k mod 2`:
//! events go to the key's operator, `TriggerCheckpoint` snapshots subtask 0's and
//! `SnapshotSubtask` subtask 1's part, and `Restore` restores each with
//! [`Operator::restore_owned`] from [`Checkpoint::merge`] of the parts (the union minimum
//! of their markers, or its own part's with `own-marker`), keeping its own keys;
//! `RestoreScaledIn` restores one operator owning every key.
//!
//! Refusals are checked too ([`Binding::probes`]): among them a snapshot while a put is
//! in flight, which the model's synchronous puts never take and the operator must refuse
//! ([`OperatorError::PutInFlight`]).
//!
//! The projection ([`View`]) is described field by field in `specs/conformance.md`.
//!
//! [`eager`] binds the operator's production scheduling at the grain of its events,
//! over the same runtime, projection and probes.
//!
//! Layout: `runtime` (the operator and its environment), `names` (the runtime's names for
//! the model's indices), `cross_check` (checks of the operator's own bookkeeping),
//! `refusals` (the restore's inputs it must refuse), `view` (the projection) and `project`
//! (how each side fills it), `step` (the step mapping, one function per action), this
//! file (the probes and the binding).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde_json::json;
use stateright::Model;
use steadfast::durable::{
    decode_entry, decode_record, encode_record, fence_record, RebuildReport, StoreError,
};
use steadfast::durable::{
    partition_for, ActionDef, ActionStateStore, CallChain, CallOutcome, CallRef, Checkpoint, Datum,
    Effect, Entry, Epoch, Event, KeyActivity, KeyState, Limits, LogError, LogRecord, Offset,
    Operator, OperatorError, Ownership, PendingInput, PruneReport, PutId, PutRecord, QueuedAction,
    Scheduling, StateKey as ImplKey,
};
use steadfast_model::durable::{self as model, Action, ActionState, Durable, Phase, StateKey};

use crate::Binding;

mod view;
pub use view::*;

mod names;
pub use names::*;

mod runtime;
pub use runtime::*;

mod cross_check;
use cross_check::*;

mod refusals;

mod step;

mod project;

/// Why the runtime refused a step: the operator's typed error, or what the binding found.
pub type Rejection = crate::Rejection<OperatorError>;

impl From<OperatorError> for Rejection {
    fn from(e: OperatorError) -> Self {
        Rejection::Runtime(e)
    }
}

pub mod eager;

pub mod driver;

/// How a test variant runs the production operator differently. The operator's own
/// bugs are its seed bugs (`defects`, feature `defects`), never re-created around it;
/// the hooks change its environment: a log that swallows failed sends, a restore that
/// hands each subtask other records. The production runtime uses none.
pub trait Variant: 'static {
    /// Whether the log swallows a failed send and acknowledges it at the offset where
    /// it was to land: the old put order as the operator sees it, with the offsets the
    /// model's `old-put-order` design gives (the operator's `CacheBeforeAck` seed bug
    /// caches at the send, with no offset yet: with the end-offset marker it conforms
    /// to `unpatched`, alone it parts from `old-put-order` on a cached offset).
    fn swallows_failures() -> bool {
        false
    }
    /// Whether a restored subtask is handed every key as its own: no ownership filter
    /// on the replay or the keyed state.
    fn owns_every_key() -> bool {
        false
    }
    /// Whether each restored subtask replays from its own part's marker, not the
    /// minimum of all parts'.
    fn replays_own_marker() -> bool {
        false
    }
    /// The operator's own seed bugs (feature `defects`) that every operator started or
    /// restored carries: the operator then runs the model design they stand for.
    #[cfg(feature = "defects")]
    fn defects() -> &'static [steadfast::durable::Defect] {
        &[]
    }
}

/// The production runtime: checkpoints as the operator takes them, answers as the log
/// gives them.
pub struct Production;

impl Variant for Production {}

/// The binding, generic over the runtime variant.
pub struct Conformant<V>(PhantomData<V>);

/// The durable model bound to the production runtime.
pub type DurableBinding = Conformant<Production>;

/// The runtime event, effect or call each model action of the stepwise binding is checked
/// against (the module doc has the whole mapping).
pub fn counterpart(kind: &str) -> &'static str {
    match kind {
        "DeliverInput" => "Event::Input",
        "StartAction" => "Event::Continue (the queue's head starts; Effect::Call or nothing)",
        "ReuseResult" => "no event: the operator asked for no call at that index",
        "CallSupplier" => "Effect::Call, run by the supplier (outcome held back)",
        "SendPut" => "Event::CallReturned, answered by Effect::Append + Effect::Flush",
        "CompleteAction" => "Event::Continue, answered by Effect::Append + Effect::Flush",
        "LandPut" => "the log appends the Effect::Append record",
        "AckPut" => "Event::PutAcked (the record landed first)",
        "FailPut" => "Event::PutFailed (the record landed first if landed); the operator fails",
        "TriggerCheckpoint" => {
            "Operator::snapshot of subtask 0's operator (refused with PutInFlight while a put \
             is in flight)"
        }
        "CompleteCheckpoint" => "Operator::checkpoint_complete",
        "CompleteCheckpointUnnotified" => {
            "no event: the operator keeps the checkpoint until a later snapshot or completion"
        }
        "AbortCheckpoint" => "Operator::checkpoint_aborted",
        "LandZombie" => "the log appends the record a crashed operator's Effect::Append sent",
        "FencePartition" => "the log appends the restoring incarnation's fence_record",
        "Crash" => "Operator::checkpoint_aborted per pending checkpoint, then the operator dropped",
        "Restore" => {
            "Operator::restore_owned per subtask from Checkpoint::merge of the parts (the union \
             minimum marker, or its own part's with own-marker), Restoring::feed per record \
             from the marker, Restoring::finish"
        }
        "RestoreScaledIn" => {
            "Operator::restore_owned of one operator owning every key, from Checkpoint::merge \
             of the parts; Restoring::feed per record from the marker, Restoring::finish"
        }
        "SnapshotSubtask" => {
            "Operator::snapshot of subtask 1's operator: its part of the pending checkpoint \
             (refused with PutInFlight while its put is in flight)"
        }
        _ => "(unknown action kind)",
    }
}

impl<V: Variant> Conformant<V> {
    fn state_keys(m: &Durable) -> impl Iterator<Item = StateKey> + '_ {
        (0..m.bounds.keys).flat_map(move |key| {
            (0..m.bounds.inputs).flat_map(move |seq| {
                (0..m.bounds.actions).map(move |action| StateKey { key, seq, action })
            })
        })
    }

    /// The call before key `k`'s current one, if it is at a call after its first.
    fn stale_call(s: &model::State, k: u8) -> Option<u8> {
        match s.phase[k as usize] {
            Phase::AtCall(i) if i >= 1 => Some(i - 1),
            _ => None,
        }
    }

    /// The model's forbidden steps the runtime must refuse at `s`.
    fn forbidden(m: &Durable, s: &model::State) -> Vec<Action> {
        if s.down {
            return Vec::new();
        }
        if s.failed {
            return Self::failed_probes(m, s);
        }
        let b = m.bounds;
        let mut enabled = Vec::new();
        m.actions(s, &mut enabled);
        let running = (0..b.keys as usize).any(|k| s.phase[k] != Phase::Idle);
        let exclusive = !b.mid_action_checkpoints && running;
        let mut probes = Vec::new();
        for k in 0..b.keys {
            if exclusive || enabled.contains(&Action::StartAction(k)) {
                continue;
            }
            // Only where the operator has no step: idle with nothing queued, or waiting
            // for a call's outcome.
            let waiting_for_call = match s.phase[k as usize] {
                Phase::Idle => s.finished[k as usize] == s.next_seq[k as usize],
                Phase::HaveResult(_) | Phase::AwaitPut(_) => true,
                Phase::AtCall(_) => enabled.contains(&Action::CallSupplier(k)),
                Phase::AwaitCompletion => false,
            };
            if waiting_for_call {
                probes.push(Action::StartAction(k));
            }
        }
        // The first key (in key order) at a later call with no put of its own in flight.
        if let Some(k) =
            (0..b.keys).find(|&k| s.puts[k as usize].is_none() && Self::stale_call(s, k).is_some())
        {
            probes.push(Action::AckPut(k));
        }
        Self::snapshot_probes(m, s, running, &mut probes);
        Self::completion_probes(m, s, &mut probes);
        probes
    }

    /// A failed operator refuses everything but its crash. With two subtasks, only the
    /// one whose put failed has failed: the task's failover is the crash that follows.
    fn failed_probes(m: &Durable, s: &model::State) -> Vec<Action> {
        let b = m.bounds;
        let apart = b.subtasks > 1 && !s.scaled_in;
        let failed_subtask = (0..b.keys)
            .find(|&k| {
                let ku = k as usize;
                s.puts[ku].is_none()
                    && matches!(s.phase[ku], Phase::AwaitPut(_) | Phase::AwaitCompletion)
            })
            .map_or(0, |k| m.owner(s.scaled_in, k));
        let failed = |k: u8| !apart || m.owner(s.scaled_in, k) == failed_subtask;
        let mut probes: Vec<Action> = (0..b.keys)
            .filter(|&k| failed(k))
            .flat_map(|k| [Action::DeliverInput(k), Action::StartAction(k)])
            .collect();
        if !apart || failed_subtask == 0 {
            probes.push(Action::TriggerCheckpoint);
        }
        probes
    }

    /// A snapshot while a put is in flight, where nothing else holds it back: the
    /// model's synchronous puts never take it, and the operator must refuse it.
    fn snapshot_probes(m: &Durable, s: &model::State, running: bool, probes: &mut Vec<Action>) {
        let b = m.bounds;
        let apart = b.subtasks > 1 && !s.scaled_in;
        let quiet = b.mid_action_checkpoints || !running;
        // With two subtasks, the trigger snapshots subtask 0 alone, which refuses only
        // while a put of its own is in flight; subtask 1's part likewise.
        let put_of = |t: u8| {
            s.puts_in_flight()
                .any(|p| !apart || m.owner(s.scaled_in, p.record.state_key.key) == t)
        };
        if apart
            && b.synchronous_puts
            && quiet
            && put_of(1)
            && s.pending.iter().flatten().any(|c| c.awaiting_subtask)
        {
            probes.push(Action::SnapshotSubtask);
        }
        if put_of(0)
            && b.synchronous_puts
            && quiet
            && s.checkpoints < b.checkpoints
            && s.pending_count() < b.concurrent_checkpoints as usize
        {
            probes.push(Action::TriggerCheckpoint);
        }
    }

    /// Completing a checkpoint that is not pending. With one checkpoint at a time an id
    /// stops being pending only as the last one taken: with none pending, that one is
    /// the probe (id 0, none taken yet, before the first). With several, every id taken
    /// and not pending (completed, subsumed or aborted) is one.
    fn completion_probes(m: &Durable, s: &model::State, probes: &mut Vec<Action>) {
        let b = m.bounds;
        let pending: Vec<u8> = s.pending_checkpoints().map(|(id, _)| id).collect();
        if b.lost_completions {
            // A checkpoint completed without the operator's being told is known to it,
            // and a late notification of it is one it may take.
        } else if b.concurrent_checkpoints == 1 {
            if pending.is_empty() {
                probes.push(Action::CompleteCheckpoint(s.checkpoints));
            }
        } else {
            probes.extend(
                (1..=s.checkpoints)
                    .filter(|id| !pending.contains(id))
                    .map(Action::CompleteCheckpoint),
            );
        }
    }
}

/// Why conformance refuses the model's mutant sink.
pub const COMMIT_ON_SNAPSHOT_UNSUPPORTED: &str = "the mutant design `commit-on-snapshot` is a \
    sink that commits when a checkpoint is taken; the runtime's sink commits on completion, \
    so it has no runtime counterpart";

/// The designs the runtime can be stepped against: every design but the model's mutant
/// sink.
pub(crate) fn supports(model: &Durable) -> Result<(), String> {
    if model.design.commits_on_snapshot() {
        return Err(COMMIT_ON_SNAPSHOT_UNSUPPORTED.to_string());
    }
    Ok(())
}

impl<V: Variant> Binding for Conformant<V> {
    type Model = Durable;
    type State = model::State;
    type Action = Action;
    type Runtime = Runtime<V>;
    type Projection = View;

    fn supports(model: &Durable) -> Result<(), String> {
        supports(model)
    }

    fn start(model: &Durable, _init: &model::State) -> Runtime<V> {
        Runtime::new(
            Names::new(&model.bounds),
            model.bounds.compact_offsets,
            model.design.rewinds_marker(),
            Scheduling::Stepwise,
        )
    }

    fn model_view(model: &Durable, state: &model::State) -> View {
        let mut view = View::default();
        Self::view_model(model, state, &mut view);
        view
    }

    fn runtime_view(runtime: &Runtime<V>) -> View {
        let mut view = View::default();
        Self::view_runtime(runtime, &mut view);
        view
    }

    fn model_view_into(model: &Durable, state: &model::State, out: &mut View) {
        Self::view_model(model, state, out);
    }

    fn runtime_view_into(runtime: &Runtime<V>, out: &mut View) {
        Self::view_runtime(runtime, out);
    }

    type Rejection = Rejection;

    fn step(
        model: &Durable,
        runtime: &mut Runtime<V>,
        before: &model::State,
        action: &Action,
    ) -> Result<(), Rejection> {
        Self::drive(model, runtime, before, action)
    }

    fn probes(model: &Durable, state: &model::State) -> Vec<Action> {
        Self::forbidden(model, state)
    }

    fn counterpart(kind: &str) -> &'static str {
        counterpart(kind)
    }

    fn unchanged(before: &Runtime<V>, after: &Runtime<V>) -> bool {
        before.same_as(after)
    }

    fn describe(runtime: &Runtime<V>) -> String {
        match (&runtime.op, &runtime.op1) {
            (Some(op), None) => format!("{op:?}"),
            (Some(op), Some(op1)) => format!("subtask 0: {op:?}; subtask 1: {op1:?}"),
            _ => "no operator (crashed, not restored)".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::Rng;
    use steadfast_model::{Settings, Spec};

    /// Views written over the view of another state equal views built fresh, on both
    /// sides, along seeded walks through a model with two partitions, failed sends and
    /// compacted offsets (every part of the view changes size somewhere).
    #[test]
    fn views_filled_in_place_equal_fresh_views() {
        let settings = Settings::parse(
            Durable::params(),
            &[
                ("keys", "3"),
                ("inputs", "2"),
                ("actions", "2"),
                ("partitions", "2"),
                ("crashes", "2"),
                ("send-failures", "1"),
                ("fail-after-landing", "true"),
                ("compact-offsets", "true"),
            ],
        )
        .unwrap();
        let m = Durable::build("fixed", &settings).unwrap();
        let mut rng = Rng::new(1158);
        let (mut want, mut got) = (View::default(), View::default());
        let mut compared = 0;
        for _ in 0..40 {
            let mut state = m.init_states()[0].clone();
            let mut rt = DurableBinding::start(&m, &state);
            for _ in 0..60 {
                DurableBinding::model_view_into(&m, &state, &mut want);
                assert_eq!(want, DurableBinding::model_view(&m, &state));
                DurableBinding::runtime_view_into(&rt, &mut got);
                assert_eq!(got, DurableBinding::runtime_view(&rt));
                assert_eq!(want, got);
                compared += 1;
                let steps = crate::walk::successors(&m, &state);
                if steps.is_empty() {
                    break;
                }
                let (action, next) = steps[rng.below(steps.len())].clone();
                DurableBinding::step(&m, &mut rt, &state, &action).unwrap();
                state = next;
            }
        }
        assert!(compared > 1000, "{compared}");
    }
}
