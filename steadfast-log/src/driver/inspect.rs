//! What the driver exposes of a run: its operator, log and counts, the projection
//! conformance compares with the model, and a fork to explore another future.

use std::collections::BTreeMap;

use steadfast::durable::{CallRef, Checkpoint, Epoch, LogRecord, Operator, RebuildReport};

use super::{Driver, DriverError, Reopen, Supplier};
use crate::log::{Cancellation, Log};
use crate::projection::{
    project_activity, project_cache, project_checkpoint, project_keys, project_log, CallCount,
    OutputRecord, Projection,
};

impl<L: Log> Driver<L> {
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
