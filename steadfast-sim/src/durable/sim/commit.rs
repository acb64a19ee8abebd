//! The flusher's group commit of queued puts, and the checkpoint coordinator.

use steadfast::durable::{Event, LogError, OperatorError};
use steadfast_log::{group_commit, AckError, AckPoll, Cancelled, Log, PendingAck};

use super::{Fate, Message, Sim};

impl Sim {
    /// The flusher's turn: every queued record is sent, one flush makes them durable,
    /// and each put's answer goes back after its own delay.
    pub(super) fn flush(&mut self) -> Result<(), String> {
        self.flusher_armed = false;
        let queued = std::mem::take(&mut self.queue);
        let mut puts = Vec::new();
        let mut answers = Vec::new();
        for q in queued {
            let call = self.put_calls.remove(&q.put);
            if q.fate == Fate::FailBeforeLanding {
                if let Some(call) = call {
                    self.runs.entry(call).or_default().unlanded += 1;
                }
                let error =
                    LogError::SendFailed("injected failure before the record landed".into());
                answers.push(Event::PutFailed {
                    key: q.key,
                    put: q.put,
                    error,
                });
                continue;
            }
            puts.push(((q.key, q.put, q.fate), q.record));
        }
        // The file log answers a flushed send at once: an acknowledgement still pending
        // after the flush breaks its contract, and stops the run (as a cancelled wait).
        let committed = group_commit(self.log()?, puts, |ack| match ack.poll() {
            AckPoll::Acked(offset) => Ok(offset),
            AckPoll::Failed(e) => Err(AckError::Log(e)),
            AckPoll::Pending => Err(AckError::Cancelled),
        })
        .map_err(|Cancelled| "a flushed send is unacknowledged".to_string())?;
        self.outcome.records_sent += committed.answers.len() as u64;
        if committed.flushed {
            self.outcome.flushes += 1;
        }
        for ((key, put, fate), _, answer) in committed.answers {
            let offset = answer.map_err(|e| format!("the log failed a put: {e}"))?;
            answers.push(match fate {
                Fate::FailAfterLanding => Event::PutFailed {
                    key,
                    put,
                    error: LogError::SendFailed("injected failure after the record landed".into()),
                },
                _ => Event::PutAcked { key, put, offset },
            });
        }
        for answer in answers {
            let delay = self.delay();
            self.after(delay, Message::Answer(answer));
        }
        Ok(())
    }

    /// The coordinator's try: a checkpoint is triggered when the budget allows, none is
    /// pending, and no put is in flight; otherwise it tries again later.
    pub(super) fn trigger(&mut self) -> Result<(), String> {
        if self.next_checkpoint > u64::from(self.config.checkpoints) || self.pending.is_some() {
            return Ok(());
        }
        if !self.op.puts_in_flight().is_empty() {
            self.retry_trigger();
            return Ok(());
        }
        let ends = self
            .log()?
            .end_offsets()
            .map_err(|e| format!("reading the log's end offsets: {e}"))?;
        let id = self.next_checkpoint;
        match self.op.snapshot(id, &ends) {
            Ok(checkpoint) => {
                self.next_checkpoint += 1;
                self.outcome.checkpoints_triggered += 1;
                self.pending = Some(checkpoint);
                let delay = self.delay();
                self.after(delay, Message::Complete { id });
                Ok(())
            }
            Err(OperatorError::PutInFlight { .. }) => {
                self.outcome.snapshots_refused += 1;
                self.retry_trigger();
                Ok(())
            }
            Err(e) => Err(format!("snapshot {id}: {e}")),
        }
    }

    pub(super) fn complete(&mut self, id: u64) -> Result<(), String> {
        let Some(checkpoint) = self.pending.take_if(|c| c.id == id) else {
            return Err(format!("checkpoint {id} completed without being pending"));
        };
        if self.op.checkpoint_complete(id).is_none() {
            return Err(format!("the operator does not know checkpoint {id}"));
        }
        self.outcome.checkpoints_completed += 1;
        self.completed = Some(checkpoint);
        self.arm_trigger();
        Ok(())
    }
}
