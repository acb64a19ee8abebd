//! Restore: the checks a checkpoint passes before the operator takes it (its actions
//! and keyed state could have been written by an operator running these actions; its
//! epoch is above every fence level of its marker), and the restore in progress
//! ([`Restoring`]) that rebuilds the store from the log's records after the marker.

use std::sync::Arc;

use super::keyed::{boundaries, KeyMap, KeyState};
use super::{ActionDef, Checkpoint, Operator, OperatorError};
use crate::durable::log::{LogRecord, Offset};
use crate::durable::store::{Ownership, Rebuild, RebuildReport, RecoveryMarker};
use crate::durable::Epoch;

/// Refuses two actions of one name.
pub(super) fn check_actions(actions: &[ActionDef]) -> Result<(), OperatorError> {
    for (i, a) in actions.iter().enumerate() {
        if actions[..i].iter().any(|b| b.name == a.name) {
            return Err(OperatorError::DuplicateAction(a.name.clone()));
        }
    }
    Ok(())
}

/// Refuses a checkpoint whose keyed state no operator could have written: an unknown
/// action, sequence numbers out of order or at the counter's end, a queue that is not
/// the remaining actions of the input after the last completed one.
fn check_checkpoint(actions: &[ActionDef], checkpoint: &Checkpoint) -> Result<(), OperatorError> {
    check_marker(&checkpoint.marker)?;
    for (key, ks) in &checkpoint.keys {
        check_key_state(actions, key, ks)?;
    }
    Ok(())
}

/// Refuses a recovery marker that names no partition, or fence levels for some other
/// number of partitions.
fn check_marker(marker: &RecoveryMarker) -> Result<(), OperatorError> {
    if marker.offsets.is_empty() {
        return Err(OperatorError::InvalidCheckpoint(
            "the recovery marker names no partition".into(),
        ));
    }
    if !marker.levels.is_empty() && marker.levels.len() != marker.offsets.len() {
        return Err(OperatorError::InvalidCheckpoint(format!(
            "the recovery marker names {} fence levels for {} partitions",
            marker.levels.len(),
            marker.offsets.len()
        )));
    }
    Ok(())
}

/// The refusal of `key`'s keyed state for `what`.
fn invalid(key: &str, what: String) -> Result<(), OperatorError> {
    Err(OperatorError::InvalidCheckpoint(format!(
        "key {key:?}: {what}"
    )))
}

/// Refuses keyed state `ks` of `key` that an operator running `actions` could not have
/// written (see [`check_checkpoint`]).
fn check_key_state(actions: &[ActionDef], key: &str, ks: &KeyState) -> Result<(), OperatorError> {
    // The counter's last value is never handed out: the next input would wrap it.
    if ks.next_seq == u64::MAX {
        return invalid(key, "next sequence number is at the counter's end".into());
    }
    if let Some(done) = ks.last_completed {
        if done >= ks.next_seq {
            return invalid(
                key,
                format!(
                    "last completed sequence {done} is not below the next, {}",
                    ks.next_seq
                ),
            );
        }
    }
    let current = ks.last_completed.map_or(0, |d| d + 1);
    if ks.queue.len() > actions.len() {
        return invalid(
            key,
            format!(
                "{} actions queued, {} configured",
                ks.queue.len(),
                actions.len()
            ),
        );
    }
    let first = actions.len() - ks.queue.len();
    for (i, q) in ks.queue.iter().enumerate() {
        if q.seq != current {
            return invalid(
                key,
                format!(
                    "queues sequence {} while the current input is {current}",
                    q.seq
                ),
            );
        }
        match actions.get(first + i) {
            Some(a) if a.name == q.action => {}
            _ if !actions.iter().any(|a| a.name == q.action) => {
                return invalid(key, format!("queues unknown action {:?}", q.action));
            }
            _ => {
                return invalid(
                    key,
                    format!("queues action {:?} out of the configured order", q.action),
                );
            }
        }
    }
    let mut expected = if ks.queue.is_empty() {
        current
    } else {
        current + 1
    };
    for p in &ks.pending_inputs {
        if p.seq != expected || p.seq >= ks.next_seq {
            return invalid(
                key,
                format!(
                    "pending input has sequence {} where {expected} was expected",
                    p.seq
                ),
            );
        }
        expected += 1;
    }
    if expected != ks.next_seq {
        return invalid(
            key,
            format!(
                "inputs up to sequence {expected} are accounted for, the next is {}",
                ks.next_seq
            ),
        );
    }
    Ok(())
}

/// A restore in progress ([`Operator::restore`]): the checkpoint was checked; the log's
/// records from its marker to the end are fed in, partition by partition, then
/// [`Restoring::finish`] gives the operator. A copy goes on on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restoring {
    actions: Vec<ActionDef>,
    /// The checkpoint restored; `None` for a restart's own empty one.
    checkpoint_id: Option<u64>,
    epoch: Epoch,
    keys: KeyMap<KeyState>,
    rebuild: Rebuild,
}

impl Restoring {
    /// Where the replay starts, indexed by partition: read each partition from here
    /// to its end.
    pub fn marker(&self) -> &[Offset] {
        self.rebuild.marker()
    }

    /// Take the next record of its partition (records of one partition in offset order,
    /// from the marker on).
    pub fn feed(&mut self, record: &LogRecord) -> Result<(), OperatorError> {
        Ok(self.rebuild.feed(record)?)
    }

    /// The restored operator, once every partition was read up to `log_ends` (the log's
    /// end offsets). Restored actions start running on [`Event::Resume`](super::Event::Resume).
    pub fn finish(self, log_ends: &[Offset]) -> Result<(Operator, RebuildReport), OperatorError> {
        let (store, report) = self.rebuild.finish(log_ends)?;
        tracing::info!(
            component = "durable.operator",
            event = "start",
            restored = self.checkpoint_id.is_some(),
            checkpoint = self.checkpoint_id,
            epoch = self.epoch,
            keys = self.keys.len(),
            records_scanned = report.records_scanned,
            states_loaded = report.states_loaded,
        );
        let mut op = Operator::fresh(self.actions, store);
        op.keys = Arc::new(self.keys);
        Ok((op, report))
    }
}

impl Operator {
    /// Start restoring from `checkpoint` as incarnation `epoch`: its keyed state is
    /// checked (unknown actions, impossible sequence numbers and queues are refused), as
    /// is an epoch not above every fence level of its marker, and the store's rebuild
    /// waits for the log's records from the checkpoint's marker on ([`Restoring`]).
    pub fn restore(
        actions: Vec<ActionDef>,
        checkpoint: &Checkpoint,
        epoch: Epoch,
    ) -> Result<Restoring, OperatorError> {
        Operator::restore_owned(actions, checkpoint, Ownership::All, epoch)
    }

    /// [`Operator::restore`] as one of several subtasks sharing the log: it takes the
    /// keyed state of the keys it owns and replays only their records, from the
    /// checkpoint's marker (for a checkpoint of several parts, their merge,
    /// [`Checkpoint::merge`]).
    pub fn restore_owned(
        actions: Vec<ActionDef>,
        checkpoint: &Checkpoint,
        owned: Ownership,
        epoch: Epoch,
    ) -> Result<Restoring, OperatorError> {
        let marker = &checkpoint.marker;
        let stale = (0..marker.offsets.len()).find(|&p| marker.level(p) >= epoch);
        if let Some(partition) = stale {
            let level = marker.level(partition);
            return Err(OperatorError::StaleEpoch {
                epoch,
                partition,
                level,
            });
        }
        Operator::replaying(actions, checkpoint, owned, epoch)
    }

    /// A restart's restore from its own empty checkpoint, whose marker is at the log's
    /// end after this incarnation's fences: its levels are `epoch` itself, which
    /// [`Operator::restore`] refuses for a checkpoint of an earlier incarnation.
    pub fn restore_after_own_fences(
        actions: Vec<ActionDef>,
        checkpoint: &Checkpoint,
        epoch: Epoch,
    ) -> Result<Restoring, OperatorError> {
        let mut restoring = Operator::replaying(actions, checkpoint, Ownership::All, epoch)?;
        restoring.checkpoint_id = None;
        Ok(restoring)
    }

    fn replaying(
        actions: Vec<ActionDef>,
        checkpoint: &Checkpoint,
        owned: Ownership,
        epoch: Epoch,
    ) -> Result<Restoring, OperatorError> {
        check_actions(&actions)?;
        check_checkpoint(&actions, checkpoint)?;
        let keys: KeyMap<KeyState> = checkpoint
            .keys
            .iter()
            .filter(|(k, _)| owned.owns(k))
            .map(|(k, ks)| (k.clone(), ks.clone()))
            .collect();
        // The store's partitions are the marker's, so the marker fits them.
        let rebuild = Rebuild::new(&checkpoint.marker, boundaries(&keys), owned, epoch)?;
        Ok(Restoring {
            actions,
            checkpoint_id: Some(checkpoint.id),
            epoch,
            keys,
            rebuild,
        })
    }
}
