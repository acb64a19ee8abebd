//! Checkpoints, crashes and restores: the driver's checkpoint bookkeeping, and the
//! restore path that fences the log and rebuilds the operator by replaying it.

use std::collections::BTreeMap;

use steadfast::durable::fence_record;
use steadfast::durable::{
    ActionDef, Checkpoint, Epoch, Event, Operator, RebuildReport, RecoveryMarker, Restoring,
};

use super::{Driver, DriverError, Snapshot};
use crate::log::{AckError, Cancellation, Log, PendingAck};

/// Records read per request while a restore replays the log.
const REPLAY_BATCH: usize = 512;

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

impl<L: Log> Driver<L> {
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
}
