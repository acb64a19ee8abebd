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

use super::log::{LogRecord, Offset, Partition};
use super::record::{encode_parts, Entry};
use super::{partition_for, ActionState, Epoch, StateKey};

pub use super::error::StoreError;
pub use super::record::{
    decode_entry, decode_record, encode_record, fence_record, PutRecord, RECORD_FORMAT,
};

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

/// The keys a restored operator subtask owns (Flink's key-group range, as the keys it
/// maps to): a rebuild keeps only their records, and a restore only their keyed state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ownership {
    /// Every key: the only subtask.
    #[default]
    All,
    /// These keys and no other.
    Keys(std::collections::BTreeSet<String>),
}

impl Ownership {
    /// Whether `key` is owned.
    pub fn owns(&self, key: &str) -> bool {
        match self {
            Ownership::All => true,
            Ownership::Keys(keys) => keys.contains(key),
        }
    }
}

/// What a rebuild did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebuildReport {
    /// Records read from the log, over all partitions.
    pub records_scanned: u64,
    /// Records skipped because their input was already finished.
    pub finished_skipped: u64,
    /// Records skipped because their key belongs to another subtask.
    pub foreign_skipped: u64,
    /// Distinct states loaded into the cache.
    pub states_loaded: u64,
    /// Records skipped because a fence of a newer incarnation came before them: sends
    /// of a crashed incarnation that landed after the restore that replaced it.
    #[serde(default)]
    pub fenced_skipped: u64,
}

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

    /// The cached state of `key`, if any.
    pub fn get(&self, key: &StateKey) -> Option<&ActionState> {
        self.state_of(&key.key, key.seq, &key.action)
    }

    /// The cached state of input `seq` of `key` for `action`, if any (a lookup that
    /// needs no [`StateKey`]).
    pub(crate) fn state_of(&self, key: &str, seq: u64, action: &str) -> Option<&ActionState> {
        let list = self.states.get(key)?;
        search(list, seq, action).ok().map(|i| &list[i].state)
    }

    /// Number of cached states.
    pub fn cached_len(&self) -> usize {
        self.states.values().map(Vec::len).sum()
    }

    /// Every cached state with its key, in no particular order.
    fn tracked(&self) -> impl Iterator<Item = (StateKey, &Tracked)> {
        self.states.iter().flat_map(|(key, list)| {
            list.iter().map(|t| {
                let sk = StateKey {
                    key: key.clone(),
                    seq: t.seq,
                    action: t.action.clone(),
                };
                (sk, t)
            })
        })
    }

    /// A copy of every cached state, ordered by state key.
    pub fn cache(&self) -> BTreeMap<StateKey, ActionState> {
        self.tracked()
            .map(|(sk, t)| (sk, t.state.clone()))
            .collect()
    }

    /// Latest acknowledged (partition, offset) of every cached state, ordered by
    /// state key.
    pub fn latest_offsets(&self) -> BTreeMap<StateKey, (Partition, Offset)> {
        self.tracked()
            .map(|(sk, t)| (sk, (t.partition, t.offset)))
            .collect()
    }

    /// The latest acknowledged (partition, offset) of `key`'s cached state, if any: one
    /// entry of [`ActionStateStore::latest_offsets`], without building the map.
    pub fn offset_of(&self, key: &StateKey) -> Option<(Partition, Offset)> {
        self.entry_of(key).map(|(_, p, o)| (p, o))
    }

    /// The cached state of `key` with its latest acknowledged (partition, offset):
    /// [`ActionStateStore::get`] and [`ActionStateStore::offset_of`] in one lookup.
    pub fn entry_of(&self, key: &StateKey) -> Option<(&ActionState, Partition, Offset)> {
        let list = self.states.get(key.key.as_str())?;
        search(list, key.seq, &key.action)
            .ok()
            .map(|i| (&list[i].state, list[i].partition, list[i].offset))
    }

    /// Number of cached states of input key `key`: how many entries of
    /// [`ActionStateStore::cache`] have that key, without building the map.
    pub fn cached_count_of(&self, key: &str) -> usize {
        self.states.get(key).map_or(0, Vec::len)
    }

    /// Number of keys with per-key tracking (keys with live state).
    pub fn tracked_keys(&self) -> usize {
        self.states.len()
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

/// A rebuild in progress ([`Rebuild::new`]): it takes the records the log's owner reads
/// from the marker to the end, partition by partition, in offset order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rebuild {
    store: ActionStateStore,
    marker: Vec<Offset>,
    /// Per partition, the offset of the next record expected.
    next: Vec<Offset>,
    /// Per partition, the fence level at the next record: a state below it is stale.
    levels: Vec<Epoch>,
    last_completed: BTreeMap<String, u64>,
    owned: Ownership,
    report: RebuildReport,
}

impl Rebuild {
    /// A rebuild of the cache from the log by incarnation `epoch`, replayed from `marker`
    /// (one offset per partition, with its fence level), skipping states of inputs
    /// finished according to `last_completed`, for a subtask that owns `owned` (records
    /// of other keys are skipped and counted: another subtask restores them): hand it the
    /// records of every partition from the marker on ([`Rebuild::feed`]), then the log's
    /// end offsets ([`Rebuild::finish`]), which refuses a marker that does not fit them.
    /// A marker whose levels do not match its partitions, or lie above `epoch`, is
    /// refused.
    pub fn new(
        marker: &RecoveryMarker,
        last_completed: BTreeMap<String, u64>,
        owned: Ownership,
        epoch: Epoch,
    ) -> Result<Rebuild, StoreError> {
        let partitions = marker.offsets.len();
        if !marker.levels.is_empty() && marker.levels.len() != partitions {
            return Err(StoreError::InvalidMarker(format!(
                "{} fence levels for {partitions} partitions",
                marker.levels.len()
            )));
        }
        let levels: Vec<Epoch> = (0..partitions).map(|p| marker.level(p)).collect();
        if let Some((p, level)) = levels.iter().enumerate().find(|(_, &l)| l > epoch) {
            return Err(StoreError::InvalidMarker(format!(
                "partition {p}: fence level {level} is above the restoring epoch {epoch}"
            )));
        }
        Ok(Rebuild {
            store: ActionStateStore::replaying(marker, epoch),
            next: marker.offsets.clone(),
            marker: marker.offsets.clone(),
            levels,
            last_completed,
            owned,
            report: RebuildReport::default(),
        })
    }

    /// The offsets the replay starts from, indexed by partition.
    pub fn marker(&self) -> &[Offset] {
        &self.marker
    }

    /// Take the next record of its partition. A record out of order (a gap, a repeat, or
    /// one before the marker), undecodable, or of an epoch above the restoring one is
    /// refused with an error naming it; a state below its partition's fence level is
    /// skipped.
    pub fn feed(&mut self, record: &LogRecord) -> Result<(), StoreError> {
        let p = record.partition;
        let Some(&next) = self.next.get(p as usize) else {
            return Err(StoreError::Replay(format!(
                "record of partition {p}, the log has {}",
                self.marker.len()
            )));
        };
        if record.offset != next {
            return Err(StoreError::Replay(format!(
                "partition {p}: record at offset {} where {next} was expected",
                record.offset
            )));
        }
        // Every check comes before the rebuild moves on: a refused record leaves it as
        // it was.
        let (sk, state, epoch) = match decode_entry(record)? {
            Entry::State { key, state, epoch } => (key, state, epoch),
            Entry::Fence { epoch } => return self.take_fence(record, epoch),
        };
        self.check_epoch(record, epoch)?;
        let level = self.levels[p as usize];
        if epoch < level {
            self.skip_fenced(record, epoch, level);
            return Ok(());
        }
        let owned = self.owned.owns(&sk.key);
        let unfinished = input_unfinished(&sk.key, sk.seq, &self.last_completed);
        let home = self.store.partition_of(&sk.key);
        if owned && unfinished && home != p {
            return Err(StoreError::Replay(format!(
                "partition {p} offset {}: key {:?} belongs to partition {home}",
                record.offset, sk.key
            )));
        }
        self.advance(p);
        if !owned {
            self.report.foreign_skipped += 1;
            return Ok(());
        }
        if !unfinished {
            self.report.finished_skipped += 1;
            return Ok(());
        }
        let StateKey { key, seq, action } = sk;
        self.store.remember(
            &key,
            seq,
            Cow::Owned(action),
            state,
            p,
            record.offset,
            "replayed",
        );
        Ok(())
    }

    /// A record written by a later incarnation than the restoring one is refused.
    fn check_epoch(&self, record: &LogRecord, epoch: Epoch) -> Result<(), StoreError> {
        match epoch > self.store.epoch {
            true => Err(StoreError::FutureEpoch {
                partition: record.partition,
                offset: record.offset,
                epoch,
                restoring: self.store.epoch,
            }),
            false => Ok(()),
        }
    }

    /// A fence raises its partition's level, and the store remembers it for the levels
    /// of later markers.
    fn take_fence(&mut self, record: &LogRecord, epoch: Epoch) -> Result<(), StoreError> {
        self.check_epoch(record, epoch)?;
        let p = record.partition as usize;
        self.levels[p] = self.levels[p].max(epoch);
        Arc::make_mut(&mut self.store.fences)[p]
            .read
            .push((record.offset, epoch));
        self.advance(record.partition);
        Ok(())
    }

    /// A zombie's state, landed after a newer incarnation's fence: never cached.
    fn skip_fenced(&mut self, record: &LogRecord, epoch: Epoch, fence: Epoch) {
        tracing::warn!(
            component = "durable.store",
            event = "fenced_record",
            partition = record.partition,
            offset = record.offset,
            epoch,
            fence,
        );
        self.advance(record.partition);
        self.report.fenced_skipped += 1;
    }

    /// The record at partition `p`'s next offset was taken.
    fn advance(&mut self, p: Partition) {
        self.next[p as usize] += 1;
        self.report.records_scanned += 1;
    }

    /// The rebuilt store, once every partition was read up to `log_ends` (its end
    /// offsets, indexed by partition). A marker past the end, or a partition not read to
    /// its end, is refused.
    pub fn finish(
        self,
        log_ends: &[Offset],
    ) -> Result<(ActionStateStore, RebuildReport), StoreError> {
        if log_ends.len() != self.marker.len() {
            return Err(StoreError::InvalidMarker(format!(
                "marker has {} partitions, the log has {}",
                self.marker.len(),
                log_ends.len()
            )));
        }
        for (p, ((&from, &next), &end)) in
            self.marker.iter().zip(&self.next).zip(log_ends).enumerate()
        {
            if from > end {
                return Err(StoreError::InvalidMarker(format!(
                    "partition {p}: marker offset {from} is past the log's end offset {end}"
                )));
            }
            if next != end {
                return Err(StoreError::Replay(format!(
                    "partition {p}: read up to offset {next}, the log ends at {end}"
                )));
            }
        }
        debug_assert!(
            self.store.states.keys().all(|k| self.owned.owns(k)),
            "a rebuild loads only the states of keys it owns"
        );
        let mut report = self.report;
        report.states_loaded = self.store.cached_len() as u64;
        tracing::info!(
            component = "durable.store",
            event = "rebuild",
            marker = ?self.marker,
            epoch = self.store.epoch,
            records_scanned = report.records_scanned,
            finished_skipped = report.finished_skipped,
            foreign_skipped = report.foreign_skipped,
            fenced_skipped = report.fenced_skipped,
            states_loaded = report.states_loaded,
        );
        Ok((self.store, report))
    }
}

fn input_unfinished(key: &str, seq: u64, last_completed: &BTreeMap<String, u64>) -> bool {
    !matches!(last_completed.get(key), Some(&done) if seq <= done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(calls: usize) -> ActionState {
        ActionState {
            call_results: (0..calls)
                .map(|i| super::super::CallResult {
                    function: format!("f{i}"),
                    args_digest: 0,
                    outcome: super::super::CallOutcome::Value(serde_json::json!(i)),
                })
                .collect(),
            completed: false,
            output: None,
        }
    }

    fn sk(key: &str) -> StateKey {
        StateKey {
            key: key.into(),
            seq: 0,
            action: "a".into(),
        }
    }

    #[test]
    fn equal_stores_hash_alike_whatever_order_they_were_filled_in() {
        use std::hash::BuildHasher;
        let (mut one, mut two) = (ActionStateStore::new(2), ActionStateStore::new(2));
        for key in ["a", "b", "c"] {
            one.acknowledge(&sk(key), state(1), 3);
        }
        for key in ["c", "b", "a"] {
            two.acknowledge(&sk(key), state(1), 3);
        }
        assert!(one == two);
        let fixed = std::hash::RandomState::new();
        assert_eq!(fixed.hash_one(&one), fixed.hash_one(&two));
        // A state put again at a later offset makes another store.
        let mut other = one.clone();
        other.acknowledge(&sk("a"), state(2), 4);
        assert!(other != one);
        assert_ne!(fixed.hash_one(&other), fixed.hash_one(&one));
    }

    /// Records of keys `a` and `b` in one partition, at offsets 0 and 1.
    fn records() -> Vec<LogRecord> {
        let store = ActionStateStore::new(1);
        ["a", "b"]
            .iter()
            .enumerate()
            .map(|(offset, key)| {
                let put = store.encode_put(&sk(key), &state(1)).unwrap();
                LogRecord {
                    partition: put.partition,
                    offset: offset as Offset,
                    key: put.key,
                    value: put.value,
                }
            })
            .collect()
    }

    fn rebuilt(owned: Ownership) -> (ActionStateStore, RebuildReport) {
        let marker = RecoveryMarker::unfenced(vec![0]);
        let mut rebuild = Rebuild::new(&marker, BTreeMap::new(), owned, 2).unwrap();
        for r in records() {
            rebuild.feed(&r).unwrap();
        }
        rebuild.finish(&[2]).unwrap()
    }

    #[test]
    fn a_rebuild_keeps_only_the_records_of_keys_it_owns() {
        let (store, report) = rebuilt(Ownership::Keys(["a".to_string()].into()));
        assert_eq!(store.cache().into_keys().collect::<Vec<_>>(), [sk("a")]);
        assert_eq!(store.offset_of(&sk("a")), Some((0, 0)));
        assert_eq!(
            (
                report.records_scanned,
                report.foreign_skipped,
                report.states_loaded
            ),
            (2, 1, 1)
        );
        let (store, report) = rebuilt(Ownership::Keys(["b".to_string()].into()));
        assert_eq!(store.cache().into_keys().collect::<Vec<_>>(), [sk("b")]);
        assert_eq!(report.foreign_skipped, 1);
        let (store, report) = rebuilt(Ownership::All);
        assert_eq!(store.cached_len(), 2);
        assert_eq!(report.foreign_skipped, 0);
    }

    fn marker(offsets: &[Offset]) -> RecoveryMarker {
        RecoveryMarker::unfenced(offsets.to_vec())
    }

    #[test]
    fn merged_markers_take_the_minimum_per_partition() {
        let merged = merge_recovery_markers(&[&marker(&[3, 5]), &marker(&[4, 2])]).unwrap();
        assert_eq!(merged, marker(&[3, 2]));
        let three = [marker(&[7, 1]), marker(&[7, 9]), marker(&[6, 9])];
        assert_eq!(
            merge_recovery_markers(&three.iter().collect::<Vec<_>>()).unwrap(),
            marker(&[6, 1])
        );
        assert_eq!(
            merge_recovery_markers(&[&marker(&[4])]).unwrap(),
            marker(&[4])
        );
    }

    fn leveled(offsets: &[Offset], levels: &[Epoch]) -> RecoveryMarker {
        RecoveryMarker {
            offsets: offsets.to_vec(),
            levels: levels.to_vec(),
        }
    }

    #[test]
    fn merged_markers_take_the_level_of_the_minimum_offset() {
        let merged =
            merge_recovery_markers(&[&leveled(&[3, 5], &[1, 2]), &leveled(&[4, 2], &[2, 1])])
                .unwrap();
        assert_eq!(merged, leveled(&[3, 2], &[1, 1]));
        // Equal offsets: the highest level (both were read from one log).
        let merged = merge_recovery_markers(&[&leveled(&[4], &[1]), &leveled(&[4], &[2])]).unwrap();
        assert_eq!(merged, leveled(&[4], &[2]));
        // A part of a checkpoint taken before markers had levels counts as level 0.
        let old = marker(&[2, 9]).offsets;
        let old = RecoveryMarker {
            offsets: old,
            levels: Vec::new(),
        };
        let merged = merge_recovery_markers(&[&leveled(&[3, 5], &[2, 2]), &old]).unwrap();
        assert_eq!(merged, leveled(&[2, 5], &[0, 2]));
    }

    #[test]
    fn stores_of_other_epochs_or_fences_differ() {
        use std::hash::BuildHasher;
        let fixed = std::hash::RandomState::new();
        let (one, two) = (ActionStateStore::new(1), ActionStateStore::new_at(1, 2));
        assert!(one != two);
        assert_ne!(fixed.hash_one(&one), fixed.hash_one(&two));
        let fenced = |level| {
            let marker = leveled(&[0], &[level]);
            let rebuild = Rebuild::new(&marker, BTreeMap::new(), Ownership::All, 2).unwrap();
            rebuild.finish(&[0]).unwrap().0
        };
        assert!(fenced(1) != fenced(2));
        assert_ne!(fixed.hash_one(fenced(1)), fixed.hash_one(fenced(2)));
        assert!(fenced(1) == fenced(1).unshared());
        assert_eq!(fenced(1).epoch(), 2);
        let text = format!("{:?}", fenced(1));
        assert!(text.ends_with("epoch: 2, fences: [[(0, 1)]] }"), "{text}");
    }

    #[test]
    fn markers_of_different_partition_counts_or_none_do_not_merge() {
        let err = merge_recovery_markers(&[&marker(&[3, 5]), &marker(&[4])]).unwrap_err();
        assert_eq!(
            err,
            MergeError::PartitionCount {
                index: 1,
                expected: 2,
                found: 1
            }
        );
        assert_eq!(
            err.to_string(),
            "recovery marker 1 names 1 partitions, marker 0 names 2"
        );
        assert_eq!(merge_recovery_markers(&[]).unwrap_err(), MergeError::Empty);
    }
}
