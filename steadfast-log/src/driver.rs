//! The blocking driver around the sans-IO [`Operator`]: the one place that owns a
//! [`Log`]. It executes the operator's effects (runs the supplier for each requested
//! call, sends appended records, flushes, waits for acknowledgements) and feeds the
//! answers back as events. It also keeps a replayable source and a sink that commits
//! outputs per checkpoint, and can crash and restore the operator over the same log. It
//! runs the flink-agents issue 1158 scenarios ("checkpoint with an action queued, crash,
//! restore") in the tests, and conformance drives it over the in-memory log through the
//! model's events at the eager operator's grain (`steadfast conform durable-driver`),
//! comparing [`Driver::projection`] after each call.
//!
//! A restore re-delivers the source's inputs after the restored checkpoint's snapshot
//! before it returns, in delivery order.
//!
//! Puts are answered before a driver call returns, so no put is in flight when a
//! snapshot is taken (the operator would refuse it). [`Driver::deliver_all`] delivers
//! every returned call at once: the puts of several keys are sent together and made
//! durable by one flush (group commit). A wait for an acknowledgement observes the
//! driver's [`Cancellation`] and ends with [`DriverError::Cancelled`], leaving the put in
//! flight: the task is being stopped, and a crash follows.
//!
//! The driver counts supplier runs per durable call, and separately the runs
//! whose result record never reached the log (the put failed before landing, or
//! a crash came between the supplier's return and the put): the fix promises
//! `runs <= 1 + unlanded runs` per call. A call whose put was acknowledged landed; for
//! any other the driver reads the log back from where it ended before the delivery,
//! since a put that failed may have landed all the same.
//!
//! Every incarnation has an epoch ([`Epoch`]): the first is 1, and each restore
//! takes the next. Before a restore reads the log it appends a fence record of its epoch
//! to every partition and waits for their acknowledgements (`durable.driver fence`), so
//! that a send of a crashed incarnation landing later is stale to every later replay
//! (zombie sends, `specs/durable-actions.md`).
//!
//! What it logs with the operator's and store's events makes a run's log one that
//! `steadfast validate` checks against the durable model: `durable.supplier call` as a
//! supplier returns, `durable.task crash` at a crash, including the crash of another
//! process that [`Driver::after_crash`] takes over from.

use std::collections::BTreeMap;

use steadfast::durable::store::{decode_record, fence_record};
use steadfast::durable::{
    partition_for, ActionDef, ActionState, CallOutcome, CallRef, Checkpoint, Datum, Effect, Epoch,
    Event, LogError, LogRecord, Offset, Operator, OperatorError, PutId, PutRecord, RebuildReport,
    RecoveryMarker, Restoring, StateKey, StoreError,
};

use crate::group::{group_commit, Cancelled};
use crate::log::{AckError, Cancellation, Log, PendingAck};
use crate::projection::{
    project_activity, project_cache, project_checkpoint, project_keys, project_log, CallCount,
    OutputRecord, Projection,
};

/// The external call behind durable calls: (call, function, arguments) to outcome.
pub type Supplier = Box<dyn FnMut(&CallRef, &str, &Datum) -> CallOutcome + Send>;
/// Opens the log for a new operator incarnation (after a crash, a reopen).
pub type Reopen<L> = Box<dyn FnMut() -> Result<L, LogError> + Send>;

/// Records read per request while a restore replays the log.
const REPLAY_BATCH: usize = 512;

/// A call the operator requested and the driver has not run yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestedCall {
    /// The call.
    pub call: CallRef,
    /// Function id.
    pub function: String,
    /// Arguments.
    pub args: Datum,
}

/// Errors of the driver.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DriverError {
    /// The operator reported an error.
    #[error(transparent)]
    Operator(#[from] OperatorError),
    /// Opening or reading the log failed.
    #[error("log: {0}")]
    Log(#[from] LogError),
    /// Decoding the log failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// A wait for a put's or a fence's acknowledgement was cancelled; the record stays
    /// in flight.
    #[error("cancelled while waiting for an acknowledgement")]
    Cancelled,
    /// No operator is running (crashed and not restored).
    #[error("no operator is running")]
    NotRunning,
    /// No requested or returned call at this index.
    #[error("no call at index {0}")]
    NoSuchCall(usize),
}

/// The operator of incarnation `epoch` restored from `checkpoint` over `log`: every
/// partition read from the checkpoint's marker to its end, in batches, each record
/// handed to the rebuild. A fencing restore appends its fences ([`append_fences`])
/// before.
pub fn restore_from_log<L: Log>(
    actions: Vec<ActionDef>,
    checkpoint: &Checkpoint,
    log: &mut L,
    epoch: Epoch,
) -> Result<(Operator, RebuildReport), DriverError> {
    let restoring = Operator::restore(actions, checkpoint, epoch)?;
    replay(restoring, log)
}

/// The operator of incarnation `epoch` after a restart with no completed checkpoint,
/// once its fences are acknowledged: restored from an empty checkpoint of its own whose
/// marker is the log's end offsets read now, each at fence level `epoch` (its own fences
/// are before them). It rebuilds nothing, as a fresh operator would, but its store knows
/// the fences, so the markers of its checkpoints carry their level.
pub fn restart_without_checkpoint<L: Log>(
    actions: Vec<ActionDef>,
    log: &mut L,
    epoch: Epoch,
) -> Result<Operator, DriverError> {
    let ends = log.end_offsets()?;
    let own = Checkpoint {
        id: 0,
        keys: BTreeMap::new(),
        marker: RecoveryMarker {
            levels: vec![epoch; ends.len()],
            offsets: ends,
        },
    };
    let restoring = Operator::restore_after_own_fences(actions, &own, epoch)?;
    Ok(replay(restoring, log)?.0)
}

/// Append a fence record of `epoch` to every partition of `log`, flush, and wait for
/// every acknowledgement (`durable.driver fence` per fence): from then on, a state a
/// crashed incarnation sends is stale to every replay that reads past the fence.
pub fn append_fences<L: Log>(
    log: &mut L,
    epoch: Epoch,
    cancel: &Cancellation,
) -> Result<(), DriverError> {
    let mut acks = Vec::new();
    for partition in 0..log.partition_count() {
        let fence = fence_record(partition, epoch);
        acks.push((partition, log.send(partition, &fence.key, &fence.value)?));
    }
    log.flush()?;
    for (partition, mut ack) in acks {
        let offset = match ack.wait(cancel) {
            Ok(offset) => offset,
            Err(AckError::Log(error)) => return Err(error.into()),
            Err(AckError::Cancelled) => return Err(DriverError::Cancelled),
        };
        tracing::info!(
            component = "durable.driver",
            event = "fence",
            partition,
            offset,
            epoch,
        );
    }
    Ok(())
}

/// Every partition of `log` read from `restoring`'s marker to its end, then finished.
fn replay<L: Log>(
    mut restoring: Restoring,
    log: &mut L,
) -> Result<(Operator, RebuildReport), DriverError> {
    let ends = log.end_offsets()?;
    for (p, &end) in ends.iter().enumerate() {
        let Some(mut next) = restoring.marker().get(p).copied() else {
            break;
        };
        while next < end {
            let batch = log.read(p as u32, next, REPLAY_BATCH)?;
            if batch.is_empty() {
                break;
            }
            for record in &batch {
                restoring.feed(record)?;
                next = record.offset + 1;
            }
        }
    }
    Ok(restoring.finish(&ends)?)
}

#[derive(Clone)]
struct Snapshot {
    id: u64,
    checkpoint: Checkpoint,
    source_pos: usize,
    outputs_before: usize,
}

/// Whether the state `state` of `key` saves `call`'s result (`sk` is the call's state
/// key): it holds the call's index, or completes the action.
fn saves(key: &StateKey, state: &ActionState, sk: &StateKey, call: &CallRef) -> bool {
    key == sk && (state.completed || state.call_results.len() > call.index as usize)
}

/// The driver.
pub struct Driver<L: Log> {
    actions: Vec<ActionDef>,
    reopen: Reopen<L>,
    supplier: Supplier,
    log: Option<L>,
    op: Option<Operator>,
    cancel: Cancellation,
    source: Vec<(String, Datum)>,
    delivered: usize,
    requested: Vec<RequestedCall>,
    returned: Vec<(RequestedCall, CallOutcome)>,
    supplier_calls: BTreeMap<CallRef, u32>,
    unlanded: BTreeMap<CallRef, u32>,
    emitted: Vec<OutputRecord>,
    uncommitted: Vec<OutputRecord>,
    committed: Vec<OutputRecord>,
    snapshots: Vec<Snapshot>,
    completed: Option<Snapshot>,
    next_checkpoint: u64,
    last_rebuild: Option<RebuildReport>,
    flushes: u64,
    /// The records whose puts were acknowledged in the last `execute`: they landed, so
    /// the calls they save need no read-back. Bounded by the puts of one execute.
    acked: Vec<LogRecord>,
    /// Epoch of the current (or, crashed, the last) incarnation.
    epoch: Epoch,
    /// Whether a restore fences the log before it reads it.
    fencing: bool,
}

impl<L: Log> Driver<L> {
    /// Open the log and start a fresh operator.
    pub fn new(
        actions: Vec<ActionDef>,
        mut reopen: Reopen<L>,
        supplier: Supplier,
    ) -> Result<Self, DriverError> {
        let log = reopen()?;
        let op = Operator::new(actions.clone(), log.partition_count())?;
        let mut driver = Driver::idle(actions, reopen, supplier);
        driver.log = Some(log);
        driver.op = Some(op);
        Ok(driver)
    }

    /// The driver of a task that takes over after its previous incarnation (another
    /// process, over the same log, of epoch `crashed_epoch`) crashed: it logs that crash
    /// (`durable.task crash`, which that process could not log), and opens the log and
    /// runs an operator of the next epoch only at [`Driver::restore`]. Give it the
    /// source's inputs up to the checkpoint to restore from and
    /// [`Driver::adopt_checkpoint`] that checkpoint first; with no checkpoint the restore
    /// starts a fresh operator.
    pub fn after_crash(
        actions: Vec<ActionDef>,
        reopen: Reopen<L>,
        supplier: Supplier,
        crashed_epoch: Epoch,
    ) -> Self {
        let mut driver = Driver::idle(actions, reopen, supplier);
        driver.epoch = crashed_epoch;
        tracing::info!(
            component = "durable.task",
            event = "crash",
            incarnation = "previous"
        );
        driver
    }

    fn idle(actions: Vec<ActionDef>, reopen: Reopen<L>, supplier: Supplier) -> Self {
        Driver {
            actions,
            reopen,
            supplier,
            log: None,
            op: None,
            cancel: Cancellation::new(),
            source: Vec::new(),
            delivered: 0,
            requested: Vec::new(),
            returned: Vec::new(),
            supplier_calls: BTreeMap::new(),
            unlanded: BTreeMap::new(),
            emitted: Vec::new(),
            uncommitted: Vec::new(),
            committed: Vec::new(),
            snapshots: Vec::new(),
            completed: None,
            next_checkpoint: 1,
            last_rebuild: None,
            flushes: 0,
            acked: Vec::new(),
            epoch: 1,
            fencing: true,
        }
    }

    /// Hand `event` to the operator and carry out what follows, until no put is in
    /// flight.
    fn handle(&mut self, event: Event) -> Result<(), DriverError> {
        let effects = self.op_mut()?.handle(event)?;
        self.execute(effects)
    }

    /// Carry out `effects`: calls are queued for the supplier, outputs go to the sink,
    /// appends are sent and, after the flush, their acknowledgements awaited and handed
    /// back; the effects those answers cause are carried out in turn.
    fn execute(&mut self, mut effects: Vec<Effect>) -> Result<(), DriverError> {
        self.acked.clear();
        loop {
            let mut puts: Vec<((String, PutId), PutRecord)> = Vec::new();
            let mut flush = false;
            for effect in effects.drain(..) {
                match effect {
                    Effect::Call {
                        call,
                        function,
                        args,
                    } => self.requested.push(RequestedCall {
                        call,
                        function,
                        args,
                    }),
                    Effect::Emit { key, seq, outputs } => {
                        let out = OutputRecord { key, seq, outputs };
                        self.emitted.push(out.clone());
                        self.uncommitted.push(out);
                    }
                    Effect::Append { key, put, record } => puts.push(((key, put), record)),
                    Effect::Flush => flush = true,
                }
            }
            // The operator asks for a flush after every append.
            debug_assert!(flush || puts.is_empty(), "appends without a flush");
            if puts.is_empty() {
                return Ok(());
            }
            let answers = self.commit(puts)?;
            for answer in answers {
                let more = self.op_mut()?.handle(answer)?;
                effects.extend(more);
            }
        }
    }

    /// Make `puts` durable by one group commit, keep the acknowledged records for the
    /// projection, and return the operator's answers.
    fn commit(
        &mut self,
        puts: Vec<((String, PutId), PutRecord)>,
    ) -> Result<Vec<Event>, DriverError> {
        let log = self.log.as_mut().ok_or(DriverError::NotRunning)?;
        let cancel = &self.cancel;
        let committed = group_commit(log, puts, |ack| ack.wait(cancel))
            .map_err(|Cancelled| DriverError::Cancelled)?;
        if committed.flushed {
            self.flushes += 1;
        }
        let mut answers = Vec::with_capacity(committed.answers.len());
        for ((key, put), record, answer) in committed.answers {
            answers.push(match answer {
                Ok(offset) => {
                    self.acked.push(LogRecord {
                        partition: record.partition,
                        offset,
                        key: record.key,
                        value: record.value,
                    });
                    Event::PutAcked { key, put, offset }
                }
                Err(error) => Event::PutFailed { key, put, error },
            });
        }
        Ok(answers)
    }

    fn op_mut(&mut self) -> Result<&mut Operator, DriverError> {
        self.op.as_mut().ok_or(DriverError::NotRunning)
    }

    /// Append an input to the source and deliver it if an operator is running.
    /// An input the operator fails on stays in the source and is re-delivered by
    /// a restore from a checkpoint taken before it.
    pub fn input(&mut self, key: impl Into<String>, value: Datum) -> Result<(), DriverError> {
        self.source.push((key.into(), value));
        if self.op.is_none() {
            return Ok(());
        }
        self.deliver_source()
    }

    fn deliver_source(&mut self) -> Result<(), DriverError> {
        while self.delivered < self.source.len() {
            let (key, value) = self.source[self.delivered].clone();
            self.delivered += 1;
            self.handle(Event::Input { key, value })?;
        }
        Ok(())
    }

    /// Calls requested and not yet run.
    pub fn requested_calls(&self) -> &[RequestedCall] {
        &self.requested
    }

    /// Calls whose supplier ran and whose outcome was not yet delivered.
    pub fn returned_calls(&self) -> Vec<CallRef> {
        self.returned.iter().map(|(r, _)| r.call.clone()).collect()
    }

    /// Run the supplier of requested call `index` without delivering its outcome. A
    /// failed operator refuses every outcome, so its requests are not run: the call
    /// would be an external effect whose result can never be saved.
    pub fn run_supplier(&mut self, index: usize) -> Result<(), DriverError> {
        if index >= self.requested.len() {
            return Err(DriverError::NoSuchCall(index));
        }
        if let Some(reason) = self.op.as_ref().and_then(|op| op.failure()) {
            return Err(OperatorError::Failed(Box::new(reason.clone())).into());
        }
        let req = self.requested.remove(index);
        let outcome = (self.supplier)(&req.call, &req.function, &req.args);
        *self.supplier_calls.entry(req.call.clone()).or_default() += 1;
        // The model's `CallSupplier`: the supplier returned (as the simulated task logs it).
        tracing::info!(
            component = "durable.supplier",
            event = "call",
            key = %req.call.key,
            seq = req.call.seq,
            action = %req.call.action,
            index = req.call.index,
        );
        self.returned.push((req, outcome));
        Ok(())
    }

    /// Deliver returned call `index` to the operator, which saves it with a put; the
    /// put is answered before this returns.
    pub fn deliver(&mut self, index: usize) -> Result<(), DriverError> {
        // A crash drops every returned call: with none, no operator is needed.
        if index >= self.returned.len() {
            return Err(DriverError::NoSuchCall(index));
        }
        let (req, outcome) = self.returned.remove(index);
        self.deliver_calls(vec![(req, outcome)])
    }

    /// Deliver every returned call at once: their puts are sent together and one flush
    /// makes them durable (group commit).
    pub fn deliver_all(&mut self) -> Result<(), DriverError> {
        if self.op.is_none() {
            return Err(DriverError::NotRunning);
        }
        let returned = std::mem::take(&mut self.returned);
        self.deliver_calls(returned)
    }

    fn deliver_calls(
        &mut self,
        calls: Vec<(RequestedCall, CallOutcome)>,
    ) -> Result<(), DriverError> {
        let partitions = self
            .log
            .as_ref()
            .ok_or(DriverError::NotRunning)?
            .partition_count();
        let ends_before = self.ends()?;
        let mut effects = Vec::new();
        let mut delivered = Vec::with_capacity(calls.len());
        let mut result = Ok(());
        for (req, outcome) in calls {
            let event = Event::CallReturned {
                call: req.call.clone(),
                outcome,
            };
            delivered.push(req.call);
            match self
                .op_mut()
                .and_then(|op| Ok(op.handle_into(event, &mut effects)?))
            {
                Ok(()) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() {
            result = self.execute(effects);
        } else {
            self.acked.clear();
        }
        // A call saved by an acknowledged put landed; for the others the log is read
        // from where it ended before the delivery (a failed put may still have landed).
        let mut acked = Vec::with_capacity(self.acked.len());
        for record in &self.acked {
            acked.extend(decode_record(record)?);
        }
        for call in delivered {
            let sk = call.state_key();
            if acked.iter().any(|(k, state)| saves(k, state, &sk, &call)) {
                continue;
            }
            let partition = partition_for(&call.key, partitions);
            let from = ends_before.get(partition as usize).copied().unwrap_or(0);
            if !self.landed_since(partition, from, &call)? {
                *self.unlanded.entry(call).or_default() += 1;
            }
        }
        result
    }

    fn ends(&mut self) -> Result<Vec<Offset>, DriverError> {
        let log = self.log.as_mut().ok_or(DriverError::NotRunning)?;
        Ok(log.end_offsets()?)
    }

    /// Whether a record saving `call`'s result landed at or after `from`.
    fn landed_since(
        &mut self,
        partition: u32,
        from: u64,
        call: &CallRef,
    ) -> Result<bool, DriverError> {
        let log = self.log.as_mut().ok_or(DriverError::NotRunning)?;
        let sk = call.state_key();
        let mut next = from;
        loop {
            let batch = log.read(partition, next, 256)?;
            if batch.is_empty() {
                return Ok(false);
            }
            for record in &batch {
                next = record.offset + 1;
                // Fences save nothing.
                let Some((k, state)) = decode_record(record)? else {
                    continue;
                };
                if saves(&k, &state, &sk, call) {
                    return Ok(true);
                }
            }
        }
    }

    /// Run and deliver requested call `index`.
    pub fn call(&mut self, index: usize) -> Result<(), DriverError> {
        self.run_supplier(index)?;
        self.deliver(self.returned.len() - 1)
    }

    /// Run and deliver requested calls until none is left, one at a time.
    pub fn run_until_idle(&mut self) -> Result<(), DriverError> {
        while !self.requested.is_empty() {
            self.call(0)?;
        }
        Ok(())
    }

    /// Run every requested call, then deliver their outcomes together (one flush for
    /// all their puts), until none is left.
    pub fn run_until_idle_grouped(&mut self) -> Result<(), DriverError> {
        while !self.requested.is_empty() {
            while !self.requested.is_empty() {
                self.run_supplier(0)?;
            }
            self.deliver_all()?;
        }
        Ok(())
    }

    /// Take a checkpoint; returns its id.
    pub fn checkpoint(&mut self) -> Result<u64, DriverError> {
        let ends = self.ends()?;
        let id = self.next_checkpoint;
        let checkpoint = self.op_mut()?.snapshot(id, &ends)?;
        self.next_checkpoint += 1;
        self.snapshots.push(Snapshot {
            id,
            checkpoint,
            source_pos: self.delivered,
            outputs_before: self.uncommitted.len(),
        });
        Ok(id)
    }

    /// Complete checkpoint `id`: the operator prunes and the sink commits the
    /// outputs emitted before it. Returns false for an unknown id.
    pub fn complete_checkpoint(&mut self, id: u64) -> Result<bool, DriverError> {
        let Some(i) = self.snapshots.iter().position(|s| s.id == id) else {
            return Ok(false);
        };
        self.op_mut()?.checkpoint_complete(id);
        let mut rest = self.snapshots.split_off(i);
        let snap = rest.remove(0);
        self.snapshots = rest;
        let n = snap.outputs_before;
        self.committed.extend(self.uncommitted.drain(..n));
        for s in &mut self.snapshots {
            s.outputs_before -= n;
        }
        self.completed = Some(snap);
        Ok(true)
    }

    /// Take `checkpoint`, completed by an earlier incarnation of the job (another
    /// process, over the same log), as the latest completed checkpoint, covering the
    /// first `source_pos` inputs of the source (give the source those inputs first,
    /// while no operator runs): the next [`Driver::restore`] starts from it. Pending
    /// checkpoints are dropped, and later checkpoint ids follow its id.
    pub fn adopt_checkpoint(&mut self, checkpoint: Checkpoint, source_pos: usize) {
        self.snapshots.clear();
        self.next_checkpoint = self.next_checkpoint.max(checkpoint.id + 1);
        self.completed = Some(Snapshot {
            id: checkpoint.id,
            checkpoint,
            source_pos,
            outputs_before: 0,
        });
    }

    /// Abort checkpoint `id`.
    pub fn abort_checkpoint(&mut self, id: u64) -> Result<bool, DriverError> {
        let Some(i) = self.snapshots.iter().position(|s| s.id == id) else {
            return Ok(false);
        };
        self.snapshots.remove(i);
        Ok(self.op_mut()?.checkpoint_aborted(id))
    }

    /// Crash: the operator, its uncommitted outputs, pending checkpoints and every
    /// call in flight are lost. A supplier that ran without its outcome delivered
    /// counts as a run whose record never reached the log.
    pub fn crash(&mut self) {
        for (req, _) in self.returned.drain(..) {
            *self.unlanded.entry(req.call).or_default() += 1;
        }
        self.requested.clear();
        self.snapshots.clear();
        self.uncommitted.clear();
        self.op = None;
        self.log = None;
        tracing::info!(component = "durable.task", event = "crash");
    }

    /// Restore from the latest completed checkpoint (crashing first if an operator
    /// is running), resume its queued actions and re-deliver the source's inputs
    /// after the checkpoint. With no completed checkpoint the operator starts
    /// fresh and the whole source is re-delivered.
    pub fn restore(&mut self) -> Result<Option<RebuildReport>, DriverError> {
        self.restore_with(Cancellation::new())
    }

    /// [`Driver::restore`] for a task asked to stop while it restores: the driver's
    /// cancellation signal is already set, so a put whose acknowledgement does not come
    /// at once ends the wait with [`DriverError::Cancelled`].
    pub fn restore_cancelled(&mut self) -> Result<Option<RebuildReport>, DriverError> {
        let cancel = Cancellation::new();
        cancel.cancel();
        self.restore_with(cancel)
    }

    fn restore_with(&mut self, cancel: Cancellation) -> Result<Option<RebuildReport>, DriverError> {
        if self.op.is_some() {
            self.crash();
        }
        // The old handle goes first: a file log's directory stays locked while it lives.
        self.log = None;
        let mut log = (self.reopen)()?;
        self.epoch += 1;
        if self.fencing {
            append_fences(&mut log, self.epoch, &cancel)?;
        }
        let (op, report, pos) = self.restored_operator(&mut log)?;
        self.log = Some(log);
        self.op = Some(op);
        self.cancel = cancel;
        self.delivered = pos;
        self.last_rebuild = report.clone();
        let checkpoint = self.completed.as_ref().map(|s| s.id);
        tracing::info!(
            component = "durable.driver",
            event = "restore",
            checkpoint,
            epoch = self.epoch,
            source_pos = pos,
        );
        self.handle(Event::Resume)?;
        self.deliver_source()?;
        Ok(report)
    }

    /// The operator of this incarnation over `log` (fenced if fencing is on), its
    /// rebuild's report and the source position to re-deliver from.
    fn restored_operator(
        &self,
        log: &mut L,
    ) -> Result<(Operator, Option<RebuildReport>, usize), DriverError> {
        let actions = self.actions.clone();
        Ok(match &self.completed {
            Some(snap) => {
                let (op, report) = restore_from_log(actions, &snap.checkpoint, log, self.epoch)?;
                (op, Some(report), snap.source_pos)
            }
            None if self.fencing => (
                restart_without_checkpoint(actions, log, self.epoch)?,
                None,
                0,
            ),
            None => (
                Operator::new_at(actions, log.partition_count(), self.epoch)?,
                None,
                0,
            ),
        })
    }

    /// Epoch of the running incarnation (of the last one, while crashed).
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// Whether restores fence the log: for tests that show what fencing prevents; a
    /// deployment never turns it off.
    #[doc(hidden)]
    pub fn set_fencing(&mut self, on: bool) {
        self.fencing = on;
    }

    /// The running operator, if any.
    pub fn operator(&self) -> Option<&Operator> {
        self.op.as_ref()
    }

    /// The running operator, mutably.
    pub fn operator_mut(&mut self) -> Option<&mut Operator> {
        self.op.as_mut()
    }

    /// The current log handle, if an operator is running.
    pub fn log(&self) -> Option<&L> {
        self.log.as_ref()
    }

    /// The cancellation signal the driver's waits observe.
    pub fn cancellation(&self) -> &Cancellation {
        &self.cancel
    }

    /// Flushes the driver asked of the log so far.
    pub fn flushes(&self) -> u64 {
        self.flushes
    }

    /// Supplier runs per call.
    pub fn supplier_calls(&self) -> &BTreeMap<CallRef, u32> {
        &self.supplier_calls
    }

    /// Runs per call whose result record never reached the log.
    pub fn unlanded_runs(&self) -> &BTreeMap<CallRef, u32> {
        &self.unlanded
    }

    /// Every output emitted, across crashes.
    pub fn emitted(&self) -> &[OutputRecord] {
        &self.emitted
    }

    /// Outputs committed by completed checkpoints.
    pub fn committed(&self) -> &[OutputRecord] {
        &self.committed
    }

    /// The latest completed checkpoint, if any.
    pub fn completed_checkpoint(&self) -> Option<&Checkpoint> {
        self.completed.as_ref().map(|s| &s.checkpoint)
    }

    /// What the last restore's rebuild did.
    pub fn last_rebuild(&self) -> Option<&RebuildReport> {
        self.last_rebuild.as_ref()
    }

    /// The projection of the current state. Reading the log needs a log handle, so
    /// between a crash and a restore the log is reopened for reading.
    pub fn projection(&mut self) -> Result<Projection, DriverError> {
        let mut reopened;
        let log = match &mut self.log {
            Some(l) => l,
            None => {
                reopened = (self.reopen)()?;
                &mut reopened
            }
        };
        let ends = log.end_offsets()?;
        let mut parts = Vec::with_capacity(ends.len());
        for (p, &end) in ends.iter().enumerate() {
            let mut records: Vec<LogRecord> = Vec::with_capacity(end as usize);
            while (records.len() as u64) < end {
                let batch = log.read(p as u32, records.len() as u64, 1024)?;
                if batch.is_empty() {
                    break;
                }
                records.extend(batch);
            }
            parts.push(project_log(&records)?);
        }
        let counts = |runs: &BTreeMap<CallRef, u32>| -> Vec<CallCount> {
            runs.iter()
                .map(|(call, &count)| CallCount {
                    call: call.clone(),
                    count,
                })
                .collect()
        };
        let op = self.op.as_ref();
        Ok(Projection {
            running: op.is_some(),
            failure: op.and_then(|op| op.failure()).map(|e| e.to_string()),
            keys: op.map(project_keys).unwrap_or_default(),
            activity: op.map(project_activity).unwrap_or_default(),
            cache: op.map(project_cache).unwrap_or_default(),
            log: parts,
            pending_checkpoints: self
                .snapshots
                .iter()
                .map(|s| project_checkpoint(&s.checkpoint))
                .collect(),
            completed_checkpoint: self
                .completed
                .as_ref()
                .map(|s| project_checkpoint(&s.checkpoint)),
            emitted: self.emitted.clone(),
            committed: self.committed.clone(),
            supplier_calls: counts(&self.supplier_calls),
            unlanded_runs: counts(&self.unlanded),
        })
    }

    /// An independent copy of this driver, to explore another future from here: the
    /// same operator, source, calls, checkpoints, outputs and counts, over the log
    /// `reopen` opens (a copy of this driver's, such as a [`crate::MemoryLog::fork`]),
    /// with `supplier`. Its cancellation signal is its own, set if this one's is.
    #[cfg(any(test, feature = "testkit"))]
    pub fn fork(&self, mut reopen: Reopen<L>, supplier: Supplier) -> Result<Self, DriverError> {
        let log = match self.log {
            Some(_) => Some(reopen()?),
            None => None,
        };
        let cancel = Cancellation::new();
        if self.cancel.is_cancelled() {
            cancel.cancel();
        }
        Ok(Driver {
            actions: self.actions.clone(),
            reopen,
            supplier,
            log,
            op: self.op.clone(),
            cancel,
            source: self.source.clone(),
            delivered: self.delivered,
            requested: self.requested.clone(),
            returned: self.returned.clone(),
            supplier_calls: self.supplier_calls.clone(),
            unlanded: self.unlanded.clone(),
            emitted: self.emitted.clone(),
            uncommitted: self.uncommitted.clone(),
            committed: self.committed.clone(),
            snapshots: self.snapshots.clone(),
            completed: self.completed.clone(),
            next_checkpoint: self.next_checkpoint,
            last_rebuild: self.last_rebuild.clone(),
            flushes: self.flushes,
            acked: Vec::new(),
            epoch: self.epoch,
            fencing: self.fencing,
        })
    }
}
