//! A driver around the sans-IO [`Operator`]: it runs the supplier for each
//! requested call, feeds outcomes back, keeps a replayable source and a sink that
//! commits outputs per checkpoint, and can crash and restore the operator over
//! the same log. It is the harness for the flink-agents issue 1158 scenarios
//! ("checkpoint with an action queued, crash, restore") and for conformance.
//!
//! The driver counts supplier runs per durable call, and separately the runs
//! whose result record never reached the log (the put failed before landing, or
//! a crash came between the supplier's return and the put): the fix promises
//! `runs <= 1 + unlanded runs` per call.

use std::collections::BTreeMap;

use super::log::{Cancellation, Log, LogError, LogRecord};
use super::operator::{ActionDef, Checkpoint, Effect, Event, Operator, OperatorError};
use super::projection::{
    project_cache, project_keys, project_log, CallCount, OutputRecord, Projection,
};
use super::store::{decode_record, RebuildReport, StoreError};
use super::{partition_for, CallOutcome, CallRef, Datum};

/// The external call behind durable calls: (call, function, arguments) to outcome.
pub type Supplier = Box<dyn FnMut(&CallRef, &str, &Datum) -> CallOutcome>;
/// Opens the log for a new operator incarnation (after a crash, a reopen).
pub type Reopen<L> = Box<dyn FnMut() -> Result<L, LogError>>;

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
    /// No operator is running (crashed and not restored).
    #[error("no operator is running")]
    NotRunning,
    /// No requested or returned call at this index.
    #[error("no call at index {0}")]
    NoSuchCall(usize),
}

struct Snapshot {
    id: u64,
    checkpoint: Checkpoint,
    source_pos: usize,
    outputs_before: usize,
}

/// The driver.
pub struct Driver<L: Log + Clone> {
    actions: Vec<ActionDef>,
    reopen: Reopen<L>,
    supplier: Supplier,
    log: Option<L>,
    op: Option<Operator<L>>,
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
}

impl<L: Log + Clone> Driver<L> {
    /// Open the log and start a fresh operator.
    pub fn new(
        actions: Vec<ActionDef>,
        mut reopen: Reopen<L>,
        supplier: Supplier,
    ) -> Result<Self, DriverError> {
        let log = reopen()?;
        let op = Operator::new(actions.clone(), log.clone())?;
        Ok(Driver {
            actions,
            reopen,
            supplier,
            log: Some(log),
            op: Some(op),
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
        })
    }

    fn apply(&mut self, effects: Vec<Effect>) {
        for effect in effects {
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
            }
        }
    }

    fn op_mut(&mut self) -> Result<&mut Operator<L>, DriverError> {
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
            let effects = self.op_mut()?.handle(Event::Input { key, value })?;
            self.apply(effects);
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

    /// Run the supplier of requested call `index` without delivering its outcome.
    pub fn run_supplier(&mut self, index: usize) -> Result<(), DriverError> {
        if index >= self.requested.len() {
            return Err(DriverError::NoSuchCall(index));
        }
        let req = self.requested.remove(index);
        let outcome = (self.supplier)(&req.call, &req.function, &req.args);
        *self.supplier_calls.entry(req.call.clone()).or_default() += 1;
        tracing::debug!(
            component = "durable.driver",
            event = "supplier_ran",
            key = %req.call.key,
            seq = req.call.seq,
            action = %req.call.action,
            index = req.call.index,
        );
        self.returned.push((req, outcome));
        Ok(())
    }

    /// Deliver returned call `index` to the operator (which saves it with a put).
    pub fn deliver(&mut self, index: usize) -> Result<(), DriverError> {
        if index >= self.returned.len() {
            return Err(DriverError::NoSuchCall(index));
        }
        if self.op.is_none() {
            return Err(DriverError::NotRunning);
        }
        let (req, outcome) = self.returned.remove(index);
        let partition = {
            let log = self.log.as_mut().ok_or(DriverError::NotRunning)?;
            partition_for(&req.call.key, log.partition_count())
        };
        let before = self.end_of(partition)?;
        let result = self.op_mut()?.handle(Event::CallReturned {
            call: req.call.clone(),
            outcome,
        });
        let landed = self.landed_since(partition, before, &req.call)?;
        if !landed {
            *self.unlanded.entry(req.call.clone()).or_default() += 1;
        }
        let effects = result?;
        self.apply(effects);
        Ok(())
    }

    fn end_of(&mut self, partition: u32) -> Result<u64, DriverError> {
        let log = self.log.as_mut().ok_or(DriverError::NotRunning)?;
        Ok(log.end_offsets()?[partition as usize])
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
                let (k, state) = decode_record(record)?;
                if k == sk && (state.completed || state.call_results.len() > call.index as usize) {
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

    /// Run and deliver requested calls until none is left.
    pub fn run_until_idle(&mut self) -> Result<(), DriverError> {
        while !self.requested.is_empty() {
            self.call(0)?;
        }
        Ok(())
    }

    /// Take a checkpoint; returns its id.
    pub fn checkpoint(&mut self) -> Result<u64, DriverError> {
        let id = self.next_checkpoint;
        self.next_checkpoint += 1;
        let checkpoint = self.op_mut()?.snapshot(id)?;
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
        tracing::info!(component = "durable.driver", event = "crash");
    }

    /// Restore from the latest completed checkpoint (crashing first if an operator
    /// is running), resume its queued actions and re-deliver the source's inputs
    /// after the checkpoint. With no completed checkpoint the operator starts
    /// fresh and the whole source is re-delivered.
    pub fn restore(&mut self) -> Result<Option<RebuildReport>, DriverError> {
        self.restore_with(Cancellation::new())
    }

    /// [`Driver::restore`] for a task asked to stop while it restores: the new
    /// operator's cancellation signal is already set, so a put whose
    /// acknowledgement does not come at once fails with `Cancelled`.
    pub fn restore_cancelled(&mut self) -> Result<Option<RebuildReport>, DriverError> {
        let cancel = Cancellation::new();
        cancel.cancel();
        self.restore_with(cancel)
    }

    fn restore_with(&mut self, cancel: Cancellation) -> Result<Option<RebuildReport>, DriverError> {
        if self.op.is_some() {
            self.crash();
        }
        let log = (self.reopen)()?;
        let (op, report, pos) = match &self.completed {
            Some(snap) => {
                let (op, report) = Operator::restore_with_cancellation(
                    self.actions.clone(),
                    log.clone(),
                    &snap.checkpoint,
                    cancel,
                )?;
                (op, Some(report), snap.source_pos)
            }
            None => (
                Operator::new_with_cancellation(self.actions.clone(), log.clone(), cancel)?,
                None,
                0,
            ),
        };
        self.log = Some(log);
        self.op = Some(op);
        self.delivered = pos;
        self.last_rebuild = report.clone();
        tracing::info!(
            component = "durable.driver",
            event = "restore",
            checkpoint = self.completed.as_ref().map(|s| s.id),
            source_pos = pos,
        );
        let effects = self.op_mut()?.handle(Event::Resume)?;
        self.apply(effects);
        self.deliver_source()?;
        Ok(report)
    }

    /// The running operator, if any.
    pub fn operator(&self) -> Option<&Operator<L>> {
        self.op.as_ref()
    }

    /// The running operator, mutably.
    pub fn operator_mut(&mut self) -> Option<&mut Operator<L>> {
        self.op.as_mut()
    }

    /// The current log handle, if an operator is running.
    pub fn log(&self) -> Option<&L> {
        self.log.as_ref()
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
        let mut log = match &self.log {
            Some(l) => l.clone(),
            None => (self.reopen)()?,
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
        Ok(Projection {
            running: self.op.is_some(),
            keys: self.op.as_ref().map(project_keys).unwrap_or_default(),
            cache: self.op.as_ref().map(project_cache).unwrap_or_default(),
            log: parts,
            emitted: self.emitted.clone(),
            committed: self.committed.clone(),
            supplier_calls: self
                .supplier_calls
                .iter()
                .map(|(call, &count)| CallCount {
                    call: call.clone(),
                    count,
                })
                .collect(),
        })
    }
}
