//! Checkpoints: the operator's checkpoint value ([`Checkpoint`]: keyed state and
//! recovery marker) and the merge of several subtasks' parts; taking one
//! ([`Operator::snapshot`]), refused while a put is in flight; and the checkpoints taken
//! whose completion prunes the store ([`PendingCheckpoints`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::keyed::{boundaries, KeyState};
use super::{Operator, OperatorError};
use crate::durable::log::Offset;
use crate::durable::store::{merge_recovery_markers, MergeError, PruneReport, RecoveryMarker};

/// The operator's checkpoint value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Checkpoint id given to [`Operator::snapshot`].
    pub id: u64,
    /// Keyed state per key.
    pub keys: BTreeMap<String, KeyState>,
    /// Where a restore replays the log from.
    pub marker: RecoveryMarker,
}

impl Checkpoint {
    /// One checkpoint of the parts several operator subtasks took of checkpoint `id`:
    /// the keyed state of every part (each subtask's keys are its own, so a key in two
    /// parts is refused) and the union minimum of their markers
    /// ([`merge_recovery_markers`]). Each restored subtask then keeps what it owns
    /// ([`Operator::restore_owned`]).
    pub fn merge(parts: &[&Checkpoint]) -> Result<Checkpoint, MergeError> {
        let first = parts.first().ok_or(MergeError::Empty)?;
        let mut keys = BTreeMap::new();
        for (index, part) in parts.iter().enumerate() {
            if part.id != first.id {
                return Err(MergeError::CheckpointId {
                    index,
                    expected: first.id,
                    found: part.id,
                });
            }
            for (key, ks) in &part.keys {
                if keys.insert(key.clone(), ks.clone()).is_some() {
                    return Err(MergeError::KeyInTwoParts(key.clone()));
                }
            }
        }
        let markers: Vec<&RecoveryMarker> = parts.iter().map(|p| &p.marker).collect();
        let marker = merge_recovery_markers(&markers)?;
        debug_assert!(
            parts.iter().all(|p| p
                .marker
                .offsets
                .iter()
                .zip(&marker.offsets)
                .all(|(own, merged)| merged <= own)),
            "the merged marker is at or before every part's"
        );
        Ok(Checkpoint {
            id: first.id,
            keys,
            marker,
        })
    }
}

/// The checkpoints snapshotted whose completion or abort the operator has not heard of,
/// each with the completed-sequence boundaries its completion prunes up to; shared until
/// changed.
#[derive(Clone, Default, PartialEq, Eq)]
pub(super) struct PendingCheckpoints(Arc<BTreeMap<u64, BTreeMap<String, u64>>>);

impl PendingCheckpoints {
    /// Checkpoint `id` was taken with `bounds`; past `limit` (at least one is kept) the
    /// oldest is forgotten.
    fn record(&mut self, id: u64, bounds: BTreeMap<String, u64>, limit: usize) {
        let pending = Arc::make_mut(&mut self.0);
        // Flink does not guarantee that a completion or abort reaches the operator, so a
        // full list holds checkpoints the coordinator has finished with: the oldest goes.
        // If it was still pending, its completion prunes nothing; a later completion
        // prunes what it would have.
        while pending.len() >= limit.max(1) {
            // At least one is kept, so the list is not empty here.
            let (evicted, _) = pending.pop_first().expect("a full list");
            tracing::info!(
                component = "durable.operator",
                event = "checkpoint_evicted",
                checkpoint = evicted,
                limit,
            );
        }
        pending.insert(id, bounds);
        debug_assert!(pending.len() <= limit.max(1));
    }

    /// Checkpoint `id` completed: its boundaries, with every earlier checkpoint
    /// forgotten (subsumed); `None` for an unknown id.
    fn complete(&mut self, id: u64) -> Option<BTreeMap<String, u64>> {
        if !self.0.contains_key(&id) {
            return None;
        }
        let pending = Arc::make_mut(&mut self.0);
        let bounds = pending.remove(&id)?;
        pending.retain(|&other, _| other > id);
        Some(bounds)
    }

    /// Checkpoint `id` was aborted: forgets it. Returns whether it was pending.
    fn abort(&mut self, id: u64) -> bool {
        self.0.contains_key(&id) && Arc::make_mut(&mut self.0).remove(&id).is_some()
    }

    /// A copy that shares no map with this one.
    #[cfg(any(test, feature = "testkit"))]
    pub(super) fn unshared(&self) -> PendingCheckpoints {
        PendingCheckpoints(Arc::new((*self.0).clone()))
    }
}

impl Operator {
    /// Capture a checkpoint over a log whose end offsets are `log_ends` (indexed by
    /// partition): the keyed state and the recovery marker built from the same keyed
    /// state's completed-sequence boundaries. Refused while a put is in flight
    /// ([`OperatorError::PutInFlight`]); the operator is then unchanged.
    pub fn snapshot(&mut self, id: u64, log_ends: &[Offset]) -> Result<Checkpoint, OperatorError> {
        if let Some(reason) = &self.failed {
            return Err(OperatorError::Failed(reason.clone()));
        }
        // The first key in key order, whatever the map's order.
        if let Some((key, _)) = self.waits.puts_in_flight().first() {
            return Err(OperatorError::PutInFlight {
                key: (*key).clone(),
            });
        }
        let bounds = boundaries(self.keys.iter());
        let mut marker = self.store.recovery_marker(log_ends, &bounds)?;
        if self.defects.end_offset_marker {
            // Before the fix: replay starts where the log ends now.
            marker.offsets = log_ends.to_vec();
            marker.levels = self.store.levels_at(log_ends);
        }
        tracing::info!(
            component = "durable.operator",
            event = "snapshot",
            checkpoint = id,
            marker = ?marker.offsets,
            keys = self.keys.len(),
        );
        self.pending_checkpoints
            .record(id, bounds, self.limits.pending_checkpoints);
        Ok(Checkpoint {
            id,
            keys: self
                .keys
                .iter()
                .map(|(k, ks)| (k.clone(), ks.clone()))
                .collect(),
            marker,
        })
    }

    /// Checkpoint `id` completed: prune the states its boundaries mark finished.
    /// Earlier pending checkpoints are subsumed. Returns `None` for an unknown id.
    pub fn checkpoint_complete(&mut self, id: u64) -> Option<PruneReport> {
        let bounds = self.pending_checkpoints.complete(id)?;
        let report = self.store.prune(&bounds);
        tracing::info!(
            component = "durable.operator",
            event = "checkpoint_complete",
            checkpoint = id,
            states_pruned = report.states_pruned,
            keys_dropped = report.keys_dropped,
        );
        Some(report)
    }

    /// The checkpoints snapshotted whose completion or abort this operator has not been
    /// told of (and has not forgotten past [`Limits::pending_checkpoints`](super::Limits::pending_checkpoints)), oldest first.
    pub fn pending_checkpoint_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.pending_checkpoints.0.keys().copied()
    }

    /// Checkpoint `id` was aborted: forget it. Returns whether it was pending.
    pub fn checkpoint_aborted(&mut self, id: u64) -> bool {
        let known = self.pending_checkpoints.abort(id);
        tracing::info!(
            component = "durable.operator",
            event = "checkpoint_aborted",
            checkpoint = id,
            known,
        );
        known
    }
}
