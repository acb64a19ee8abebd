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

use steadfast::durable::{
    ActionDef, CallOutcome, CallRef, Checkpoint, Datum, Effect, Epoch, Event, LogError, LogRecord,
    Operator, OperatorError, PutId, PutRecord, RebuildReport, StoreError,
};

use crate::group::{group_commit, Cancelled};
use crate::log::{Cancellation, Log, PendingAck};
use crate::projection::OutputRecord;

mod calls;
mod inspect;
mod recovery;

pub use recovery::{append_fences, restart_without_checkpoint, restore_from_log};

/// The external call behind durable calls: (call, function, arguments) to outcome.
pub type Supplier = Box<dyn FnMut(&CallRef, &str, &Datum) -> CallOutcome + Send>;
/// Opens the log for a new operator incarnation (after a crash, a reopen).
pub type Reopen<L> = Box<dyn FnMut() -> Result<L, LogError> + Send>;

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

#[derive(Clone)]
struct Snapshot {
    id: u64,
    checkpoint: Checkpoint,
    source_pos: usize,
    outputs_before: usize,
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
}
