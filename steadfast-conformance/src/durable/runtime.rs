//! The runtime the model's steps drive: the sans-IO operator plus the environment the
//! model's choices configure (log partitions, scripted supplier, source, checkpoint
//! coordinator, sink). The names it gives the model's keys and actions are in `names`,
//! the cross-checks of the operator's own bookkeeping in `cross_check`.

use super::*;

/// A call the operator asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Requested {
    pub(super) call: CallRef,
    pub(super) function: String,
    pub(super) args: Datum,
}

/// A checkpoint taken and not yet completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Pending {
    pub(super) id: u64,
    /// The subtasks' parts taken so far, by subtask.
    pub(super) parts: Vec<Arc<Checkpoint>>,
    /// Subtask 1 has not taken its part yet.
    pub(super) awaiting_subtask: bool,
    /// Per model key, its uncommitted outputs emitted before its subtask's snapshot.
    pub(super) outputs_before: [usize; model::MAX_KEYS],
}

/// A put the operator sent and the model has not resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct InFlight {
    /// Model key.
    pub(super) k: u8,
    pub(super) put: PutId,
    pub(super) record: Arc<PutRecord>,
    /// Whose state it saves.
    pub(super) state_key: Arc<ImplKey>,
    /// Where the record landed, once it did.
    pub(super) landed: Option<Offset>,
}

/// The log: per partition, its records in offset order. Partitions are shared between
/// clones of a runtime and copied (their records' handles only) when appended to.
pub(super) type Partitions = Vec<Arc<Vec<Arc<LogRecord>>>>;

/// The operator and its environment. Cloned at every transition and probe, so what does
/// not change at every step is shared (`Arc`, copied on write), like the operator's
/// own maps.
pub struct Runtime<V: Variant> {
    pub(super) names: Arc<Names>,
    /// How the operator schedules a key's work (stepwise here; eager in [`eager`]).
    pub(super) scheduling: Scheduling,
    /// The model renumbers offsets by rank: views compare offsets by rank too.
    pub(super) ranked_offsets: bool,
    /// The model's design tracks acknowledged offsets: views compare the store's.
    pub(super) tracks_offsets: bool,
    pub(super) log: Partitions,
    /// Subtask 0's operator: the only one unless two subtasks run.
    pub(super) op: Option<Operator>,
    /// Subtask 1's operator, on the same log (`subtasks` 2, not scaled in).
    pub(super) op1: Option<Operator>,
    /// A restore scaled the job in to one subtask.
    pub(super) scaled_in: bool,
    /// Per model key, the call the operator asked for and the supplier has not run.
    pub(super) requested: Arc<BTreeMap<u8, Requested>>,
    /// Per model key, a call whose supplier ran and whose outcome is held back.
    pub(super) returned: Arc<BTreeMap<u8, (CallRef, CallOutcome)>>,
    /// Per model key, its put in flight.
    pub(super) in_flight: [Option<InFlight>; model::MAX_KEYS],
    /// A record a crashed operator sent that may still land (`zombie-sends`).
    pub(super) zombie: Option<Arc<PutRecord>>,
    /// Per subtask, the last put its operator sent: put ids grow, from 0 for each
    /// operator.
    pub(super) last_put: [Option<PutId>; 2],
    /// Supplier runs per durable call (its state key in model indices, its index).
    pub(super) supplier_calls: Arc<BTreeMap<(StateKeyView, u32), u32>>,
    /// Per model key, the sequence numbers of outputs emitted since the last commit.
    pub(super) uncommitted: [Vec<u64>; model::MAX_KEYS],
    /// Per model key, committed outputs' sequence numbers in commit order.
    pub(super) committed: Arc<Vec<Vec<u64>>>,
    /// Checkpoints taken and not completed, oldest first.
    pub(super) pending: Vec<Pending>,
    /// Per subtask, checkpoints the coordinator completed without telling the operator,
    /// which must still know them until a later completion subsumes them or a snapshot
    /// past its bound forgets the oldest; oldest first.
    pub(super) unnotified: [Vec<u64>; 2],
    /// Per model key, how many of its oldest `uncommitted` outputs a completed
    /// checkpoint covers whose notification the sink never had: a restore commits them.
    pub(super) unannounced_outputs: [usize; model::MAX_KEYS],
    /// The latest completed checkpoint's parts, by subtask (one part when taken by one).
    pub(super) completed: Option<Vec<Arc<Checkpoint>>>,
    pub(super) next_checkpoint: u64,
    /// Prune and rebuild reports that disagree with the model's step.
    pub(super) reports: Vec<String>,
    /// The log as the views have read it so far (see [`PartitionMirror`]).
    pub(super) mirror: RefCell<Vec<Arc<PartitionMirror>>>,
    pub(super) variant: PhantomData<fn() -> V>,
}

/// What the runtime's view has read of one log partition: every record below `end`,
/// decoded and folded into the partition's view. A log only appends, so a view decodes
/// only the records that landed since the last view of this runtime or of the runtime
/// it was cloned from; an end offset that moves back is reported and the partition read
/// anew.
#[derive(Clone, Debug, Default)]
pub(super) struct PartitionMirror {
    pub(super) end: u64,
    pub(super) latest: BTreeMap<StateKeyView, LatestView>,
    pub(super) landed: BTreeMap<StateKeyView, Vec<StateView>>,
    /// The highest fence epoch read so far: a state of a lower epoch after it is a
    /// zombie's, stale, and no rebuild reads it.
    pub(super) level: Epoch,
    /// Records that could not be decoded, reported with every view.
    pub(super) problems: Vec<String>,
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
            op1: self.op1.clone(),
            scaled_in: self.scaled_in,
            requested: Arc::clone(&self.requested),
            returned: Arc::clone(&self.returned),
            in_flight: self.in_flight.clone(),
            zombie: self.zombie.clone(),
            last_put: self.last_put,
            supplier_calls: Arc::clone(&self.supplier_calls),
            uncommitted: self.uncommitted.clone(),
            committed: Arc::clone(&self.committed),
            pending: self.pending.clone(),
            unnotified: self.unnotified.clone(),
            unannounced_outputs: self.unannounced_outputs,
            completed: self.completed.clone(),
            next_checkpoint: self.next_checkpoint,
            reports: self.reports.clone(),
            mirror: self.mirror.clone(),
            variant: PhantomData,
        }
    }
}

impl<V: Variant> Runtime<V> {
    /// Whether `other` holds what this runtime holds: every field but the views' mirror
    /// of the log, which is derived from the log. Shared parts compare by address first,
    /// so a copy that refused an event compares in a few dozen instructions.
    pub(super) fn same_as(&self, other: &Runtime<V>) -> bool {
        // Every field, named so that a new one is not missed.
        let Runtime {
            names,
            scheduling,
            ranked_offsets,
            tracks_offsets,
            log,
            op,
            op1,
            scaled_in,
            requested,
            returned,
            in_flight,
            zombie,
            last_put,
            supplier_calls,
            uncommitted,
            committed,
            pending,
            unnotified,
            unannounced_outputs,
            completed,
            next_checkpoint,
            reports,
            mirror: _,
            variant: _,
        } = self;
        Arc::ptr_eq(names, &other.names)
            && *scheduling == other.scheduling
            && *ranked_offsets == other.ranked_offsets
            && *tracks_offsets == other.tracks_offsets
            && *log == other.log
            && *op == other.op
            && *op1 == other.op1
            && *scaled_in == other.scaled_in
            && *requested == other.requested
            && *returned == other.returned
            && *in_flight == other.in_flight
            && *zombie == other.zombie
            && *last_put == other.last_put
            && *supplier_calls == other.supplier_calls
            && *uncommitted == other.uncommitted
            && *committed == other.committed
            && *pending == other.pending
            && *unnotified == other.unnotified
            && *unannounced_outputs == other.unannounced_outputs
            && *completed == other.completed
            && *next_checkpoint == other.next_checkpoint
            && *reports == other.reports
    }

    pub(super) fn new(
        names: Names,
        ranked_offsets: bool,
        tracks_offsets: bool,
        scheduling: Scheduling,
    ) -> Runtime<V> {
        let start = || {
            let mut op =
                Operator::new(names.defs(), names.partitions).expect("action names are distinct");
            Self::configure(&mut op, scheduling, &names);
            op
        };
        let op1 = (names.subtasks > 1).then(start);
        let op = start();
        Runtime {
            scheduling,
            committed: Arc::new(vec![Vec::new(); names.keys.len()]),
            log: vec![Arc::default(); names.partitions as usize],
            names: Arc::new(names),
            ranked_offsets,
            tracks_offsets,
            op: Some(op),
            op1,
            scaled_in: false,
            requested: Arc::default(),
            returned: Arc::default(),
            in_flight: Default::default(),
            zombie: None,
            last_put: [None; 2],
            supplier_calls: Arc::default(),
            uncommitted: Default::default(),
            pending: Vec::new(),
            unnotified: Default::default(),
            unannounced_outputs: [0; model::MAX_KEYS],
            completed: None,
            next_checkpoint: 1,
            reports: Vec::new(),
            mirror: RefCell::new(Vec::new()),
            variant: PhantomData,
        }
    }

    /// The running operator (subtask 0's).
    pub fn operator(&self) -> Option<&Operator> {
        self.op.as_ref()
    }

    /// Subtasks running: two until a restore scales the job in, with `subtasks` 2.
    pub fn running_subtasks(&self) -> u8 {
        if self.scaled_in {
            1
        } else {
            self.names.subtasks
        }
    }

    /// The subtask that runs model key `k`.
    pub fn subtask_of(&self, k: u8) -> u8 {
        k % self.running_subtasks()
    }

    /// The running operators with their subtasks.
    pub fn operators(&self) -> impl Iterator<Item = (u8, &Operator)> {
        [&self.op, &self.op1]
            .into_iter()
            .enumerate()
            .filter_map(|(t, op)| op.as_ref().map(|op| (t as u8, op)))
    }

    /// Subtask `t`'s operator.
    pub(super) fn op_at(&mut self, t: u8) -> Result<&mut Operator, String> {
        let op = if t == 0 { &mut self.op } else { &mut self.op1 };
        op.as_mut().ok_or_else(|| {
            format!("no operator of subtask {t} is running (crashed, scaled in or not restored)")
        })
    }

    /// The operator that runs key `key` (by its name).
    pub(super) fn op_of(&mut self, key: &str) -> Result<&mut Operator, String> {
        let k = self.key_of(key)?;
        self.op_at(self.subtask_of(k))
    }

    /// The log's records, per partition.
    pub fn records(&self) -> Vec<Vec<LogRecord>> {
        self.log
            .iter()
            .map(|p| p.iter().map(|r| (**r).clone()).collect())
            .collect()
    }

    pub(super) fn op(&mut self) -> Result<&mut Operator, String> {
        self.op
            .as_mut()
            .ok_or_else(|| "no operator is running (crashed, not restored)".to_string())
    }

    pub(super) fn ends(&self) -> Vec<Offset> {
        self.log.iter().map(|p| p.len() as Offset).collect()
    }

    /// Hands `event` to the operator of the key it names (every running operator for
    /// [`Event::Resume`]), and applies the effects.
    pub(super) fn handle(&mut self, event: Event) -> Result<(), Rejection> {
        let key = match &event {
            Event::Input { key, .. }
            | Event::Continue { key }
            | Event::PutAcked { key, .. }
            | Event::PutFailed { key, .. } => Some(key.clone()),
            Event::CallReturned { call, .. } => Some(call.key.clone()),
            Event::Resume => None,
        };
        let Some(key) = key else {
            for t in 0..self.running_subtasks() {
                let effects = self
                    .op_at(t)?
                    .handle(Event::Resume)
                    .map_err(Rejection::Runtime)?;
                self.apply(effects)?;
            }
            return Ok(());
        };
        // An accepted input, call outcome or acknowledgement always changes the operator
        // (a sequence number, a key's wait, the cache): the operator's equality, which
        // the refusal checks rest on, must see that.
        let changes = matches!(
            event,
            Event::Input { .. } | Event::CallReturned { .. } | Event::PutAcked { .. }
        );
        let what = event_name(&event);
        let op = self.op_of(&key)?;
        let before = changes.then(|| op.clone());
        let effects = op.handle(event).map_err(Rejection::Runtime)?;
        if before.is_some_and(|before| *op == before) {
            self.reports.push(format!(
                "the operator equals what it was before it took {what} of key {key}"
            ));
        }
        Ok(self.apply(effects)?)
    }

    pub(super) fn apply(&mut self, effects: Vec<Effect>) -> Result<(), String> {
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
                    self.uncommitted[usize::from(k)].push(seq);
                }
                Effect::Append { key, put, record } => {
                    let k = self.key_of(&key)?;
                    if self.in_flight[usize::from(k)].is_some() {
                        return Err(format!(
                            "the operator sends put {put:?} of {key:?} while the key's put is in flight"
                        ));
                    }
                    let last = &mut self.last_put[usize::from(k % self.running_subtasks())];
                    if last.is_some_and(|last| put <= last) {
                        return Err(format!(
                            "the operator reuses put id {put:?} (the last was {last:?})"
                        ));
                    }
                    *last = Some(put);
                    let (state_key, _) = decode_record(&LogRecord {
                        partition: record.partition,
                        offset: 0,
                        key: record.key.clone(),
                        value: record.value.clone(),
                    })
                    .map_err(|e| format!("the operator's put {put:?} is undecodable: {e}"))?
                    .ok_or_else(|| format!("the operator's put {put:?} is a fence record"))?;
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
                    self.in_flight[usize::from(k)] = Some(InFlight {
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

    pub(super) fn key_of(&self, name: &str) -> Result<u8, String> {
        self.names
            .key_index(name)
            .ok_or_else(|| format!("the operator names an unknown key {name:?}"))
    }

    /// The puts in flight, in key order.
    pub(super) fn puts_in_flight(&self) -> impl Iterator<Item = &InFlight> {
        self.in_flight.iter().flatten()
    }

    /// The log takes key `k`'s in-flight put's record, if it has not yet: it lands at
    /// the end of its partition.
    pub(super) fn land(&mut self, k: u8) -> Result<Offset, String> {
        let put = self.in_flight[usize::from(k)]
            .as_mut()
            .ok_or_else(|| format!("no put of key {k} in flight"))?;
        if let Some(offset) = put.landed {
            return Ok(offset);
        }
        let offset = append(&mut self.log, &put.record);
        put.landed = Some(offset);
        Ok(offset)
    }

    /// The crashed operator's send lands at the end of its partition.
    pub(super) fn land_zombie(&mut self) -> Result<Offset, String> {
        let record = self
            .zombie
            .take()
            .ok_or_else(|| "no send of a crashed operator is left".to_string())?;
        Ok(append(&mut self.log, &record))
    }

    /// Key `k`'s in-flight put is acknowledged (landing first if it has not).
    pub(super) fn acknowledge(&mut self, k: u8) -> Result<(), Rejection> {
        let offset = self.land(k)?;
        let put = self.in_flight[usize::from(k)]
            .take()
            .ok_or_else(|| format!("no put of key {k} in flight"))?;
        let key = self.names.keys[usize::from(put.k)].clone();
        self.handle(Event::PutAcked {
            key,
            put: put.put,
            offset,
        })
    }

    /// Key `k`'s in-flight put fails (its record landed first if `landed`): the
    /// operator must fail.
    pub(super) fn fail(&mut self, k: u8, landed: bool) -> Result<(), Rejection> {
        let missing = || format!("no put of key {k} in flight");
        let at = if landed {
            self.land(k)?
        } else {
            let put = self.in_flight[usize::from(k)]
                .as_ref()
                .ok_or_else(missing)?;
            self.ends()[put.record.partition as usize]
        };
        let put = self.in_flight[usize::from(k)].take().ok_or_else(missing)?;
        let key = self.names.keys[usize::from(put.k)].clone();
        if V::swallows_failures() {
            return self.handle(Event::PutAcked {
                key,
                put: put.put,
                offset: at,
            });
        }
        let error = LogError::SendFailed(format!("the model fails put {:?}", put.put));
        match self.op_of(&key)?.handle(Event::PutFailed {
            key,
            put: put.put,
            error,
        }) {
            // A failed put fails the task: the projection shows it.
            Err(OperatorError::PutFailed { .. }) => Ok(()),
            Err(e) => Err(Rejection::Runtime(e)),
            // The old put order never looks at the answer: the action goes on.
            Ok(effects) if Self::caches_at_send() => Ok(self.apply(effects)?),
            Ok(_) => Err("the operator took a failed put as saved".into()),
        }
    }

    /// Of the records from `marker` to the log's end, what a replay from there skips:
    /// those of keys `owned` does not hold, those of its keys whose input the model's
    /// checkpoint `c` counts finished, and the stale ones (a state of an epoch below the
    /// highest fence before it, found from the whole log, not from the marker's levels).
    pub(super) fn skipped_in_replay(
        &self,
        c: &model::Checkpoint,
        marker: &[Offset],
        owned: &Ownership,
    ) -> Result<Skipped, String> {
        let mut skipped = Skipped::default();
        for (&from, partition) in marker.iter().zip(&self.log) {
            let mut level = 0;
            for (at, record) in partition.iter().enumerate() {
                let (sk, epoch) = match decode_entry(record).map_err(|e| e.to_string())? {
                    Entry::Fence { epoch } => {
                        level = level.max(epoch);
                        continue;
                    }
                    Entry::State { key, epoch, .. } => (key, epoch),
                };
                if (at as Offset) < from {
                    continue;
                }
                let v = self.names.view_of(&sk)?;
                if epoch < level {
                    skipped.fenced += 1;
                } else if !owned.owns(&sk.key) {
                    skipped.foreign += 1;
                } else if v.seq < u64::from(c.finished[v.key as usize]) {
                    skipped.finished += 1;
                }
            }
        }
        Ok(skipped)
    }

    /// The restoring incarnation's fence lands at the end of partition `p`.
    pub(super) fn fence(&mut self, p: u8, epoch: Epoch) -> Offset {
        append(&mut self.log, &fence_record(u32::from(p), epoch))
    }

    /// The task fails: the coordinator aborts every pending checkpoint, each of which the
    /// operator must know, as it must know those completed without its being told;
    /// every other checkpoint taken (completed, subsumed, aborted, forgotten, or lost
    /// with an earlier operator) must be unknown to it.
    pub(super) fn abort_checkpoints(&mut self) {
        for t in 0..2u8 {
            let known = self.known_checkpoints(t);
            let op = if t == 0 { &mut self.op } else { &mut self.op1 };
            let Some(op) = op.as_mut() else { continue };
            for id in 1..self.next_checkpoint {
                let pending = known.contains(&id);
                if op.checkpoint_aborted(id) != pending {
                    self.reports.push(format!(
                        "aborting checkpoint {id}: subtask {t}'s operator {} it",
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
    }

    pub(super) fn crash(&mut self) {
        self.op = None;
        self.op1 = None;
        if !self.requested.is_empty() {
            self.requested = Arc::default();
        }
        if !self.returned.is_empty() {
            self.returned = Arc::default();
        }
        self.in_flight = Default::default();
        self.last_put = [None; 2];
        self.pending.clear();
        self.unnotified = Default::default();
        // Outputs a completed checkpoint covers stay, for the restore to commit.
        for (outputs, &covered) in self.uncommitted.iter_mut().zip(&self.unannounced_outputs) {
            outputs.truncate(covered);
        }
    }

    /// The checkpoints subtask `t`'s operator must know, oldest first: those completed
    /// without its being told, then the pending ones it took its part of.
    pub(super) fn known_checkpoints(&self, t: u8) -> Vec<u64> {
        let mut ids = self.unnotified[usize::from(t)].clone();
        ids.extend(
            self.pending
                .iter()
                .filter(|p| p.parts.len() > usize::from(t))
                .map(|p| p.id),
        );
        ids
    }

    /// The sink commits what the checkpoint covers: per key, its outputs emitted before
    /// its subtask's snapshot.
    pub(super) fn commit(&mut self, outputs_before: &[usize; model::MAX_KEYS]) {
        for (k, &n) in outputs_before.iter().enumerate() {
            if n > 0 {
                let seqs: Vec<u64> = self.uncommitted[k].drain(..n).collect();
                Arc::make_mut(&mut self.committed)[k].extend(seqs);
            }
        }
    }

    /// Restores every subtask (one when `scale_in`, or scaled in before): each from the
    /// completed checkpoint's parts merged ([`Checkpoint::merge`]: their keyed state,
    /// the union minimum of their markers; with `own-marker`, its own part's marker),
    /// keeping what it owns, as incarnation `epoch`. Per subtask restored from a
    /// checkpoint: the rebuild's report, the marker it replayed from and what it owns.
    pub(super) fn restore(
        &mut self,
        scale_in: bool,
        epoch: Epoch,
    ) -> Result<Vec<Restored>, Rejection> {
        if self.op.is_some() || self.op1.is_some() {
            return Err("restore while an operator runs".into());
        }
        self.scaled_in |= scale_in;
        let subtasks = self.running_subtasks();
        let mut restored = Vec::new();
        let merged = match &self.completed {
            Some(parts) => Some((
                Checkpoint::merge(&parts.iter().map(|p| &**p).collect::<Vec<_>>())
                    .map_err(|e| e.to_string())?,
                parts.clone(),
            )),
            None => None,
        };
        if let Some((cp, parts)) = &merged {
            self.refuses_corruptions_of(&Arc::new(cp.clone()), epoch);
            self.refuses_bad_parts(parts);
            self.refuses_bad_replays(cp, epoch);
        }
        for t in 0..subtasks {
            let defs = self.names.defs();
            let owned = if V::owns_every_key() {
                Ownership::All
            } else {
                self.names.ownership(t, subtasks)
            };
            let mut op = match &merged {
                Some((cp, parts)) => {
                    let mut cp = cp.clone();
                    if self.names.own_marker || V::replays_own_marker() {
                        // The part of the subtask of this index, or the only one.
                        let own = parts.get(usize::from(t)).unwrap_or(&parts[0]);
                        cp.marker = own.marker.clone();
                    }
                    let mut restoring = Operator::restore_owned(defs, &cp, owned.clone(), epoch)?;
                    let marker = restoring.marker().to_vec();
                    for (p, partition) in self.log.iter().enumerate() {
                        let from = marker.get(p).copied().unwrap_or(0);
                        for record in partition.iter().skip(from as usize) {
                            restoring.feed(record)?;
                        }
                    }
                    let (op, report) = restoring.finish(&self.ends())?;
                    restored.push(Restored {
                        report,
                        marker,
                        owned,
                    });
                    op
                }
                None => Operator::new_at(defs, self.names.partitions, epoch)?,
            };
            Self::configure(&mut op, self.scheduling, &self.names);
            if self.scheduling == Scheduling::Stepwise {
                // Stepwise, a resume drives nothing: each key goes on with a Continue.
                let effects = op.handle(Event::Resume)?;
                if !effects.is_empty() {
                    self.reports
                        .push(format!("a stepwise resume has effects {effects:?}"));
                }
            }
            if t == 0 {
                self.op = Some(op);
            } else {
                self.op1 = Some(op);
            }
        }
        // The sink commits what the restored checkpoint covers and was not committed
        // (its completion's notification never came).
        let all = std::array::from_fn(|k| self.uncommitted[k].len());
        self.commit(&all);
        self.unannounced_outputs = [0; model::MAX_KEYS];
        Ok(restored)
    }
}

impl<V: Variant> Runtime<V> {
    /// Sets up an operator the runtime starts or restores: its scheduling, its queues'
    /// bounds and the variant's seed bugs.
    fn configure(op: &mut Operator, scheduling: Scheduling, names: &Names) {
        op.set_scheduling(scheduling);
        op.set_limits(names.limits);
        #[cfg(feature = "defects")]
        op.set_defects(V::defects());
    }

    /// Whether the variant's operators cache a state at its send (the old put order),
    /// so that a failed put goes on as if saved.
    fn caches_at_send() -> bool {
        #[cfg(feature = "defects")]
        return V::defects().contains(&steadfast::durable::Defect::CacheBeforeAck);
        #[cfg(not(feature = "defects"))]
        false
    }
}

/// What a replay skips, by reason ([`Runtime::skipped_in_replay`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Skipped {
    /// States of keys another subtask owns.
    pub(super) foreign: u64,
    /// States of inputs the checkpoint counts finished.
    pub(super) finished: u64,
    /// Stale states: of an epoch below a fence before them.
    pub(super) fenced: u64,
}

/// What one subtask's restore from a checkpoint did.
pub(super) struct Restored {
    pub(super) report: RebuildReport,
    /// The marker it replayed from.
    pub(super) marker: Vec<Offset>,
    /// The keys it owns.
    pub(super) owned: Ownership,
}

/// `record` lands at the end of its partition of `log`; returns its offset.
fn append(log: &mut Partitions, record: &PutRecord) -> Offset {
    let partition = Arc::make_mut(&mut log[record.partition as usize]);
    let offset = partition.len() as Offset;
    partition.push(Arc::new(LogRecord {
        partition: record.partition,
        offset,
        key: record.key.clone(),
        value: record.value.clone(),
    }));
    offset
}

/// An event's name, for a report.
fn event_name(event: &Event) -> &'static str {
    match event {
        Event::Input { .. } => "an input",
        Event::Continue { .. } => "a continuation",
        Event::CallReturned { .. } => "a call's outcome",
        Event::PutAcked { .. } => "a put's acknowledgement",
        Event::PutFailed { .. } => "a put's failure",
        Event::Resume => "a resume",
    }
}
