//! The action state store as a plain value: cache, latest acknowledged offsets, per-key
//! tracking, recovery marker, pruning and rebuild, with the semantics of the fix for
//! flink-agents issue 1158. It owns no log and does no IO: whoever owns the log hands it
//! what the log said.
//!
//! - A put is two halves. [`ActionStateStore::encode_put`] turns a state into the record
//!   to append (its partition, key and value bytes). Once the log acknowledged that
//!   record at an offset, [`ActionStateStore::acknowledge`] caches the state and tracks
//!   the offset. A put that failed or was never acknowledged caches nothing (the
//!   unpatched order cached before the acknowledgement).
//! - The recovery marker for partition `p` is the minimum of the log's end offset (handed
//!   in) and the latest acknowledged offset of every state in `p` whose input is
//!   unfinished, as judged by the completed-sequence boundaries captured by the same
//!   checkpoint. The store keeps no copy of those boundaries; the caller passes them in.
//! - A rebuild ([`Rebuild`]) takes the records of each partition from the marker to the
//!   log's end, in offset order: last writer wins per state key, states of finished
//!   inputs are skipped, and a gap or a record past the end is refused.
//! - Epoch fencing: the store writes its incarnation's epoch into every put. A restore
//!   appends a fence of its new epoch to every partition before it reads; the rebuild
//!   keeps each partition's fence level (the highest fence epoch read so far, starting
//!   from the level the marker carries) and skips a state of a lower epoch: a zombie's
//!   send that landed after a newer incarnation fenced the partition. Last writer wins
//!   among the records that are not stale. A record of an epoch above the restoring
//!   one is refused ([`StoreError::FutureEpoch`]).
//! - The marker carries the fence level at each of its offsets, since a replay does not
//!   read the fences before it. The store keeps, per partition, the marker it was
//!   restored from with its level, and the fences its rebuild read: enough to give the
//!   level at any later marker (a marker never moves below the one restored from).
//! - Several operator subtasks may share the log. Each checkpoint holds one marker per
//!   subtask, covering the keys that subtask owned; a restore replays from their
//!   minimum per partition ([`merge_recovery_markers`], Flink Agents' union list state)
//!   and keeps only the records of keys the restored subtask owns ([`Ownership`]).
//! - Prune, after a checkpoint completes, drops finished states and the per-key
//!   tracking of every key left without live state.
//!
//! The cache and the per-key tracking are one map from input key to that key's states
//! (sorted by sequence number and action), behind an `Arc` and copied on write, so a
//! clone of the store costs a reference count until one side changes it.
//!
//! Records use a compact binary format of ours (see [`super::record`]); decoding is
//! strict and names what is wrong with a damaged record.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::log::{Offset, Partition};
use super::record::encode_parts;
use super::{partition_for, ActionState, Epoch, StateKey};

mod marker;
mod queries;
mod rebuild;
#[cfg(test)]
mod tests;

pub use super::error::StoreError;
pub(crate) use super::record::{decode_entry, PutRecord};
pub use marker::{merge_recovery_markers, MergeError, RecoveryMarker};
pub use rebuild::{Ownership, Rebuild, RebuildReport};

/// What a prune removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneReport {
    /// States dropped from the cache and offset tracking.
    pub states_pruned: u64,
    /// Keys whose tracking was dropped because no live state remained.
    pub keys_dropped: u64,
}

/// One cached state of a key, with its latest acknowledged (partition, offset).
#[derive(Clone, PartialEq, Eq)]
struct Tracked {
    seq: u64,
    action: String,
    state: ActionState,
    partition: Partition,
    offset: Offset,
}

/// Where a key's state `(seq, action)` is (`Ok`) or would go (`Err`) in its sorted list.
fn search(states: &[Tracked], seq: u64, action: &str) -> Result<usize, usize> {
    let order = |t: &Tracked| (t.seq, t.action.as_str()).cmp(&(seq, action));
    // A key's running input is its latest: most lookups and every new state are at
    // the end of the list.
    match states.last().map(order) {
        None | Some(Ordering::Less) => Err(states.len()),
        Some(Ordering::Equal) => Ok(states.len() - 1),
        Some(Ordering::Greater) => states.binary_search_by(order),
    }
}

/// The fences one partition's replay went past, to give every later marker its level.
///
/// Bounded: it grows only during a rebuild, by the fences between the marker and the
/// log's end (one per restore since the marker's checkpoint).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
struct Fences {
    /// The offset the store's replay started from and the fence level there ((0, 0) for
    /// a fresh store).
    base: (Offset, Epoch),
    /// (offset, epoch) of every fence the rebuild read, in offset order.
    read: Vec<(Offset, Epoch)>,
}

/// `[(base offset, base level), (fence offset, fence epoch), ...]`.
impl std::fmt::Debug for Fences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entry(&self.base)
            .entries(&self.read)
            .finish()
    }
}

impl Fences {
    /// The fence level at `offset`: the highest epoch of the base and of the fences
    /// before it. Only asked at or after the base: a marker never moves below the one
    /// the store was restored from (the states it tracks were read or put at or after
    /// it, and the log's end only grows), so the fences before it are in the base.
    fn level_at(&self, offset: Offset) -> Epoch {
        debug_assert!(
            offset >= self.base.0,
            "a marker at {offset} is below the replay's start {}",
            self.base.0
        );
        self.read
            .iter()
            .take_while(|&&(at, _)| at < offset)
            .fold(self.base.1, |level, &(_, epoch)| level.max(epoch))
    }
}

/// The action state store. Two stores are equal when they belong to the same epoch,
/// know the same fences and hold the same states at the same offsets; a copy not changed
/// since compares by its shared maps' addresses.
#[derive(Clone, PartialEq, Eq)]
pub struct ActionStateStore {
    partitions: u32,
    /// Epoch of the incarnation whose puts the store encodes.
    epoch: Epoch,
    /// Per partition, the fences behind the levels of the markers it computes.
    fences: Arc<Vec<Fences>>,
    /// Per input key with live state, its cached states sorted by (seq, action).
    /// Looked up at every event: aHash, keyed at random per map like the standard
    /// hasher (input keys come from outside), at a fraction of SipHash's cost.
    states: Arc<HashMap<String, Vec<Tracked>, ahash::RandomState>>,
}

/// Hashes where each cached state is (its key, sequence number, action, partition and
/// offset), not the states themselves: stores equal by [`PartialEq`] hash alike, and
/// stores that differ only in a state's content are told apart by `==`. The map's order
/// is not the store's, so each entry is digested on its own and the digests summed.
impl Hash for ActionStateStore {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Fixed keys: the digests must not depend on the process.
        let digest =
            std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default();
        let mut sum = 0u64;
        for (key, list) in self.states.iter() {
            let mut h = digest.build_hasher();
            key.hash(&mut h);
            for t in list {
                (t.seq, &t.action, t.partition, t.offset).hash(&mut h);
            }
            sum = sum.wrapping_add(h.finish());
        }
        (self.partitions, self.epoch, &*self.fences).hash(state);
        (self.states.len(), sum).hash(state);
    }
}

impl std::fmt::Debug for ActionStateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionStateStore")
            .field("partitions", &self.partitions)
            .field("cached_states", &self.cached_len())
            .field("tracked_keys", &self.states.len())
            .field("epoch", &self.epoch)
            .field("fences", &self.fences)
            .finish()
    }
}

impl ActionStateStore {
    /// A copy that shares no map with this store: equal to it, but compared entry by
    /// entry, not by address. For harnesses that test the equality itself.
    #[cfg(any(test, feature = "testkit"))]
    pub fn unshared(&self) -> ActionStateStore {
        ActionStateStore {
            partitions: self.partitions,
            epoch: self.epoch,
            fences: Arc::new((*self.fences).clone()),
            states: Arc::new((*self.states).clone()),
        }
    }

    /// An empty store of the first incarnation (epoch 1) for a log of `partitions`
    /// partitions (at least one).
    pub fn new(partitions: u32) -> Self {
        ActionStateStore::new_at(partitions, 1)
    }

    /// An empty store of incarnation `epoch` that has seen no fence, for a log of
    /// `partitions` partitions (at least one).
    pub fn new_at(partitions: u32, epoch: Epoch) -> Self {
        let partitions = partitions.max(1);
        ActionStateStore {
            partitions,
            epoch,
            fences: Arc::new(vec![Fences::default(); partitions as usize]),
            states: Arc::default(),
        }
    }

    /// An empty store of incarnation `epoch` whose replay starts at `marker`.
    fn replaying(marker: &RecoveryMarker, epoch: Epoch) -> Self {
        let fences = (marker.offsets.iter().enumerate())
            .map(|(p, &offset)| Fences {
                base: (offset, marker.level(p)),
                read: Vec::new(),
            })
            .collect();
        ActionStateStore {
            partitions: marker.offsets.len() as u32,
            epoch,
            fences: Arc::new(fences),
            states: Arc::default(),
        }
    }

    /// Epoch of the incarnation the store belongs to: every put it encodes carries it.
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// The fence level at `offset` of `partition`: the highest epoch of the fences
    /// before it, as far as the store knows (see [`RecoveryMarker::levels`]).
    pub fn fence_level_at(&self, partition: Partition, offset: Offset) -> Epoch {
        self.fences
            .get(partition as usize)
            .map_or(0, |f| f.level_at(offset))
    }

    /// Number of partitions of the log the store's records go to.
    pub fn partition_count(&self) -> u32 {
        self.partitions
    }

    /// Partition a key's states go to.
    pub fn partition_of(&self, key: &str) -> Partition {
        partition_for(key, self.partitions)
    }

    /// The record that saves `state` under `key`: append it, then hand the offset the
    /// log acknowledged to [`ActionStateStore::acknowledge`]. The store is unchanged.
    pub fn encode_put(&self, key: &StateKey, state: &ActionState) -> Result<PutRecord, StoreError> {
        let mut scratch = (Vec::new(), Vec::new());
        self.encode_at(&key.key, key.seq, &key.action, state, &mut scratch)
    }

    /// [`ActionStateStore::encode_put`] for the state key's parts, borrowed, encoded in
    /// `scratch` (kept by the caller from put to put) and copied out at their exact size:
    /// one allocation per part, none spent on growing.
    pub(crate) fn encode_at(
        &self,
        key: &str,
        seq: u64,
        action: &str,
        state: &ActionState,
        scratch: &mut (Vec<u8>, Vec<u8>),
    ) -> Result<PutRecord, StoreError> {
        let (key_buf, value_buf) = scratch;
        // Fails only for a field longer than `u32::MAX` bytes.
        if let Err(reason) = encode_parts(key, seq, action, state, self.epoch, key_buf, value_buf) {
            let key = StateKey::of(key, seq, action);
            return Err(StoreError::Encode { key, reason });
        }
        Ok(PutRecord {
            partition: self.partition_of(key),
            key: key_buf.as_slice().to_vec(),
            value: value_buf.as_slice().to_vec(),
        })
    }

    /// The log acknowledged the put of `state` under `key` at `offset` of the key's
    /// partition: cache it as the key's latest state and track the offset.
    pub fn acknowledge(&mut self, key: &StateKey, state: ActionState, offset: Offset) {
        let partition = self.partition_of(&key.key);
        self.remember(
            &key.key,
            key.seq,
            Cow::Borrowed(&key.action),
            state,
            partition,
            offset,
            "acked",
        );
    }

    /// Cache `state` as the latest of `key`, at (partition, offset), logged with
    /// `outcome`: `acked` for a put's acknowledgement, `replayed` for a record a rebuild
    /// read back. The action's name is taken (or copied, if borrowed) only for a new
    /// entry.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn remember(
        &mut self,
        key: &str,
        seq: u64,
        action: Cow<'_, str>,
        state: ActionState,
        partition: Partition,
        offset: Offset,
        outcome: &'static str,
    ) {
        tracing::debug!(
            component = "durable.store",
            event = "put",
            key,
            seq,
            action = &*action,
            partition,
            offset,
            completed = state.completed,
            results = state.call_results.len(),
            outcome,
        );
        let states = Arc::make_mut(&mut self.states);
        let tracked = |action: Cow<'_, str>, state| Tracked {
            seq,
            action: action.into_owned(),
            state,
            partition,
            offset,
        };
        match states.get_mut(key) {
            Some(list) => match search(list, seq, &action) {
                Ok(i) => {
                    let t = &mut list[i];
                    // A state's records land in its key's partition in put order.
                    debug_assert!(
                        t.partition == partition && t.offset < offset,
                        "acknowledged offsets of one state grow within its partition"
                    );
                    t.state = state;
                    t.partition = partition;
                    t.offset = offset;
                }
                Err(i) => list.insert(i, tracked(action, state)),
            },
            None => {
                states.insert(key.to_string(), vec![tracked(action, state)]);
            }
        }
    }

    /// Drop the states of inputs finished according to `last_completed` (the
    /// boundaries captured by the checkpoint that just completed), and the tracking
    /// of keys left without live state.
    pub fn prune(&mut self, last_completed: &BTreeMap<String, u64>) -> PruneReport {
        let mut report = PruneReport::default();
        for (key, &boundary) in last_completed {
            // Copy the shared map only where something is dropped.
            let Some(list) = self.states.get(key) else {
                continue;
            };
            if list.first().is_some_and(|t| t.seq > boundary) {
                continue;
            }
            let states = Arc::make_mut(&mut self.states);
            let list = states.get_mut(key).expect("the key's list was just read");
            let finished = list.partition_point(|t| t.seq <= boundary);
            list.drain(..finished);
            report.states_pruned += finished as u64;
            if list.is_empty() {
                states.remove(key);
                report.keys_dropped += 1;
            }
        }
        tracing::debug!(
            component = "durable.store",
            event = "prune",
            states_pruned = report.states_pruned,
            keys_dropped = report.keys_dropped,
            tracked_keys = self.states.len(),
        );
        report
    }
}

/// Whether input `seq` of `key` is after the last one `last_completed` marks finished.
fn input_unfinished(key: &str, seq: u64, last_completed: &BTreeMap<String, u64>) -> bool {
    !matches!(last_completed.get(key), Some(&done) if seq <= done)
}
