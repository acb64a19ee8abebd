//! Recovery markers: where a restore replays each partition from, with the fence level
//! there ([`RecoveryMarker`]); the store's marker for a checkpoint; and the merge of the
//! markers of several subtasks ([`merge_recovery_markers`]).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{input_unfinished, ActionStateStore, StoreError};
use crate::durable::log::Offset;
use crate::durable::Epoch;

/// Per-partition offsets from which a restore replays the log, with the fence level in
/// force at each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryMarker {
    /// Replay start offset, indexed by partition.
    pub offsets: Vec<Offset>,
    /// Fence level at each offset, indexed by partition: the highest epoch of the fences
    /// before it (a replay starting there does not read them). Empty in a checkpoint
    /// taken before markers had levels: every level is then 0.
    #[serde(default)]
    pub levels: Vec<Epoch>,
}

impl RecoveryMarker {
    /// A marker at `offsets` with no fence before any of them (every level 0).
    pub fn unfenced(offsets: Vec<Offset>) -> RecoveryMarker {
        RecoveryMarker {
            levels: vec![0; offsets.len()],
            offsets,
        }
    }

    /// The fence level at partition `p`'s offset (0 if the marker names none).
    pub fn level(&self, p: usize) -> Epoch {
        self.levels.get(p).copied().unwrap_or(0)
    }
}

/// Why the parts of a checkpoint taken by several subtasks do not make one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// There is no part to merge.
    #[error("no recovery marker to merge")]
    Empty,
    /// Two markers name different numbers of partitions: they were not taken over one
    /// log.
    #[error("recovery marker {index} names {found} partitions, marker 0 names {expected}")]
    PartitionCount {
        /// The position of the disagreeing marker.
        index: usize,
        /// Partitions of the first marker.
        expected: usize,
        /// Partitions of the disagreeing one.
        found: usize,
    },
    /// Two parts carry different checkpoint ids.
    #[error("checkpoint part {index} has id {found}, part 0 has {expected}")]
    CheckpointId {
        /// The position of the disagreeing part.
        index: usize,
        /// The first part's id.
        expected: u64,
        /// The disagreeing part's id.
        found: u64,
    },
    /// Two parts hold keyed state of one key: two subtasks owned it at once.
    #[error("key {0:?} has keyed state in two checkpoint parts")]
    KeyInTwoParts(String),
}

/// The marker every subtask restores from when several shared the log: per partition,
/// the minimum of the subtasks' markers (Flink Agents' recovery marker is union list
/// state, and each subtask merges the union it is handed), with the fence level of the
/// part that has that minimum (the highest, if several have it: all were read from one
/// log). Each subtask's marker covers only the keys it owned; after a restore a subtask
/// may own keys another one wrote, so replaying from its own marker alone could skip
/// their unfinished states. Markers that disagree in partition count, or none at all,
/// are refused.
pub fn merge_recovery_markers(markers: &[&RecoveryMarker]) -> Result<RecoveryMarker, MergeError> {
    let mut markers = markers.iter();
    let first = markers.next().ok_or(MergeError::Empty)?;
    let mut merged = RecoveryMarker {
        offsets: first.offsets.clone(),
        levels: (0..first.offsets.len()).map(|p| first.level(p)).collect(),
    };
    for (i, m) in markers.enumerate() {
        if m.offsets.len() != merged.offsets.len() {
            return Err(MergeError::PartitionCount {
                index: i + 1,
                expected: merged.offsets.len(),
                found: m.offsets.len(),
            });
        }
        for (p, &offset) in m.offsets.iter().enumerate() {
            let level = m.level(p);
            match offset.cmp(&merged.offsets[p]) {
                Ordering::Less => (merged.offsets[p], merged.levels[p]) = (offset, level),
                Ordering::Equal => merged.levels[p] = merged.levels[p].max(level),
                Ordering::Greater => {}
            }
        }
    }
    Ok(merged)
}

impl ActionStateStore {
    /// The recovery marker for a checkpoint whose keyed state says `last_completed`,
    /// over a log whose end offsets are `log_ends` (indexed by partition).
    pub fn recovery_marker(
        &self,
        log_ends: &[Offset],
        last_completed: &BTreeMap<String, u64>,
    ) -> Result<RecoveryMarker, StoreError> {
        if log_ends.len() != self.partitions as usize {
            return Err(StoreError::InvalidMarker(format!(
                "the log reported {} end offsets for {} partitions",
                log_ends.len(),
                self.partitions
            )));
        }
        let mut offsets = log_ends.to_vec();
        for (key, list) in self.states.iter() {
            for t in list {
                if input_unfinished(key, t.seq, last_completed) {
                    let slot = &mut offsets[t.partition as usize];
                    *slot = (*slot).min(t.offset);
                }
            }
        }
        let levels = self.levels_at(&offsets);
        tracing::debug!(
            component = "durable.store",
            event = "recovery_marker",
            marker = ?offsets,
            levels = ?levels,
        );
        Ok(RecoveryMarker { offsets, levels })
    }

    /// The fence level at each of `offsets`, indexed by partition.
    pub(crate) fn levels_at(&self, offsets: &[Offset]) -> Vec<Epoch> {
        (offsets.iter().zip(self.fences.iter()))
            .map(|(&offset, fences)| fences.level_at(offset))
            .collect()
    }
}
