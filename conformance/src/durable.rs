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
//! Mapping of the model's steps, one to one (the impl implements the `fixed` design):
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
//! - `LandPut`: the log takes the in-flight record (asynchronous puts only);
//! - `AckPut`: the log takes the record if it has not yet, then [`Event::PutAcked`] with
//!   its offset;
//! - `FailPut { landed }`: the log takes the record if `landed`, then
//!   [`Event::PutFailed`]; the operator must fail;
//! - `TriggerCheckpoint`: [`Operator::snapshot`] with the next checkpoint id (ids count
//!   from 1, as the model's do) and the log's end offsets; `CompleteCheckpoint(id)`:
//!   [`Operator::checkpoint_complete`] of that id, and the sink commits what was emitted
//!   before its snapshot; older pending checkpoints are subsumed (the coordinator
//!   forgets them, and so must the operator);
//! - `Crash { landed }`: the log takes the in-flight record if `landed`; the coordinator
//!   aborts every pending checkpoint; the operator, held calls, the pending checkpoints
//!   and uncommitted outputs are dropped; `Restore`: [`Operator::restore`] from the
//!   completed checkpoint, fed the log's records from its marker
//!   ([`Operator::new`] without one).
//!
//! Refusals are checked too ([`Binding::probes`]): among them a snapshot while a put is
//! in flight, which the model's synchronous puts never take and the operator must refuse
//! ([`OperatorError::PutInFlight`]).
//!
//! The projection ([`View`]) is described field by field in `specs/conformance.md`.
//!
//! [`eager`] binds the operator's production scheduling at the grain of its events,
//! over the same runtime, projection and probes.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde_json::json;
use stateright::Model;
use steadfast::durable::store::{decode_record, RebuildReport};
use steadfast::durable::{
    partition_for, ActionDef, CallChain, CallOutcome, CallRef, Checkpoint, Datum, Effect, Event,
    LogError, LogRecord, Offset, Operator, OperatorError, PutId, PutRecord, Scheduling,
    StateKey as ImplKey,
};
use steadfast_model::durable::{self as model, Action, ActionState, Durable, Phase, StateKey};

use crate::Binding;

/// Why the runtime refused a step: the operator's typed error, or what the binding found.
pub type Rejection = crate::Rejection<OperatorError>;

impl From<OperatorError> for Rejection {
    fn from(e: OperatorError) -> Self {
        Rejection::Runtime(e)
    }
}

pub mod eager;

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
}

/// The production runtime: checkpoints as the operator takes them, answers as the log
/// gives them.
pub struct Production;

impl Variant for Production {}

/// The binding, generic over the runtime variant.
pub struct Conformant<V>(PhantomData<V>);

/// The durable model bound to the production runtime.
pub type DurableBinding = Conformant<Production>;

/// Names of the runtime's keys and actions for the model's indices.
#[derive(Debug)]
pub struct Names {
    /// Key name per model key; key `k`'s name hashes to partition `k mod partitions`,
    /// the model's placement.
    pub keys: Vec<String>,
    /// Action name per model action index.
    pub actions: Vec<String>,
    /// Durable calls per action.
    pub calls: u8,
    /// Log partitions.
    pub partitions: u32,
    /// Every state key within the bounds, in the order of their views (key, input,
    /// action), with its view.
    state_keys: Vec<(ImplKey, StateKeyView)>,
    /// Per key, its partition (`partition_for` of its name, computed once).
    key_partitions: Vec<u32>,
}

impl Names {
    fn new(bounds: &model::Bounds) -> Names {
        let partitions = u32::from(bounds.partitions);
        let keys: Vec<String> = (0..bounds.keys)
            .map(|k| {
                let want = u32::from(k % bounds.partitions);
                (0u32..)
                    .map(|n| format!("key{k}.{n}"))
                    .find(|name| partition_for(name, partitions) == want)
                    .expect("some name hashes to every partition")
            })
            .collect();
        let actions: Vec<String> = (0..bounds.actions).map(|a| format!("action{a}")).collect();
        let mut state_keys = Vec::new();
        for (k, key) in keys.iter().enumerate() {
            for seq in 0..u64::from(bounds.inputs) {
                for (a, action) in actions.iter().enumerate() {
                    let sk = ImplKey {
                        key: key.clone(),
                        seq,
                        action: action.clone(),
                    };
                    let view = StateKeyView {
                        key: k as u8,
                        seq,
                        action: a as u8,
                    };
                    state_keys.push((sk, view));
                }
            }
        }
        Names {
            key_partitions: keys.iter().map(|k| partition_for(k, partitions)).collect(),
            keys,
            actions,
            calls: bounds.calls,
            partitions,
            state_keys,
        }
    }

    fn key_index(&self, name: &str) -> Option<u8> {
        self.keys.iter().position(|k| k == name).map(|i| i as u8)
    }

    fn action_index(&self, name: &str) -> Option<u8> {
        self.actions.iter().position(|a| a == name).map(|i| i as u8)
    }

    fn defs(&self) -> Vec<ActionDef> {
        let functions: Vec<String> = (0..self.calls).map(|c| format!("f{c}")).collect();
        self.actions
            .iter()
            .map(|a| ActionDef::new(a.clone(), CallChain::new(functions.clone())))
            .collect()
    }

    fn state_key(&self, sk: StateKey) -> ImplKey {
        ImplKey {
            key: self.keys[sk.key as usize].clone(),
            seq: u64::from(sk.seq),
            action: self.actions[sk.action as usize].clone(),
        }
    }

    fn view_of(&self, sk: &ImplKey) -> Result<StateKeyView, String> {
        match (self.key_index(&sk.key), self.action_index(&sk.action)) {
            (Some(key), Some(action)) => Ok(StateKeyView {
                key,
                seq: sk.seq,
                action,
            }),
            _ => Err(format!("unknown state key {sk:?}")),
        }
    }
}

/// The scripted external service: deterministic in the call.
fn supplier(function: &str, args: &Datum) -> CallOutcome {
    CallOutcome::Value(json!(format!("{function}{args}")))
}

/// A call the operator asked for.
#[derive(Clone, Debug)]
struct Requested {
    call: CallRef,
    function: String,
    args: Datum,
}

/// A checkpoint taken and not yet completed.
#[derive(Clone, Debug)]
struct Pending {
    id: u64,
    checkpoint: Arc<Checkpoint>,
    /// Uncommitted outputs emitted before the snapshot.
    outputs_before: usize,
}

/// The put the operator sent and the model has not resolved.
#[derive(Clone, Debug)]
struct InFlight {
    /// Model key.
    k: u8,
    put: PutId,
    record: Arc<PutRecord>,
    /// Whose state it saves.
    state_key: Arc<ImplKey>,
    /// Where the record landed, once it did.
    landed: Option<Offset>,
}

/// The log: per partition, its records in offset order. Partitions are shared between
/// clones of a runtime and copied (their records' handles only) when appended to.
type Partitions = Vec<Arc<Vec<Arc<LogRecord>>>>;

/// The operator and its environment. Cloned at every transition and probe, so what does
/// not change at every step is shared (`Arc`, copied on write), like the operator's
/// own maps.
pub struct Runtime<V: Variant> {
    names: Arc<Names>,
    /// How the operator schedules a key's work (stepwise here; eager in [`eager`]).
    scheduling: Scheduling,
    /// The model renumbers offsets by rank: views compare offsets by rank too.
    ranked_offsets: bool,
    /// The model's design tracks acknowledged offsets: views compare the store's.
    tracks_offsets: bool,
    log: Partitions,
    op: Option<Operator>,
    /// Per model key, the call the operator asked for and the supplier has not run.
    requested: Arc<BTreeMap<u8, Requested>>,
    /// Per model key, a call whose supplier ran and whose outcome is held back.
    returned: Arc<BTreeMap<u8, (CallRef, CallOutcome)>>,
    /// The put in flight.
    in_flight: Option<InFlight>,
    /// The last put this operator sent: put ids grow, from 0 for each operator.
    last_put: Option<PutId>,
    /// Supplier runs per durable call (its state key in model indices, its index).
    supplier_calls: Arc<BTreeMap<(StateKeyView, u32), u32>>,
    /// Outputs emitted since the last commit, as (key, sequence).
    uncommitted: Vec<(u8, u64)>,
    /// Per model key, committed outputs' sequence numbers in commit order.
    committed: Arc<Vec<Vec<u64>>>,
    /// Checkpoints taken and not completed, oldest first.
    pending: Vec<Pending>,
    completed: Option<Arc<Checkpoint>>,
    next_checkpoint: u64,
    /// Prune and rebuild reports that disagree with the model's step.
    reports: Vec<String>,
    /// The log as the views have read it so far (see [`PartitionMirror`]).
    mirror: RefCell<Vec<Arc<PartitionMirror>>>,
    variant: PhantomData<fn() -> V>,
}

/// What the runtime's view has read of one log partition: every record below `end`,
/// decoded and folded into the partition's view. A log only appends, so a view decodes
/// only the records that landed since the last view of this runtime or of the runtime
/// it was cloned from; an end offset that moves back is reported and the partition read
/// anew.
#[derive(Clone, Debug, Default)]
struct PartitionMirror {
    end: u64,
    latest: BTreeMap<StateKeyView, LatestView>,
    landed: BTreeMap<StateKeyView, Vec<StateView>>,
    /// Records that could not be decoded, reported with every view.
    problems: Vec<String>,
}

impl<V: Variant> Clone for Runtime<V> {
    fn clone(&self) -> Self {
        Runtime {
            names: Arc::clone(&self.names),
            scheduling: self.scheduling,
            ranked_offsets: self.ranked_offsets,
            tracks_offsets: self.tracks_offsets,
            log: self.log.clone(),
            op: self.op.clone(),
            requested: Arc::clone(&self.requested),
            returned: Arc::clone(&self.returned),
            in_flight: self.in_flight.clone(),
            last_put: self.last_put,
            supplier_calls: Arc::clone(&self.supplier_calls),
            uncommitted: self.uncommitted.clone(),
            committed: Arc::clone(&self.committed),
            pending: self.pending.clone(),
            completed: self.completed.clone(),
            next_checkpoint: self.next_checkpoint,
            reports: self.reports.clone(),
            mirror: self.mirror.clone(),
            variant: PhantomData,
        }
    }
}

impl<V: Variant> Runtime<V> {
    fn new(
        names: Names,
        ranked_offsets: bool,
        tracks_offsets: bool,
        scheduling: Scheduling,
    ) -> Runtime<V> {
        let mut op =
            Operator::new(names.defs(), names.partitions).expect("action names are distinct");
        op.set_scheduling(scheduling);
        Runtime {
            scheduling,
            committed: Arc::new(vec![Vec::new(); names.keys.len()]),
            log: vec![Arc::default(); names.partitions as usize],
            names: Arc::new(names),
            ranked_offsets,
            tracks_offsets,
            op: Some(op),
            requested: Arc::default(),
            returned: Arc::default(),
            in_flight: None,
            last_put: None,
            supplier_calls: Arc::default(),
            uncommitted: Vec::new(),
            pending: Vec::new(),
            completed: None,
            next_checkpoint: 1,
            reports: Vec::new(),
            mirror: RefCell::new(Vec::new()),
            variant: PhantomData,
        }
    }

    /// The running operator.
    pub fn operator(&self) -> Option<&Operator> {
        self.op.as_ref()
    }

    /// The log's records, per partition.
    pub fn records(&self) -> Vec<Vec<LogRecord>> {
        self.log
            .iter()
            .map(|p| p.iter().map(|r| (**r).clone()).collect())
            .collect()
    }

    fn op(&mut self) -> Result<&mut Operator, String> {
        self.op
            .as_mut()
            .ok_or_else(|| "no operator is running (crashed, not restored)".to_string())
    }

    fn ends(&self) -> Vec<Offset> {
        self.log.iter().map(|p| p.len() as Offset).collect()
    }

    fn handle(&mut self, event: Event) -> Result<(), Rejection> {
        let effects = self.op()?.handle(event).map_err(Rejection::Runtime)?;
        Ok(self.apply(effects)?)
    }

    fn apply(&mut self, effects: Vec<Effect>) -> Result<(), String> {
        let mut appended = false;
        for effect in effects {
            match effect {
                Effect::Call {
                    call,
                    function,
                    args,
                } => {
                    let k = self.key_of(&call.key)?;
                    Arc::make_mut(&mut self.requested).insert(
                        k,
                        Requested {
                            call,
                            function,
                            args,
                        },
                    );
                }
                Effect::Emit { key, seq, .. } => {
                    let k = self.key_of(&key)?;
                    self.uncommitted.push((k, seq));
                }
                Effect::Append { key, put, record } => {
                    if self.in_flight.is_some() {
                        return Err(format!(
                            "the operator sends put {put:?} of {key:?} while another put is in flight"
                        ));
                    }
                    let k = self.key_of(&key)?;
                    if self.last_put.is_some_and(|last| put <= last) {
                        return Err(format!(
                            "the operator reuses put id {put:?} (the last was {:?})",
                            self.last_put
                        ));
                    }
                    self.last_put = Some(put);
                    let (state_key, _) = decode_record(&LogRecord {
                        partition: record.partition,
                        offset: 0,
                        key: record.key.clone(),
                        value: record.value.clone(),
                    })
                    .map_err(|e| format!("the operator's put {put:?} is undecodable: {e}"))?;
                    if state_key.key != key {
                        return Err(format!(
                            "put {put:?} of key {key:?} carries a state of key {:?}",
                            state_key.key
                        ));
                    }
                    if record.partition != self.names.key_partitions[usize::from(k)] {
                        return Err(format!(
                            "put {put:?} of key {key:?} goes to partition {}",
                            record.partition
                        ));
                    }
                    self.in_flight = Some(InFlight {
                        k,
                        put,
                        record: Arc::new(record),
                        state_key: Arc::new(state_key),
                        landed: None,
                    });
                    appended = true;
                }
                Effect::Flush => {
                    if !appended {
                        return Err("the operator flushes with no record sent".into());
                    }
                    appended = false;
                }
            }
        }
        if appended {
            return Err("the operator sends a record and never flushes it".into());
        }
        Ok(())
    }

    fn key_of(&self, name: &str) -> Result<u8, String> {
        self.names
            .key_index(name)
            .ok_or_else(|| format!("the operator names an unknown key {name:?}"))
    }

    /// The log takes the in-flight put's record, if it has not yet: it lands at the end
    /// of its partition.
    fn land(&mut self) -> Result<Offset, String> {
        let put = self
            .in_flight
            .as_mut()
            .ok_or_else(|| "no put in flight".to_string())?;
        if let Some(offset) = put.landed {
            return Ok(offset);
        }
        let partition = Arc::make_mut(&mut self.log[put.record.partition as usize]);
        let offset = partition.len() as Offset;
        partition.push(Arc::new(LogRecord {
            partition: put.record.partition,
            offset,
            key: put.record.key.clone(),
            value: put.record.value.clone(),
        }));
        put.landed = Some(offset);
        Ok(offset)
    }

    /// The in-flight put is acknowledged (landing first if it has not).
    fn acknowledge(&mut self) -> Result<(), Rejection> {
        let offset = self.land()?;
        let put = self
            .in_flight
            .take()
            .ok_or_else(|| "no put in flight".to_string())?;
        let key = self.names.keys[usize::from(put.k)].clone();
        self.handle(Event::PutAcked {
            key,
            put: put.put,
            offset,
        })
    }

    /// The in-flight put fails (its record landed first if `landed`): the operator must
    /// fail.
    fn fail(&mut self, landed: bool) -> Result<(), Rejection> {
        let at = if landed {
            self.land()?
        } else {
            self.ends()[self
                .in_flight
                .as_ref()
                .ok_or_else(|| "no put in flight".to_string())?
                .record
                .partition as usize]
        };
        let put = self
            .in_flight
            .take()
            .ok_or_else(|| "no put in flight".to_string())?;
        let key = self.names.keys[usize::from(put.k)].clone();
        if V::swallows_failures() {
            return self.handle(Event::PutAcked {
                key,
                put: put.put,
                offset: at,
            });
        }
        let error = LogError::SendFailed(format!("the model fails put {:?}", put.put));
        match self.op()?.handle(Event::PutFailed {
            key,
            put: put.put,
            error,
        }) {
            // A failed put fails the task: the projection shows it.
            Err(OperatorError::Store(_)) => Ok(()),
            Err(e) => Err(Rejection::Runtime(e)),
            Ok(_) => Err("the operator took a failed put as saved".into()),
        }
    }

    /// Records from the completed checkpoint's marker to the log's end whose input the
    /// model's checkpoint `c` counts finished.
    fn finished_in_replay(&self, c: &model::Checkpoint) -> Result<u64, String> {
        let marker = &self
            .completed
            .as_ref()
            .ok_or_else(|| "no completed checkpoint".to_string())?
            .marker
            .offsets;
        let mut skipped = 0;
        for (&from, partition) in marker.iter().zip(&self.log) {
            for record in partition.iter().skip(from as usize) {
                let (sk, _) = decode_record(record).map_err(|e| e.to_string())?;
                let v = self.names.view_of(&sk)?;
                if v.seq < u64::from(c.finished[v.key as usize]) {
                    skipped += 1;
                }
            }
        }
        Ok(skipped)
    }

    /// The task fails: the coordinator aborts every pending checkpoint, each of which the
    /// operator must know; every other checkpoint taken (completed, subsumed, or lost
    /// with an earlier operator) must be unknown to it.
    fn abort_checkpoints(&mut self) {
        let Some(op) = self.op.as_mut() else { return };
        for id in 1..self.next_checkpoint {
            let pending = self.pending.iter().any(|p| p.id == id);
            if op.checkpoint_aborted(id) != pending {
                self.reports.push(format!(
                    "aborting checkpoint {id}: the operator {} it",
                    if pending { "does not know" } else { "knows" }
                ));
            }
            // An aborted checkpoint is forgotten: aborting it again finds nothing.
            if op.checkpoint_aborted(id) {
                self.reports
                    .push(format!("checkpoint {id} is still known after its abort"));
            }
        }
    }

    fn crash(&mut self) {
        self.op = None;
        if !self.requested.is_empty() {
            self.requested = Arc::default();
        }
        if !self.returned.is_empty() {
            self.returned = Arc::default();
        }
        self.in_flight = None;
        self.last_put = None;
        self.pending.clear();
        self.uncommitted.clear();
    }

    /// Restores; the rebuild's report when there was a checkpoint to restore from.
    fn restore(&mut self) -> Result<Option<RebuildReport>, Rejection> {
        if self.op.is_some() {
            return Err("restore while the operator runs".into());
        }
        let defs = self.names.defs();
        let (mut op, report) = match &self.completed {
            Some(cp) => {
                let mut restoring = Operator::restore(defs, cp)?;
                for (p, partition) in self.log.iter().enumerate() {
                    let from = restoring.marker().get(p).copied().unwrap_or(0);
                    for record in partition.iter().skip(from as usize) {
                        restoring.feed(record)?;
                    }
                }
                let (op, r) = restoring.finish(&self.ends())?;
                (op, Some(r))
            }
            None => (Operator::new(defs, self.names.partitions)?, None),
        };
        op.set_scheduling(self.scheduling);
        self.op = Some(op);
        Ok(report)
    }
}

/// The operator's lists (keys in progress, outstanding calls, puts in flight) agree with
/// its per-key activity, which the view reads; a disagreement is a problem.
fn cross_check_lists(op: &Operator, names: &Names, problems: &mut Vec<String>) {
    let mut in_progress: Vec<String> = names
        .keys
        .iter()
        .filter(|k| op.activity(k).in_progress)
        .cloned()
        .collect();
    in_progress.sort();
    if op.keys_in_progress() != in_progress {
        problems.push(format!(
            "keys_in_progress {:?}, activity says {in_progress:?}",
            op.keys_in_progress()
        ));
    }
    let calls = op.outstanding_calls();
    let awaiting = names
        .keys
        .iter()
        .filter(|k| op.activity(k).awaiting.is_some())
        .count();
    if calls.len() != awaiting
        || calls
            .iter()
            .any(|c| op.activity(&c.key).awaiting != Some(c.index))
    {
        problems.push(format!(
            "outstanding_calls {calls:?} disagree with the keys' activity"
        ));
    }
    let puts = op.puts_in_flight();
    let saving = names
        .keys
        .iter()
        .filter(|k| op.activity(k).saving.is_some())
        .count();
    if puts.len() != saving || puts.iter().any(|(k, p)| op.activity(k).saving != Some(*p)) {
        problems.push(format!(
            "puts_in_flight {puts:?} disagree with the keys' activity"
        ));
    }
}

/// The store's whole-cache accessors agree with its count and with each other.
fn cross_check_cache(op: &Operator, reports: &mut Vec<String>) {
    let store = op.store();
    let cache = store.cache();
    let offsets = store.latest_offsets();
    if cache.len() != store.cached_len()
        || offsets.len() != cache.len()
        || !cache.keys().eq(offsets.keys())
    {
        reports.push(format!(
            "the store's cache ({} states), tracked offsets ({}) and count ({}) disagree",
            cache.len(),
            offsets.len(),
            store.cached_len()
        ));
    }
}

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
            "Operator::snapshot (refused with PutInFlight while a put is in flight)"
        }
        "CompleteCheckpoint" => "Operator::checkpoint_complete",
        "Crash" => "Operator::checkpoint_aborted per pending checkpoint, then the operator dropped",
        "Restore" => {
            "Operator::restore, Restoring::feed per record from the marker, Restoring::finish"
        }
        _ => "(unknown action kind)",
    }
}

/// A state key in model indices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct StateKeyView {
    /// Key index.
    pub key: u8,
    /// Input sequence number.
    pub seq: u64,
    /// Action index.
    pub action: u8,
}

/// An action state: saved call results and the completed flag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct StateView {
    /// Saved call results.
    pub calls: u64,
    /// Completed.
    pub completed: bool,
}

/// Keyed state and progress of one key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KeyView {
    /// Sequence number the next input gets.
    pub next_seq: u64,
    /// Finished inputs (last completed sequence + 1).
    pub finished: u64,
    /// Index of the next action of input `finished` (0 when none is queued).
    pub next_action: u64,
    /// Sequence numbers of inputs delivered and not finished, head first.
    pub queued: Vec<u64>,
    /// An action of this key is in progress.
    pub in_progress: bool,
    /// The index of the call whose outcome the key waits for.
    pub awaiting: Option<u64>,
    /// The key waits for its put's answer.
    pub saving: bool,
    /// The key has a step to take without outside input.
    pub ready: bool,
}

/// One cached state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CachedView {
    /// Whose.
    pub state_key: StateKeyView,
    /// The state.
    pub state: StateView,
    /// The latest acknowledged offset the store tracks for it (the recovery marker's
    /// input); left out (`None`) when the model's design tracks no offsets.
    pub offset: Option<u64>,
}

/// What a replay of a state key reads last, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LatestView {
    /// Whose.
    pub state_key: StateKeyView,
    /// The latest record's state.
    pub state: StateView,
    /// Its offset.
    pub offset: u64,
}

/// Every state that ever landed for a state key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LandedView {
    /// Whose.
    pub state_key: StateKeyView,
    /// The states, sorted.
    pub states: Vec<StateView>,
}

/// One log partition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PartitionView {
    /// End offset: records landed.
    pub end: u64,
    /// Per state key, the latest record.
    pub latest: Vec<LatestView>,
    /// Per state key, every state that landed.
    pub landed: Vec<LandedView>,
}

/// A checkpoint: keyed state per key and the recovery marker per partition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CheckpointView {
    /// Per key: (next sequence number, finished inputs, next action).
    pub keys: Vec<(u64, u64, u64)>,
    /// Per partition, the offset a restore replays from.
    pub marker: Vec<u64>,
}

/// Supplier runs of one durable call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CallView {
    /// Whose.
    pub state_key: StateKeyView,
    /// Call index.
    pub call: u64,
    /// Supplier runs.
    pub runs: u64,
}

/// The observable projection both sides produce.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct View {
    /// An operator runs (false between a crash and a restore).
    pub up: bool,
    /// The operator failed (a put's error reached the action).
    pub failed: bool,
    /// Cached states (as the store counts them), the in-flight put's state key left out.
    pub cache_size: u64,
    /// Keys with per-key tracking (as the store counts them): keys with a cached state,
    /// the in-flight put's state key left out.
    pub tracked_keys: u64,
    /// Per key (empty while down).
    pub keys: Vec<KeyView>,
    /// The store's cache, by state key, without the in-flight put's state key (empty
    /// while down).
    pub cache: Vec<CachedView>,
    /// The log per partition.
    pub log: Vec<PartitionView>,
    /// The checkpoints taken and not completed, oldest first.
    pub pending: Vec<CheckpointView>,
    /// The latest completed checkpoint.
    pub completed: Option<CheckpointView>,
    /// Per key, committed outputs' sequence numbers.
    pub committed: Vec<Vec<u64>>,
    /// Supplier runs per durable call that ran.
    pub supplier_calls: Vec<CallView>,
    /// What the runtime side could not project (undecodable records, unknown names);
    /// always empty on the model side.
    pub problems: Vec<String>,
}

/// Replaces every offset of `view` by its rank among the partition's offsets in the
/// view (end, latest records, markers): what the model's `compact-offsets` keeps of
/// them (order and equality). Used only when the model compacts.
fn rank_offsets(view: &mut View) {
    // Key k's states are in partition k mod partitions, the model's placement.
    let partitions = view.log.len().max(1) as u64;
    for (p, part) in view.log.iter_mut().enumerate() {
        let mut seen: Vec<u64> = part.latest.iter().map(|l| l.offset).collect();
        seen.push(part.end);
        let mine = |c: &CachedView| u64::from(c.state_key.key) % partitions == p as u64;
        seen.extend(
            view.cache
                .iter()
                .filter(|c| mine(c))
                .filter_map(|c| c.offset),
        );
        for c in view.pending.iter().chain(&view.completed) {
            seen.extend(c.marker.get(p));
        }
        seen.sort_unstable();
        seen.dedup();
        let rank = |v: &mut u64| *v = seen.partition_point(|u| u < v) as u64;
        part.latest.iter_mut().for_each(|l| rank(&mut l.offset));
        rank(&mut part.end);
        view.cache
            .iter_mut()
            .filter(|c| mine(c))
            .for_each(|c| c.offset.iter_mut().for_each(rank));
        for c in view.pending.iter_mut().chain(view.completed.iter_mut()) {
            if let Some(m) = c.marker.get_mut(p) {
                rank(m);
            }
        }
    }
}

fn state_view(st: ActionState) -> StateView {
    StateView {
        calls: u64::from(st.calls()),
        completed: st.completed(),
    }
}

fn impl_state_view(st: &steadfast::durable::ActionState) -> StateView {
    StateView {
        calls: st.call_results.len() as u64,
        completed: st.completed,
    }
}

fn sk_view(sk: StateKey) -> StateKeyView {
    StateKeyView {
        key: sk.key,
        seq: u64::from(sk.seq),
        action: sk.action,
    }
}

/// `out` holding exactly `n` entries; those it keeps keep their allocations.
fn resize<T: Default>(out: &mut Vec<T>, n: usize) {
    out.truncate(n);
    out.resize_with(n, T::default);
}

/// `out` holding exactly `items`, in its own allocation where it fits.
fn refill<T>(out: &mut Vec<T>, items: impl IntoIterator<Item = T>) {
    out.clear();
    out.extend(items);
}

/// `out` present or absent as `present` says; when present, the view to fill (the one
/// there before, if any, to reuse its allocations).
fn present<T: Default>(out: &mut Option<T>, present: bool) -> Option<&mut T> {
    if present {
        Some(out.get_or_insert_with(T::default))
    } else {
        *out = None;
        None
    }
}

fn model_checkpoint(m: &Durable, c: &model::Checkpoint, out: &mut CheckpointView) {
    refill(
        &mut out.keys,
        (0..m.bounds.keys as usize).map(|k| {
            (
                u64::from(c.next_seq[k]),
                u64::from(c.finished[k]),
                u64::from(c.next_action[k]),
            )
        }),
    );
    refill(
        &mut out.marker,
        (0..m.bounds.partitions as usize).map(|p| u64::from(c.marker[p])),
    );
}

/// (next sequence number, finished, next action) of a key's keyed state.
fn impl_key_progress(names: &Names, ks: Option<&steadfast::durable::KeyState>) -> (u64, u64, u64) {
    let Some(ks) = ks else {
        return (0, 0, 0);
    };
    let finished = ks.last_completed.map_or(0, |s| s + 1);
    let next_action = if ks.queue.is_empty() {
        0
    } else {
        (names.actions.len() - ks.queue.len()) as u64
    };
    (ks.next_seq, finished, next_action)
}

/// The queued inputs of a key's keyed state, head first.
fn impl_key_queued(ks: Option<&steadfast::durable::KeyState>) -> impl Iterator<Item = u64> + '_ {
    ks.into_iter().flat_map(|ks| {
        ks.queue
            .front()
            .map(|q| q.seq)
            .into_iter()
            .chain(ks.pending_inputs.iter().map(|p| p.seq))
    })
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
        let in_flight = s.put.map(|p| p.record.state_key);
        out.up = !s.down;
        out.failed = s.failed;
        resize(&mut out.keys, if s.down { 0 } else { b.keys as usize });
        for (k, view) in out.keys.iter_mut().enumerate() {
            let phase = s.phase[k];
            // The put that failed ended its action.
            let ended = s.failed && matches!(phase, Phase::AwaitPut(_) | Phase::AwaitCompletion);
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
                .filter(|sk| Some(*sk) != in_flight)
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
        out.tracked_keys = (0..b.keys)
            .filter(|&k| {
                Self::state_keys(m)
                    .any(|sk| sk.key == k && Some(sk) != in_flight && s.cached(sk).is_some())
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
        let checkpoint = |cp: &Checkpoint, out: &mut CheckpointView| {
            refill(
                &mut out.keys,
                (0..names.keys.len())
                    .map(|k| impl_key_progress(names, cp.keys.get(&names.keys[k]))),
            );
            refill(&mut out.marker, cp.marker.offsets.iter().copied());
        };
        out.up = rt.op.is_some();
        match &rt.op {
            None => {
                out.keys.clear();
                out.cache.clear();
            }
            Some(op) => {
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
                resize(&mut out.keys, names.keys.len());
                for (k, view) in out.keys.iter_mut().enumerate() {
                    let ks = op.keys().get(&names.keys[k]);
                    (view.next_seq, view.finished, view.next_action) = impl_key_progress(names, ks);
                    refill(&mut view.queued, impl_key_queued(ks));
                    let activity = op.activity(&names.keys[k]);
                    view.in_progress = activity.in_progress;
                    view.awaiting = activity.awaiting.map(u64::from);
                    view.saving = activity.saving.is_some();
                    view.ready = activity.ready;
                }
                cross_check_lists(op, names, problems);
                let in_flight = rt.in_flight.as_ref().map(|put| &*put.state_key);
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
                let cache = &mut out.cache;
                cache.clear();
                let mut found = 0;
                for (sk, v) in &names.state_keys {
                    let Some((st, partition, offset)) = store.entry_of(sk) else {
                        continue;
                    };
                    found += 1;
                    if store.offset_of(sk) != Some((partition, offset)) {
                        problems.push(format!("cache: offset_of {sk:?} disagrees with entry_of"));
                    }
                    if Some(sk) == in_flight {
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
                        if Some(&sk) == in_flight {
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
            }
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
                    let decoded = decode_record(record)
                        .map_err(|e| e.to_string())
                        .and_then(|(sk, st)| Ok((names.view_of(&sk)?, st)));
                    let (sk, st) = match decoded {
                        Ok(d) => d,
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
        out.failed = rt.op.as_ref().is_some_and(|op| op.failure().is_some());
        out.cache_size = rt.op.as_ref().map_or(0, |op| {
            let store = op.store();
            let open = rt
                .in_flight
                .as_ref()
                .filter(|put| store.get(&put.state_key).is_some());
            (store.cached_len() - usize::from(open.is_some())) as u64
        });
        out.tracked_keys = rt.op.as_ref().map_or(0, |op| {
            let store = op.store();
            // The in-flight put's key is left out when that state is its only one.
            let alone = rt.in_flight.as_ref().is_some_and(|put| {
                let open = &put.state_key;
                store.get(open).is_some() && store.cached_count_of(&open.key) == 1
            });
            store.tracked_keys().saturating_sub(usize::from(alone)) as u64
        });
        resize(&mut out.pending, rt.pending.len());
        for (view, p) in out.pending.iter_mut().zip(&rt.pending) {
            checkpoint(&p.checkpoint, view);
        }
        if let Some(view) = present(&mut out.completed, rt.completed.is_some()) {
            checkpoint(rt.completed.as_ref().expect("present"), view);
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
            Action::AckPut if s.put.is_none() => Self::stale_outcome(m, rt, s),
            Action::AckPut => rt.acknowledge(),
            Action::FailPut { landed } => rt.fail(landed),
            Action::LandPut => rt.land().map(|_| ()).map_err(Rejection::from),
            Action::TriggerCheckpoint => {
                let id = rt.next_checkpoint;
                let ends = rt.ends();
                let mut checkpoint = rt.op()?.snapshot(id, &ends)?;
                rt.next_checkpoint += 1;
                V::after_snapshot(&ends, &mut checkpoint);
                rt.pending.push(Pending {
                    id,
                    checkpoint: Arc::new(checkpoint),
                    outputs_before: rt.uncommitted.len(),
                });
                Ok(())
            }
            Action::CompleteCheckpoint(id) => {
                let id = u64::from(id);
                let Some(at) = rt.pending.iter().position(|p| p.id == id) else {
                    // Not pending (a probe): completed, subsumed, aborted or never taken;
                    // the operator must not know it.
                    return match rt.op()?.checkpoint_complete(id) {
                        None => Err(format!("checkpoint {id} is not pending").into()),
                        Some(_) => Ok(()),
                    };
                };
                let report = rt
                    .op()?
                    .checkpoint_complete(id)
                    .ok_or_else(|| format!("checkpoint {id} is not pending"))?;
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
                for (k, seq) in rt.uncommitted.drain(..p.outputs_before) {
                    Arc::make_mut(&mut rt.committed)[k as usize].push(seq);
                }
                // Later snapshots counted the outputs just committed.
                for later in &mut rt.pending {
                    later.outputs_before -= p.outputs_before;
                }
                rt.completed = Some(p.checkpoint);
                if let Some(op) = &rt.op {
                    cross_check_cache(op, &mut rt.reports);
                }
                Ok(())
            }
            Action::Crash { landed } => {
                if landed && rt.in_flight.is_some() {
                    rt.land()?;
                }
                rt.abort_checkpoints();
                rt.crash();
                Ok(())
            }
            Action::Restore => {
                let report = rt.restore()?;
                if let Some(op) = &rt.op {
                    cross_check_cache(op, &mut rt.reports);
                }
                if let (Some(r), Some(c), Some(after)) =
                    (report, s.completed, m.next_state(s, Action::Restore))
                {
                    let (scanned, loaded) = (r.records_scanned, r.states_loaded);
                    // Offsets are positions unless compacted: the replay reads every
                    // record from the marker to the end.
                    let want_scanned: u64 = (0..m.bounds.partitions as usize)
                        .map(|p| u64::from(s.log_len[p] - c.marker[p]))
                        .sum();
                    let want_loaded = after.cache.entries().count() as u64;
                    let scanned_ok = m.bounds.compact_offsets || scanned == want_scanned;
                    if !scanned_ok || loaded != want_loaded {
                        rt.reports.push(format!(
                            "rebuild reports {scanned} records scanned and {loaded} states loaded, \
                             the model replays {want_scanned} and loads {want_loaded}"
                        ));
                    }
                    // The records it skips are those in the replayed range whose input the
                    // checkpoint counts finished.
                    let want_skipped = rt.finished_in_replay(&c)?;
                    if r.finished_skipped != want_skipped {
                        rt.reports.push(format!(
                            "rebuild reports {} records of finished inputs skipped, the log holds {want_skipped}",
                            r.finished_skipped
                        ));
                    }
                }
                Ok(())
            }
        }
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
        let put = rt
            .in_flight
            .as_ref()
            .filter(|put| put.k == k)
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
        let (_, state) = decode_record(&record).map_err(|e| e.to_string())?;
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

    /// `AckPut` with no put in flight: the outcome of the call before key `k`'s current
    /// one arrives again. The operator must refuse it.
    fn stale_outcome(_m: &Durable, rt: &mut Runtime<V>, s: &model::State) -> Result<(), Rejection> {
        let (k, i) = Self::stale_call(s)
            .ok_or_else(|| "no put in flight and no earlier call to repeat".to_string())?;
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

    fn stale_call(s: &model::State) -> Option<(u8, u8)> {
        (0..model::MAX_KEYS).find_map(|k| match s.phase[k] {
            Phase::AtCall(i) if i >= 1 => Some((k as u8, i - 1)),
            _ => None,
        })
    }

    fn forbidden(m: &Durable, s: &model::State) -> Vec<Action> {
        let b = m.bounds;
        if s.down {
            return Vec::new();
        }
        if s.failed {
            // A failed operator refuses everything but its crash.
            let mut probes: Vec<Action> = (0..b.keys)
                .flat_map(|k| [Action::DeliverInput(k), Action::StartAction(k)])
                .collect();
            probes.push(Action::TriggerCheckpoint);
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
        if s.put.is_none() && Self::stale_call(s).is_some() {
            probes.push(Action::AckPut);
        }
        // A snapshot while a put is in flight, where nothing else holds it back: the
        // model's synchronous puts never take it, and the operator must refuse it.
        let quiet = b.mid_action_checkpoints || !running;
        if s.put.is_some()
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
        if b.concurrent_checkpoints == 1 {
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

impl<V: Variant> Binding for Conformant<V> {
    type Model = Durable;
    type State = model::State;
    type Action = Action;
    type Runtime = Runtime<V>;
    type Projection = View;

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

    fn describe(runtime: &Runtime<V>) -> String {
        match &runtime.op {
            Some(op) => format!("{op:?}"),
            None => "no operator (crashed, not restored)".to_string(),
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
