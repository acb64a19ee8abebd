//! Task crashes: the incarnation's end, the fences and restore of the next one, and
//! the zombie sends a crash may leave behind.

use steadfast::durable::{Event, Operator};
use steadfast_log::{
    append_fences, restart_without_checkpoint, restore_from_log, AckPoll, Cancellation, Log,
    PendingAck,
};

use super::{open_log, Sim, Zombie};
use crate::durable::{EARLY_ZOMBIE_PERCENT, ZOMBIE_PERCENT};

impl Sim {
    /// The task crashes and restarts at once: every task of the incarnation is aborted,
    /// the operator and the log handle are dropped, the log is reopened, fenced, and the
    /// operator restored from the latest completed checkpoint.
    pub(super) fn crash(&mut self, forced: bool) -> Result<(), String> {
        if !forced && self.outcome.crashes >= u32::from(self.config.crashes) {
            return Ok(());
        }
        tracing::info!(component = "durable.task", event = "crash");
        self.outcome.crashes += 1;
        self.abort_tasks();
        self.inc += 1;
        self.flusher_armed = false;
        self.drop_queue();
        self.put_calls.clear();
        self.pending = None;
        // The old handle goes with the process, before the reopen: the log's directory
        // stays locked while it lives. It holds nothing unsent or unflushed (a flush
        // follows its sends in one step).
        self.log = None;
        self.log = Some(open_log(&self.storage, self.config.partitions)?);
        if self.zombie.is_some() && self.rng.chance(EARLY_ZOMBIE_PERCENT) {
            self.land_zombie()?;
        }
        // The incarnation's epoch: one more than the crashes so far.
        let epoch = self.inc + 1;
        if self.config.fencing {
            self.fence(epoch)?;
        }
        let mut op = self.restored(epoch)?;
        op.set_limits(self.config.limits());
        op.set_defects(&self.config.defects);
        self.op = op;
        self.start_incarnation();
        self.feed(Event::Resume)
    }

    /// The crashed incarnation's queued records: never sent, so lost with the process,
    /// but with `zombie_sends` one may stay with its producer instead. A queued record
    /// is the model's unlanded send (`Crash { landed: false }`): its `put_sent` is
    /// logged and it is in no file; a flushed one has landed, as the file log lands and
    /// flushes in one step. A record not kept is, to the model, a zombie that never lands.
    fn drop_queue(&mut self) {
        let epoch = self.op.epoch();
        for q in std::mem::take(&mut self.queue) {
            let call = self.put_calls.remove(&q.put);
            if let Some(call) = &call {
                // Its result has not reached the log (a zombie's may yet).
                self.runs.entry(call.clone()).or_default().unlanded += 1;
            }
            let keep = self.config.zombie_sends
                && self.zombie.is_none()
                && self.rng.chance(ZOMBIE_PERCENT);
            if keep {
                self.outcome.zombies += 1;
                let call = call.map(|c| {
                    let runs = self.runs.get(&c).map_or(0, |r| r.runs);
                    (c, runs)
                });
                self.zombie = Some(Zombie {
                    record: q.record,
                    epoch,
                    call,
                });
            }
        }
    }

    /// Appends a fence of `epoch` to every partition and awaits the acknowledgements,
    /// as the blocking driver's restore does.
    fn fence(&mut self, epoch: u64) -> Result<(), String> {
        append_fences(self.log()?, epoch, &Cancellation::new())
            .map_err(|e| format!("fencing the log at epoch {epoch}: {e}"))?;
        for level in &mut self.fence_levels {
            *level = epoch;
        }
        Ok(())
    }

    /// The operator of incarnation `epoch`: restored from the completed checkpoint, or
    /// restarted without one (after its own fences, when it fenced).
    fn restored(&mut self, epoch: u64) -> Result<Operator, String> {
        let fencing = self.config.fencing;
        let partitions = u32::from(self.config.partitions);
        let log = self
            .log
            .as_mut()
            .ok_or_else(|| "the log is not open (crashed)".to_string())?;
        match &self.completed {
            Some(checkpoint) => {
                let (op, report) = restore_from_log(self.defs.clone(), checkpoint, log, epoch)
                    .map_err(|e| format!("restoring checkpoint {}: {e}", checkpoint.id))?;
                self.outcome.fenced_skipped += report.fenced_skipped;
                Ok(op)
            }
            None if fencing => restart_without_checkpoint(self.defs.clone(), log, epoch)
                .map_err(|e| format!("restarting the operator: {e}")),
            None => Operator::new_at(self.defs.clone(), partitions, epoch)
                .map_err(|e| format!("restarting the operator: {e}")),
        }
    }

    /// The old producer delivers the zombie's record, late. It is appended through this
    /// incarnation's handle only because the file log admits one writer per directory:
    /// the append stands for the broker taking the crashed producer's request, not for a
    /// send of this incarnation (its bytes carry the old epoch). Behind a newer fence it
    /// is stale; otherwise it is an ordinary record, and if the supplier has not run its
    /// call again since the crash, that call's result reached the log after all.
    pub(super) fn land_zombie(&mut self) -> Result<(), String> {
        let Some(z) = self.zombie.take() else {
            return Ok(());
        };
        let log = self.log()?;
        let mut ack = log
            .send(z.record.partition, &z.record.key, &z.record.value)
            .map_err(|e| format!("landing a zombie: {e}"))?;
        log.flush().map_err(|e| format!("flushing the log: {e}"))?;
        if !matches!(ack.poll(), AckPoll::Acked(_)) {
            return Err("a zombie's flushed send is unacknowledged".into());
        }
        self.outcome.zombies_landed += 1;
        if self.fence_levels[z.record.partition as usize] > z.epoch {
            self.outcome.zombies_stale += 1;
        } else if let Some((call, runs)) = z.call {
            let r = self.runs.entry(call).or_default();
            if r.runs == runs {
                r.unlanded -= 1;
            }
        }
        Ok(())
    }
}
