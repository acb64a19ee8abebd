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
//! Layout: `runtime` (the operator and its environment), `view` (the projection), this
//! file (the step mapping, the probes and the binding).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde_json::json;
use stateright::Model;
use steadfast::durable::store::{
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

mod runtime;
pub use runtime::*;

mod refusals;

/// Why the runtime refused a step: the operator's typed error, or what the binding found.
pub type Rejection = crate::Rejection<OperatorError>;

impl From<OperatorError> for Rejection {
    fn from(e: OperatorError) -> Self {
        Rejection::Runtime(e)
    }
}

pub mod eager;

pub mod driver;

/// Hooks that test variants use to re-introduce a bug around the production operator
/// (never inside it). The production runtime uses none.
pub trait Variant: 'static {
    /// Called with every checkpoint just taken, and the log's end offsets.
    fn after_snapshot(_log_ends: &[Offset], _checkpoint: &mut Checkpoint) {}
    /// Whether the log swallows a failed send and acknowledges it at the offset where
    /// it was to land (the unpatched put order seen from the operator).
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

    /// The model's projection of `s`, written over `out` (see [`resize`], [`refill`]).
    fn view_model(m: &Durable, s: &model::State, out: &mut View) {
        let b = m.bounds;
        out.up = !s.down;
        out.failed = s.failed;
        resize(&mut out.keys, if s.down { 0 } else { b.keys as usize });
        for (k, view) in out.keys.iter_mut().enumerate() {
            let phase = s.phase[k];
            // The put that failed ended its action (other keys' puts may still be in
            // flight, their actions waiting).
            let ended = s.failed
                && s.puts[k].is_none()
                && matches!(phase, Phase::AwaitPut(_) | Phase::AwaitCompletion);
            // The runtime reuses every matching saved result when the action
            // starts: at call i it already waits for the first unsaved call.
            let awaiting = match phase {
                Phase::AtCall(i) => {
                    let saved = s.cached(s.head(k)).map_or(0, |st| st.calls());
                    (i.max(saved) < b.calls).then_some(i.max(saved))
                }
                // The supplier returned; its outcome is not delivered yet.
                Phase::HaveResult(i) => Some(i),
                _ => None,
            };
            let saving = !ended && matches!(phase, Phase::AwaitPut(_) | Phase::AwaitCompletion);
            let queued = s.finished[k] < s.next_seq[k];
            view.awaiting = awaiting.map(u64::from);
            view.saving = saving;
            view.ready = awaiting.is_none() && !saving && (phase != Phase::Idle || queued);
            view.next_seq = u64::from(s.next_seq[k]);
            view.finished = u64::from(s.finished[k]);
            view.next_action = u64::from(s.next_action[k]);
            refill(
                &mut view.queued,
                (s.finished[k]..s.next_seq[k]).map(u64::from),
            );
            view.in_progress = phase != Phase::Idle && !ended;
        }
        refill(
            &mut out.cache,
            Self::state_keys(m)
                .filter(|sk| !s.put_in_flight(*sk))
                .filter_map(|sk| {
                    s.cached(sk).map(|st| CachedView {
                        state_key: sk_view(sk),
                        state: state_view(st),
                        // Only designs that rewind the marker track offsets.
                        offset: s.acked_offset.get(sk.slot()).map(u64::from),
                    })
                }),
        );
        out.cache_size = out.cache.len() as u64;
        let subtasks = match (s.down, b.subtasks > 1) {
            (false, true) if !s.scaled_in => b.subtasks,
            (false, true) => 1,
            _ => 0,
        };
        resize(&mut out.subtasks, subtasks as usize);
        for (t, view) in out.subtasks.iter_mut().enumerate() {
            let mine = |k: u8| m.owner(s.scaled_in, k) == t as u8;
            refill(
                &mut view.keys,
                (0..b.keys).filter(|&k| mine(k) && s.next_seq[k as usize] > 0),
            );
            refill(
                &mut view.cache,
                out.cache
                    .iter()
                    .filter(|c| mine(c.state_key.key))
                    .map(|c| c.state_key),
            );
        }
        out.tracked_keys = (0..b.keys)
            .filter(|&k| {
                Self::state_keys(m)
                    .any(|sk| sk.key == k && !s.put_in_flight(sk) && s.cached(sk).is_some())
            })
            .count() as u64;
        resize(&mut out.log, b.partitions as usize);
        for (p, part) in out.log.iter_mut().enumerate() {
            let p = p as u8;
            let mine = || Self::state_keys(m).filter(move |sk| sk.key % b.partitions == p);
            part.end = u64::from(s.log_len[p as usize]);
            refill(
                &mut part.latest,
                mine().filter_map(|sk| {
                    s.latest_record(sk).map(|(st, offset)| LatestView {
                        state_key: sk_view(sk),
                        state: state_view(st),
                        offset: u64::from(offset),
                    })
                }),
            );
            let landed = || mine().filter(|sk| s.log.get(sk.slot()).is_some());
            resize(&mut part.landed, landed().count());
            for (view, sk) in part.landed.iter_mut().zip(landed()) {
                view.state_key = sk_view(sk);
                refill(&mut view.states, s.landed_states(sk).iter().map(state_view));
                view.states.sort();
            }
        }
        resize(&mut out.pending, s.pending_count());
        for (view, (_, c)) in out.pending.iter_mut().zip(s.pending_checkpoints()) {
            model_checkpoint(m, &c, view);
        }
        if let Some(view) = present(&mut out.completed, s.completed.is_some()) {
            model_checkpoint(m, s.completed.as_ref().expect("present"), view);
        }
        resize(&mut out.committed, b.keys as usize);
        for (k, view) in out.committed.iter_mut().enumerate() {
            refill(view, 0..u64::from(s.committed_outputs[k]));
        }
        refill(
            &mut out.supplier_calls,
            Self::state_keys(m)
                .flat_map(|sk| (0..b.calls).map(move |c| (sk, c)))
                .filter(|(sk, c)| s.runs(*sk, *c) > 0)
                .map(|(sk, c)| CallView {
                    state_key: sk_view(sk),
                    call: u64::from(c),
                    runs: u64::from(s.runs(sk, c)),
                }),
        );
        out.problems.clear();
        if b.compact_offsets {
            rank_offsets(out);
        }
    }

    /// The runtime's projection, written over `out` (see [`resize`], [`refill`]).
    fn view_runtime(rt: &Runtime<V>, out: &mut View) {
        let names = &rt.names;
        let problems = &mut out.problems;
        problems.clear();
        let subtasks = names.subtasks as usize;
        let partitions = names.partitions as usize;
        let checkpoint = |parts: &[Arc<Checkpoint>],
                          awaiting: bool,
                          out: &mut CheckpointView,
                          problems: &mut Vec<String>| {
            resize(&mut out.keys, names.keys.len());
            for (view, key) in out.keys.iter_mut().zip(&names.keys) {
                let mut holding = parts.iter().filter_map(|cp| cp.keys.get(key));
                *view = impl_key_progress(names, holding.next());
                if holding.next().is_some() {
                    problems.push(format!("checkpoint: two parts hold key {key:?}"));
                }
            }
            // Subtask-major, as the model's slots; a checkpoint one subtask took for
            // all (scaled in) fills every subtask's slots with its marker.
            out.marker.clear();
            for t in 0..if awaiting { 1 } else { subtasks } {
                let part = parts.get(t).or(parts.first());
                match part {
                    Some(cp) => out.marker.extend(cp.marker.offsets.iter().copied()),
                    None => out.marker.extend(std::iter::repeat_n(0, partitions)),
                }
            }
            out.awaiting_subtask = awaiting;
        };
        out.up = rt.op.is_some();
        out.keys.clear();
        out.cache.clear();
        out.subtasks.clear();
        let running = rt.running_subtasks();
        if rt.op.is_some() {
            resize(&mut out.keys, names.keys.len());
        }
        for (t, op) in rt.operators() {
            let mine = |k: usize| rt.subtask_of(k as u8) == t;
            if t >= running {
                problems.push(format!("subtask {t}'s operator runs after a scale-in"));
            }
            {
                if op.limits() != names.limits {
                    problems.push(format!("the operator's limits are {:?}", op.limits()));
                }
                if op.scheduling() != rt.scheduling {
                    problems.push(format!(
                        "the operator runs {:?} scheduling",
                        op.scheduling()
                    ));
                }
                if op.store().partition_count() != names.partitions {
                    problems.push(format!(
                        "the store spans {} partitions, the log has {}",
                        op.store().partition_count(),
                        names.partitions
                    ));
                }
                let mut activities = [KeyActivity::default(); model::MAX_KEYS];
                for (k, view) in out.keys.iter_mut().enumerate() {
                    if !mine(k) {
                        continue;
                    }
                    let ks = op.keys().get(&names.keys[k]);
                    (view.next_seq, view.finished, view.next_action) = impl_key_progress(names, ks);
                    refill(&mut view.queued, impl_key_queued(ks));
                    let activity = op.activity(&names.keys[k]);
                    view.in_progress = activity.in_progress;
                    view.awaiting = activity.awaiting.map(u64::from);
                    view.saving = activity.saving.is_some();
                    view.ready = activity.ready;
                    activities[k] = activity;
                }
                cross_check_lists(op, names, &activities[..names.keys.len()], problems);
                let in_flight = |sk: &ImplKey| rt.puts_in_flight().any(|put| *put.state_key == *sk);
                let store = op.store();
                // Each cached state has its tracked offset, in its key's partition.
                let offset_of = |sk: &ImplKey, problems: &mut Vec<String>| {
                    let Some((partition, offset)) = store.offset_of(sk) else {
                        problems.push(format!("cache: {sk:?} has no tracked offset"));
                        return None;
                    };
                    if partition != partition_for(&sk.key, names.partitions) {
                        problems.push(format!("cache: {sk:?} tracked in partition {partition}"));
                    }
                    Some(rt.tracks_offsets.then_some(offset))
                };
                // Looked up by the state keys within the bounds; only a cache that
                // holds others is copied whole, to name them.
                let mut cache = Vec::new();
                let mut found = 0;
                for (sk, v) in &names.state_keys {
                    let Some((st, partition, offset)) = store.entry_of(sk) else {
                        continue;
                    };
                    found += 1;
                    if store.offset_of(sk) != Some((partition, offset)) {
                        problems.push(format!("cache: offset_of {sk:?} disagrees with entry_of"));
                    }
                    if in_flight(sk) {
                        continue;
                    }
                    if partition != names.key_partitions[usize::from(v.key)] {
                        problems.push(format!("cache: {sk:?} tracked in partition {partition}"));
                    }
                    cache.push(CachedView {
                        state_key: *v,
                        state: impl_state_view(st),
                        offset: rt.tracks_offsets.then_some(offset),
                    });
                }
                if found != store.cached_len() {
                    cache.clear();
                    for (sk, st) in store.cache() {
                        if in_flight(&sk) {
                            continue;
                        }
                        let Some(offset) = offset_of(&sk, problems) else {
                            continue;
                        };
                        match names.view_of(&sk) {
                            Ok(v) => cache.push(CachedView {
                                state_key: v,
                                state: impl_state_view(&st),
                                offset,
                            }),
                            Err(e) => problems.push(format!("cache: {e}")),
                        }
                    }
                    cache.sort_by_key(|c| c.state_key);
                }
                if subtasks > 1 {
                    out.subtasks.push(SubtaskView {
                        keys: (0..names.keys.len())
                            .filter(|&k| {
                                op.keys()
                                    .get(&names.keys[k])
                                    .is_some_and(|ks| ks.next_seq > 0)
                            })
                            .map(|k| k as u8)
                            .collect(),
                        cache: cache.iter().map(|c| c.state_key).collect(),
                    });
                }
                out.cache.extend(cache);
            }
        }
        if rt.operators().count() > 1 {
            out.cache.sort_by_key(|c| c.state_key);
        }
        let ends = rt.ends();
        let mut mirror = rt.mirror.borrow_mut();
        mirror.resize_with(ends.len(), Default::default);
        resize(&mut out.log, ends.len());
        for (p, (&end, view)) in ends.iter().zip(out.log.iter_mut()).enumerate() {
            let part = &mut mirror[p];
            if end < part.end {
                problems.push(format!(
                    "partition {p}: end offset {end} is below the {} read before",
                    part.end
                ));
                *part = Default::default();
            }
            if end > part.end {
                let part = Arc::make_mut(part);
                let from = part.end;
                part.end = end;
                for record in rt.log[p].iter().skip(from as usize) {
                    let decoded = decode_entry(record).map_err(|e| e.to_string());
                    let (sk, st) = match decoded {
                        // A fence holds no state of the model's log; it makes the older
                        // states after it stale, which no rebuild reads.
                        Ok(Entry::Fence { epoch }) => {
                            part.level = part.level.max(epoch);
                            continue;
                        }
                        Ok(Entry::State { epoch, .. }) if epoch < part.level => continue,
                        Ok(Entry::State { key, state, .. }) => match names.view_of(&key) {
                            Ok(sk) => (sk, state),
                            Err(e) => {
                                part.problems
                                    .push(format!("partition {p} offset {}: {e}", record.offset));
                                continue;
                            }
                        },
                        Err(e) => {
                            part.problems
                                .push(format!("partition {p} offset {}: {e}", record.offset));
                            continue;
                        }
                    };
                    let state = impl_state_view(&st);
                    part.latest.insert(
                        sk,
                        LatestView {
                            state_key: sk,
                            state,
                            offset: record.offset,
                        },
                    );
                    let seen = part.landed.entry(sk).or_default();
                    if !seen.contains(&state) {
                        seen.push(state);
                        seen.sort();
                    }
                }
            }
            let part = &mirror[p];
            problems.extend(part.problems.iter().cloned());
            view.end = end;
            refill(&mut view.latest, part.latest.values().copied());
            resize(&mut view.landed, part.landed.len());
            for (view, (&state_key, states)) in view.landed.iter_mut().zip(&part.landed) {
                view.state_key = state_key;
                refill(&mut view.states, states.iter().copied());
            }
        }
        drop(mirror);
        refill(
            &mut out.supplier_calls,
            rt.supplier_calls
                .iter()
                .map(|(&(state_key, call), &runs)| CallView {
                    state_key,
                    call: u64::from(call),
                    runs: u64::from(runs),
                }),
        );
        out.failed = rt.operators().any(|(_, op)| op.failure().is_some());
        out.cache_size = 0;
        out.tracked_keys = 0;
        for (_, op) in rt.operators() {
            let store = op.store();
            let open = rt
                .puts_in_flight()
                .filter(|put| store.get(&put.state_key).is_some())
                .count();
            out.cache_size += (store.cached_len() - open) as u64;
            // A key with a put in flight is left out when that state is its only one.
            let alone = rt
                .puts_in_flight()
                .filter(|put| {
                    let open = &put.state_key;
                    store.get(open).is_some() && store.cached_count_of(&open.key) == 1
                })
                .count();
            out.tracked_keys += store.tracked_keys().saturating_sub(alone) as u64;
        }
        let problems = &mut out.problems;
        resize(&mut out.pending, rt.pending.len());
        for (view, p) in out.pending.iter_mut().zip(&rt.pending) {
            checkpoint(&p.parts, p.awaiting_subtask, view, problems);
        }
        if let Some(view) = present(&mut out.completed, rt.completed.is_some()) {
            checkpoint(
                rt.completed.as_deref().expect("present"),
                false,
                view,
                problems,
            );
        }
        resize(&mut out.committed, rt.committed.len());
        for (view, seqs) in out.committed.iter_mut().zip(rt.committed.iter()) {
            refill(view, seqs.iter().copied());
        }
        out.problems.extend(rt.reports.iter().cloned());
        if rt.ranked_offsets {
            rank_offsets(out);
        }
    }

    fn drive(
        m: &Durable,
        rt: &mut Runtime<V>,
        s: &model::State,
        a: &Action,
    ) -> Result<(), Rejection> {
        let names = Arc::clone(&rt.names);
        let name = |k: u8| names.keys[k as usize].clone();
        match *a {
            Action::DeliverInput(k) => rt.handle(Event::Input {
                key: name(k),
                value: json!(s.next_seq[k as usize]),
            }),
            Action::StartAction(k) => rt.handle(Event::Continue { key: name(k) }),
            Action::ReuseResult(k) => {
                let Phase::AtCall(i) = s.phase[k as usize] else {
                    return Err(format!("key {k} is not at a call").into());
                };
                match rt.requested.get(&k) {
                    Some(r) if r.call.index <= u32::from(i) => Err(format!(
                        "the operator asks for call {} of key {k} where the model reuses saved result {i}",
                        r.call.index
                    ).into()),
                    _ => Ok(()),
                }
            }
            Action::CallSupplier(k) => {
                let Phase::AtCall(i) = s.phase[k as usize] else {
                    return Err(format!("key {k} is not at a call").into());
                };
                let want = rt.names.state_key(s.head(k as usize));
                let r = match rt.requested.get(&k) {
                    Some(r) if r.call.state_key() == want && r.call.index == u32::from(i) => {
                        r.clone()
                    }
                    Some(r) => {
                        return Err(format!(
                            "the operator asks for {:?} call {}, the model calls the supplier for {want:?} call {i}",
                            r.call.state_key(),
                            r.call.index
                        ).into())
                    }
                    None => {
                        return Err(format!(
                            "the operator asks for no call of key {k}; the model calls the supplier for {want:?} call {i}"
                        ).into())
                    }
                };
                Arc::make_mut(&mut rt.requested).remove(&k);
                let outcome = supplier(&r.function, &r.args);
                // The call is the model's (checked above): its names are the model's.
                let call = (sk_view(s.head(k as usize)), r.call.index);
                *Arc::make_mut(&mut rt.supplier_calls)
                    .entry(call)
                    .or_default() += 1;
                Arc::make_mut(&mut rt.returned).insert(k, (r.call, outcome));
                Ok(())
            }
            Action::SendPut(k) => {
                let Phase::HaveResult(i) = s.phase[k as usize] else {
                    return Err(format!("key {k} has no call result to save").into());
                };
                let (call, outcome) = Arc::make_mut(&mut rt.returned)
                    .remove(&k)
                    .ok_or_else(|| format!("no call outcome of key {k} to save"))?;
                rt.handle(Event::CallReturned { call, outcome })?;
                Self::check_put(rt, s, k, i + 1, false)
            }
            Action::CompleteAction(k) => {
                rt.handle(Event::Continue { key: name(k) })?;
                Self::check_put(rt, s, k, 0, true)
            }
            Action::AckPut(k) if s.puts[k as usize].is_none() => Self::stale_outcome(rt, s, k),
            Action::AckPut(k) => rt.acknowledge(k),
            Action::FailPut { key, landed } => rt.fail(key, landed),
            Action::LandPut(k) => rt.land(k).map(|_| ()).map_err(Rejection::from),
            Action::TriggerCheckpoint => {
                // Subtask 0's part; with two subtasks running, subtask 1 takes its own
                // when the barrier reaches it (`SnapshotSubtask`).
                let id = rt.next_checkpoint;
                let checkpoint = Self::snapshot_part(rt, 0, id)?;
                rt.next_checkpoint += 1;
                let awaiting_subtask = rt.running_subtasks() > 1;
                let mut outputs_before = [0; model::MAX_KEYS];
                for (k, n) in outputs_before.iter_mut().enumerate() {
                    if rt.subtask_of(k as u8) == 0 {
                        *n = rt.uncommitted[k].len();
                    }
                }
                rt.pending.push(Pending {
                    id,
                    parts: vec![checkpoint],
                    awaiting_subtask,
                    outputs_before,
                });
                Self::check_known(rt, 0, id)
            }
            Action::SnapshotSubtask => {
                let at = rt
                    .pending
                    .iter()
                    .position(|p| p.awaiting_subtask)
                    .ok_or("no checkpoint waits for subtask 1's part")?;
                let id = rt.pending[at].id;
                let checkpoint = Self::snapshot_part(rt, 1, id)?;
                let uncommitted: Vec<usize> = rt.uncommitted.iter().map(Vec::len).collect();
                let mine: Vec<bool> = (0..model::MAX_KEYS)
                    .map(|k| rt.subtask_of(k as u8) == 1)
                    .collect();
                let p = &mut rt.pending[at];
                p.parts.push(checkpoint);
                p.awaiting_subtask = false;
                for k in 0..model::MAX_KEYS {
                    if mine[k] {
                        p.outputs_before[k] = uncommitted[k];
                    }
                }
                Self::check_known(rt, 1, id)
            }
            Action::AbortCheckpoint(id) => {
                let id = u64::from(id);
                let Some(oldest) = rt.pending.first() else {
                    return Err(format!("checkpoint {id} is not the oldest pending").into());
                };
                if oldest.id != id {
                    return Err(format!("checkpoint {id} is not the oldest pending").into());
                }
                // Every subtask that took its part knows it.
                for t in 0..oldest.parts.len() as u8 {
                    if !rt.op_at(t)?.checkpoint_aborted(id) {
                        return Err(format!(
                            "subtask {t}'s operator does not know checkpoint {id}"
                        )
                        .into());
                    }
                }
                rt.pending.remove(0);
                Ok(())
            }
            Action::CompleteCheckpointUnnotified(id) => {
                let id = u64::from(id);
                let at = rt
                    .pending
                    .iter()
                    .position(|p| p.id == id)
                    .ok_or_else(|| format!("checkpoint {id} is not pending"))?;
                // The coordinator completes it and subsumes the older ones; the operator
                // hears of none of them, and the sink commits nothing yet.
                let done: Vec<Pending> = rt.pending.drain(..=at).collect();
                for (t, unnotified) in rt.unnotified.iter_mut().enumerate() {
                    unnotified.extend(done.iter().filter(|p| p.parts.len() > t).map(|p| p.id));
                }
                let p = done.into_iter().next_back().expect("position found");
                rt.unannounced_outputs = p.outputs_before;
                rt.completed = Some(p.parts);
                Ok(())
            }
            Action::CompleteCheckpoint(id) => {
                let id = u64::from(id);
                let Some(at) = rt.pending.iter().position(|p| p.id == id) else {
                    // Not pending (a probe): completed, subsumed, aborted or never taken;
                    // no operator may know it.
                    let mut known = false;
                    for t in 0..rt.running_subtasks() {
                        known |= rt.op_at(t)?.checkpoint_complete(id).is_some();
                    }
                    return match known {
                        false => Err(format!("checkpoint {id} is not pending").into()),
                        true => Ok(()),
                    };
                };
                // Every subtask prunes what its part's boundaries mark finished.
                let mut report = PruneReport::default();
                for t in 0..rt.pending[at].parts.len() as u8 {
                    let r = rt.op_at(t)?.checkpoint_complete(id).ok_or_else(|| {
                        format!("subtask {t}'s operator does not know checkpoint {id}")
                    })?;
                    report.states_pruned += r.states_pruned;
                    report.keys_dropped += r.keys_dropped;
                }
                // The coordinator drops it and the older pending checkpoints it subsumes.
                let p = rt.pending.drain(..=at).next_back().expect("position found");
                let model_checkpoint = s
                    .pending_checkpoints()
                    .find(|(pending, _)| u64::from(*pending) == id);
                if let Some((_, c)) = model_checkpoint {
                    // The model prunes the cached states of inputs the checkpoint counts
                    // finished; keys left with nothing cached lose their tracking.
                    let cached = |sk: &StateKey| s.cached(*sk).is_some();
                    let pruned = |sk: &StateKey| sk.seq < c.finished[sk.key as usize];
                    let states = Self::state_keys(m)
                        .filter(|sk| cached(sk) && pruned(sk))
                        .count();
                    let keys = (0..m.bounds.keys)
                        .filter(|k| {
                            let mine: Vec<StateKey> = Self::state_keys(m)
                                .filter(|sk| sk.key == *k && cached(sk))
                                .collect();
                            !mine.is_empty() && mine.iter().all(pruned)
                        })
                        .count();
                    let got = (report.states_pruned, report.keys_dropped);
                    if got != (states as u64, keys as u64) {
                        rt.reports.push(format!(
                            "checkpoint {}: prune reports {got:?} (states, keys), the model prunes ({states}, {keys})",
                            p.id
                        ));
                    }
                }
                rt.commit(&p.outputs_before);
                // It subsumes every checkpoint completed before it, told or not.
                rt.unnotified = Default::default();
                rt.unannounced_outputs = [0; model::MAX_KEYS];
                // Later snapshots counted the outputs just committed.
                for later in &mut rt.pending {
                    for (n, done) in later.outputs_before.iter_mut().zip(p.outputs_before) {
                        *n -= done;
                    }
                }
                rt.completed = Some(p.parts);
                let mut reports = Vec::new();
                for (_, op) in rt.operators() {
                    cross_check_cache(op, &mut reports);
                }
                rt.reports.extend(reports);
                Ok(())
            }
            Action::Crash { landed } => {
                if landed {
                    // Sequential puts: the one in flight.
                    if let Some(put) = s.puts_in_flight().find(|p| p.offset.is_none()) {
                        rt.land(put.record.state_key.key)?;
                    }
                }
                // A send the crash does not stop stays with the producer.
                if m.bounds.zombie_sends && s.zombie.is_none() {
                    if let Some(record) = m.next_state(s, *a).and_then(|n| n.zombie) {
                        let k = usize::from(record.state_key.key);
                        let put = rt.in_flight[k].as_ref().ok_or_else(|| {
                            format!("no put of key {k} in flight to outlive the crash")
                        })?;
                        rt.zombie = Some(Arc::clone(&put.record));
                    }
                }
                rt.abort_checkpoints();
                rt.crash();
                Ok(())
            }
            Action::LandZombie => rt.land_zombie().map(|_| ()).map_err(Rejection::from),
            Action::FencePartition(p) => {
                // The restoring incarnation's epoch: one more than the crashes so far.
                rt.fence(p, Epoch::from(s.crashes) + 1);
                Ok(())
            }
            Action::Restore | Action::RestoreScaledIn => {
                if m.bounds.fenced_producer {
                    rt.zombie = None;
                }
                // The incarnation's epoch: one more than the crashes so far.
                let epoch = Epoch::from(s.crashes) + 1;
                let restored = rt.restore(*a == Action::RestoreScaledIn, epoch)?;
                let mut reports = Vec::new();
                for (_, op) in rt.operators() {
                    cross_check_cache(op, &mut reports);
                }
                rt.reports.extend(reports);
                let (Some(c), Some(after)) = (s.completed, m.next_state(s, *a)) else {
                    return Ok(());
                };
                // Offsets are positions unless compacted: each subtask's replay reads
                // every record from its marker to the end.
                let (mut scanned, mut loaded, mut want_scanned) = (0, 0, 0);
                for (t, r) in restored.iter().enumerate() {
                    scanned += r.report.records_scanned;
                    loaded += r.report.states_loaded;
                    want_scanned += (0..m.bounds.partitions as usize)
                        .map(|p| u64::from(s.log_len[p] - Self::replay_from(m, &c, t as u8, p)))
                        .sum::<u64>();
                    // It skips the records of keys it does not own, and those of its keys
                    // whose input the checkpoint counts finished.
                    // And the stale ones, behind a newer fence.
                    let want = rt.skipped_in_replay(&c, &r.marker, &r.owned)?;
                    let want = (want.foreign, want.finished, want.fenced);
                    let got = (
                        r.report.foreign_skipped,
                        r.report.finished_skipped,
                        r.report.fenced_skipped,
                    );
                    if got != want {
                        rt.reports.push(format!(
                            "subtask {t}'s rebuild reports {got:?} records of other subtasks' keys, \
                             of finished inputs and stale skipped, its replay range holds {want:?}"
                        ));
                    }
                }
                let want_loaded = after.cache.entries().count() as u64;
                let scanned_ok = m.bounds.compact_offsets || scanned == want_scanned;
                if !scanned_ok || loaded != want_loaded {
                    rt.reports.push(format!(
                        "rebuild reports {scanned} records scanned and {loaded} states loaded, \
                         the model replays {want_scanned} and loads {want_loaded}"
                    ));
                }
                Ok(())
            }
        }
    }

    /// Where the model's restore from `c` has subtask `t` replay partition `p` from: its
    /// own marker (`own-marker`), or the minimum of every subtask's.
    fn replay_from(m: &Durable, c: &model::Checkpoint, t: u8, p: usize) -> u8 {
        if m.bounds.own_marker {
            c.marker[m.marker_slot(t, p)]
        } else {
            (0..m.bounds.subtasks)
                .map(|t| c.marker[m.marker_slot(t, p)])
                .min()
                .expect("one subtask at least")
        }
    }

    /// Subtask `t`'s part of checkpoint `id`, its operator's snapshot over the log's end
    /// offsets; past its bound the operator forgets the oldest checkpoint it knows: one
    /// completed without its being told (the model's coordinator never has more pending
    /// than the bound).
    fn snapshot_part(rt: &mut Runtime<V>, t: u8, id: u64) -> Result<Arc<Checkpoint>, Rejection> {
        let ends = rt.ends();
        let op = rt.op_at(t)?;
        let before = op.clone();
        // The refusal checks compare copies that share their maps; a copy that shares
        // none must compare equal too, entry by entry.
        let copied = op.unshared() == before;
        let mut checkpoint = op.snapshot(id, &ends)?;
        // A snapshot is remembered until its completion or abort: the operator changed.
        let remembered = *op != before;
        // End offsets of another partition count are refused, and change nothing.
        let mut probe = op.clone();
        let wrong = [ends.as_slice(), &[0]].concat();
        let want = format!(
            "the log reported {} end offsets for {} partitions",
            wrong.len(),
            ends.len()
        );
        let refused = match probe.snapshot(id + 1, &wrong) {
            Err(OperatorError::Store(StoreError::InvalidMarker(m))) if m == want => None,
            other => Some(format!(
                "a snapshot over {} end offsets gives {:?}, not `{want}`",
                wrong.len(),
                other.map(|_| ())
            )),
        };
        let unchanged = probe == *op;
        rt.reports.extend(refused);
        if !remembered {
            rt.reports.push(format!(
                "snapshot {id} left the operator equal to what it was"
            ));
        }
        if !copied {
            rt.reports
                .push("a copy of the operator sharing none of its maps differs from it".into());
        }
        if !unchanged {
            rt.reports
                .push("a refused snapshot changed the operator".to_string());
        }
        let unnotified = &mut rt.unnotified[usize::from(t)];
        let known = unnotified.len()
            + rt.pending
                .iter()
                .filter(|p| p.parts.len() > usize::from(t))
                .count();
        if known >= rt.names.limits.pending_checkpoints && !unnotified.is_empty() {
            unnotified.remove(0);
        }
        V::after_snapshot(&ends, &mut checkpoint);
        Ok(Arc::new(checkpoint))
    }

    /// After subtask `t` took its part of checkpoint `id`: its operator knows exactly the
    /// checkpoints the coordinator left it.
    fn check_known(rt: &mut Runtime<V>, t: u8, id: u64) -> Result<(), Rejection> {
        let known = rt.known_checkpoints(t);
        let got: Vec<u64> = rt.op_at(t)?.pending_checkpoint_ids().collect();
        if got != known {
            rt.reports.push(format!(
                "checkpoint {id} taken: subtask {t}'s operator knows checkpoints {got:?}, the coordinator left {known:?}"
            ));
        }
        Ok(())
    }

    /// After `SendPut(k)` / `CompleteAction(k)`: the operator sent exactly the model's
    /// record, the state of the key's head action with `calls` saved results (or
    /// completed), and flushed it.
    fn check_put(
        rt: &Runtime<V>,
        s: &model::State,
        k: u8,
        calls: u8,
        completed: bool,
    ) -> Result<(), Rejection> {
        let put = rt.in_flight[usize::from(k)]
            .as_ref()
            .ok_or_else(|| format!("the operator sent no put for key {k}"))?;
        let want = rt.names.state_key(s.head(k as usize));
        if *put.state_key != want {
            return Err(format!(
                "the operator saves {:?} where the model saves {want:?}",
                put.state_key
            )
            .into());
        }
        let record = LogRecord {
            partition: put.record.partition,
            offset: 0,
            key: put.record.key.clone(),
            value: put.record.value.clone(),
        };
        let (_, state) = decode_record(&record)
            .map_err(|e| e.to_string())?
            .ok_or("the put is a fence record")?;
        let got = (state.call_results.len(), state.completed);
        let want = if completed {
            (0, true)
        } else {
            (usize::from(calls), false)
        };
        if got != want {
            return Err(format!(
                "the operator's put carries (results, completed) {got:?}, the model's {want:?}"
            )
            .into());
        }
        Ok(())
    }

    /// `AckPut(k)` with no put of key `k` in flight: the outcome of the call before key
    /// `k`'s current one arrives again. The operator must refuse it.
    fn stale_outcome(rt: &mut Runtime<V>, s: &model::State, k: u8) -> Result<(), Rejection> {
        let i = Self::stale_call(s, k)
            .ok_or_else(|| format!("no put of key {k} in flight and no earlier call to repeat"))?;
        let sk = rt.names.state_key(s.head(k as usize));
        let call = CallRef {
            key: sk.key,
            seq: sk.seq,
            action: sk.action,
            index: u32::from(i),
        };
        let args = json!([s.head(k as usize).seq, i]);
        let outcome = supplier(&format!("f{i}"), &args);
        rt.handle(Event::CallReturned { call, outcome })
    }

    /// The call before key `k`'s current one, if it is at a call after its first.
    fn stale_call(s: &model::State, k: u8) -> Option<u8> {
        match s.phase[k as usize] {
            Phase::AtCall(i) if i >= 1 => Some(i - 1),
            _ => None,
        }
    }

    fn forbidden(m: &Durable, s: &model::State) -> Vec<Action> {
        let b = m.bounds;
        if s.down {
            return Vec::new();
        }
        let apart = b.subtasks > 1 && !s.scaled_in;
        if s.failed {
            // A failed operator refuses everything but its crash. With two subtasks,
            // only the one whose put failed has failed: the task's failover is the
            // crash that follows.
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
            return probes;
        }
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
        // A snapshot while a put is in flight, where nothing else holds it back: the
        // model's synchronous puts never take it, and the operator must refuse it.
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
        // Completing a checkpoint that is not pending. With one checkpoint at a time an id
        // stops being pending only as the last one taken: with none pending, that one is
        // the probe (id 0, none taken yet, before the first). With several, every id
        // taken and not pending (completed, subsumed or aborted) is one.
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
        probes
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
