//! The action state store over any [`Log`]: put, get, prune, recovery marker and
//! rebuild, with the semantics of the fix for flink-agents issue 1158.
//!
//! - A put sends the whole action state, flushes, awaits the acknowledgement, and
//!   only then updates the cache and the state's latest acknowledged offset. A
//!   failed or cancelled put caches nothing (the unpatched order cached first).
//! - The recovery marker for partition `p` is the minimum of the end offset and the
//!   latest acknowledged offset of every state in `p` whose input is unfinished, as
//!   judged by the completed-sequence boundaries captured by the same checkpoint.
//!   The store keeps no copy of those boundaries; the caller passes them in.
//! - Rebuild replays each partition from the marker, last writer wins per state
//!   key, and skips states of finished inputs.
//! - Prune, after a checkpoint completes, drops finished states and the per-key
//!   tracking of every key left without live state.
//!
//! The cache and the per-key tracking are one map from input key to that key's states
//! (sorted by sequence number and action), behind an `Arc` and copied on write, so a
//! [`ActionStateStore::fork`] costs a reference count until one side changes it. A put
//! hashes the input key once and searches the key's few states; no key is copied.
//!
//! Records use a compact binary format of ours (see [`super::record`]); decoding is
//! strict and names what is wrong with a damaged record.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::file_log::{FileLog, FileLogOptions};
use super::log::{AckError, Cancellation, Log, LogError, Offset, Partition, PendingAck};
use super::{partition_for, ActionState, StateKey};

use super::record::encode_parts;
pub use super::record::{decode_record, encode_record, RECORD_FORMAT};

/// Errors of the store.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The log failed the put, a flush, a read or an offset query.
    #[error("log: {0}")]
    Log(#[from] LogError),
    /// Waiting for the put's acknowledgement was cancelled; nothing was cached.
    #[error("put cancelled while waiting for the acknowledgement")]
    Cancelled,
    /// A state could not be encoded.
    #[error("cannot encode state {key:?}: {reason}")]
    Encode {
        /// State being written.
        key: StateKey,
        /// Encoder message.
        reason: String,
    },
    /// A record read back is not a valid action state record.
    #[error("undecodable record at partition {partition} offset {offset}: {reason}")]
    Decode {
        /// Partition of the record.
        partition: Partition,
        /// Offset of the record.
        offset: Offset,
        /// Decoder message.
        reason: String,
    },
    /// A recovery marker does not fit the log.
    #[error("invalid recovery marker: {0}")]
    InvalidMarker(String),
}

impl From<AckError> for StoreError {
    fn from(err: AckError) -> Self {
        match err {
            AckError::Log(e) => StoreError::Log(e),
            AckError::Cancelled => StoreError::Cancelled,
        }
    }
}

/// Order of the steps of a put.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PutOrder {
    /// Send, flush, await the acknowledgement (the fix's final order).
    #[default]
    FlushThenAwait,
    /// Send, await the acknowledgement, flush: correct but every put waits out the
    /// producer's linger interval (kept to measure that cost).
    AwaitThenFlush,
}

/// Per-partition offsets from which a restore replays the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryMarker {
    /// Replay start offset, indexed by partition.
    pub offsets: Vec<Offset>,
}

/// What a rebuild did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebuildReport {
    /// Records read from the log, over all partitions.
    pub records_scanned: u64,
    /// Records skipped because their input was already finished.
    pub finished_skipped: u64,
    /// Distinct states loaded into the cache.
    pub states_loaded: u64,
}

/// What a prune removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneReport {
    /// States dropped from the cache and offset tracking.
    pub states_pruned: u64,
    /// Keys whose tracking was dropped because no live state remained.
    pub keys_dropped: u64,
}

/// Records fetched per read during a rebuild.
const REBUILD_BATCH: usize = 512;

/// One cached state of a key, with its latest acknowledged (partition, offset).
#[derive(Clone)]
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

/// The action state store.
pub struct ActionStateStore<L: Log> {
    log: L,
    partitions: u32,
    /// Per input key with live state, its cached states sorted by (seq, action).
    /// Looked up at every event: aHash, keyed at random per map like the standard
    /// hasher (input keys come from outside), at a fraction of SipHash's cost.
    states: Arc<HashMap<String, Vec<Tracked>, ahash::RandomState>>,
    cancel: Cancellation,
    order: PutOrder,
    key_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

impl<L: Log> std::fmt::Debug for ActionStateStore<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionStateStore")
            .field("partitions", &self.partitions)
            .field("cached_states", &self.cached_len())
            .field("tracked_keys", &self.states.len())
            .field("order", &self.order)
            .finish()
    }
}

impl ActionStateStore<FileLog> {
    /// Open (or create) a store over the file log in `dir`, the embedded default.
    /// A torn tail found during the log's recovery is truncated and reported in
    /// [`FileLog::recovery_report`].
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, StoreError> {
        let log = FileLog::open(dir, FileLogOptions::default())?;
        Ok(Self::new(log))
    }
}

impl<L: Log> ActionStateStore<L> {
    /// A store over `log` with its own cancellation signal.
    pub fn new(log: L) -> Self {
        Self::with_cancellation(log, Cancellation::new())
    }

    /// A store over `log` whose puts stop waiting when `cancel` is set.
    pub fn with_cancellation(log: L, cancel: Cancellation) -> Self {
        let partitions = log.partition_count().max(1);
        ActionStateStore {
            log,
            partitions,
            states: Arc::default(),
            cancel,
            order: PutOrder::default(),
            key_buf: Vec::new(),
            value_buf: Vec::new(),
        }
    }

    /// An independent copy of this store (cache, tracking, put order) over `log`,
    /// whose puts observe `cancel`. `log` should hold the same records.
    pub fn fork<M: Log>(&self, log: M, cancel: Cancellation) -> ActionStateStore<M> {
        ActionStateStore {
            log,
            partitions: self.partitions,
            states: Arc::clone(&self.states),
            cancel,
            order: self.order,
            key_buf: Vec::new(),
            value_buf: Vec::new(),
        }
    }

    /// Choose the order of a put's steps.
    pub fn set_put_order(&mut self, order: PutOrder) {
        self.order = order;
    }

    /// The cancellation signal puts observe.
    pub fn cancellation(&self) -> &Cancellation {
        &self.cancel
    }

    /// Number of partitions of the underlying log.
    pub fn partition_count(&self) -> u32 {
        self.partitions
    }

    /// Partition a key's states go to.
    pub fn partition_of(&self, key: &str) -> Partition {
        partition_for(key, self.partitions)
    }

    /// Save `state` under `key`. Returns the acknowledged offset. On any error the
    /// cache and offset tracking are unchanged; the record may still have landed
    /// (the log can fail a send after appending it), and a rebuild would read it.
    pub fn put(&mut self, key: &StateKey, state: ActionState) -> Result<Offset, StoreError> {
        self.put_at(&key.key, key.seq, Cow::Borrowed(&key.action), state)
    }

    /// [`ActionStateStore::put`] for the state key's parts, borrowed: the key's strings
    /// are copied only when the cache gets a new entry (an owned action name is moved
    /// there instead).
    pub(crate) fn put_at(
        &mut self,
        key: &str,
        seq: u64,
        action: Cow<'_, str>,
        state: ActionState,
    ) -> Result<Offset, StoreError> {
        let partition = self.partition_of(key);
        encode_parts(
            key,
            seq,
            &action,
            &state,
            &mut self.key_buf,
            &mut self.value_buf,
        )
        .map_err(|reason| StoreError::Encode {
            key: StateKey {
                key: key.to_string(),
                seq,
                action: action.to_string(),
            },
            reason,
        })?;
        let result = self.send_and_confirm(partition);
        match result {
            Ok(offset) => {
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
                    outcome = "acked",
                );
                self.remember(key, seq, action, state, partition, offset);
                Ok(offset)
            }
            Err(err) => {
                tracing::warn!(
                    component = "durable.store",
                    event = "put",
                    key,
                    seq,
                    action = &*action,
                    partition,
                    outcome = "failed",
                    error = %err,
                );
                Err(err)
            }
        }
    }

    fn send_and_confirm(&mut self, partition: Partition) -> Result<Offset, StoreError> {
        let mut ack = self.log.send(partition, &self.key_buf, &self.value_buf)?;
        match self.order {
            PutOrder::FlushThenAwait => {
                self.log.flush()?;
                Ok(ack.wait(&self.cancel)?)
            }
            PutOrder::AwaitThenFlush => {
                let offset = ack.wait(&self.cancel)?;
                self.log.flush()?;
                Ok(offset)
            }
        }
    }

    /// Cache `state` as the latest of `key`, acknowledged at (partition, offset). The
    /// action's name is taken (or copied, if borrowed) only for a new entry.
    fn remember(
        &mut self,
        key: &str,
        seq: u64,
        action: Cow<'_, str>,
        state: ActionState,
        partition: Partition,
        offset: Offset,
    ) {
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
        let list = self.states.get(key.key.as_str())?;
        search(list, key.seq, &key.action)
            .ok()
            .map(|i| (list[i].partition, list[i].offset))
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

    /// The underlying log.
    pub fn log(&self) -> &L {
        &self.log
    }

    /// The underlying log, mutably.
    pub fn log_mut(&mut self) -> &mut L {
        &mut self.log
    }

    /// Give back the underlying log.
    pub fn into_log(self) -> L {
        self.log
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
            let Some(list) = states.get_mut(key) else {
                continue;
            };
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

    /// The recovery marker for a checkpoint whose keyed state says `last_completed`.
    pub fn recovery_marker(
        &mut self,
        last_completed: &BTreeMap<String, u64>,
    ) -> Result<RecoveryMarker, StoreError> {
        let mut offsets = self.log.end_offsets()?;
        if offsets.len() != self.partitions as usize {
            return Err(StoreError::InvalidMarker(format!(
                "log reported {} end offsets for {} partitions",
                offsets.len(),
                self.partitions
            )));
        }
        for (key, list) in self.states.iter() {
            for t in list {
                if input_unfinished(key, t.seq, last_completed) {
                    let slot = &mut offsets[t.partition as usize];
                    *slot = (*slot).min(t.offset);
                }
            }
        }
        tracing::debug!(
            component = "durable.store",
            event = "recovery_marker",
            marker = ?offsets,
        );
        Ok(RecoveryMarker { offsets })
    }

    /// Replace the cache by replaying the log from `marker`, skipping states of
    /// inputs finished according to `last_completed`.
    pub fn rebuild(
        &mut self,
        marker: &RecoveryMarker,
        last_completed: &BTreeMap<String, u64>,
    ) -> Result<RebuildReport, StoreError> {
        let ends = self.log.end_offsets()?;
        if marker.offsets.len() != ends.len() {
            return Err(StoreError::InvalidMarker(format!(
                "marker has {} partitions, the log has {}",
                marker.offsets.len(),
                ends.len()
            )));
        }
        for (p, (&from, &end)) in marker.offsets.iter().zip(&ends).enumerate() {
            if from > end {
                return Err(StoreError::InvalidMarker(format!(
                    "partition {p}: marker offset {from} is past the log's end offset {end}"
                )));
            }
        }
        self.states = Arc::default();
        let mut report = RebuildReport::default();
        for (p, (&from, &end)) in marker.offsets.iter().zip(&ends).enumerate() {
            let partition = p as Partition;
            let mut next = from;
            while next < end {
                let batch = self.log.read(partition, next, REBUILD_BATCH)?;
                if batch.is_empty() {
                    break;
                }
                for record in batch {
                    next = record.offset + 1;
                    report.records_scanned += 1;
                    let (sk, state) = decode_record(&record)?;
                    if !input_unfinished(&sk.key, sk.seq, last_completed) {
                        report.finished_skipped += 1;
                        continue;
                    }
                    let StateKey { key, seq, action } = sk;
                    self.remember(
                        &key,
                        seq,
                        Cow::Owned(action),
                        state,
                        partition,
                        record.offset,
                    );
                }
            }
        }
        report.states_loaded = self.cached_len() as u64;
        tracing::info!(
            component = "durable.store",
            event = "rebuild",
            marker = ?marker.offsets,
            records_scanned = report.records_scanned,
            finished_skipped = report.finished_skipped,
            states_loaded = report.states_loaded,
        );
        Ok(report)
    }
}

fn input_unfinished(key: &str, seq: u64, last_completed: &BTreeMap<String, u64>) -> bool {
    !matches!(last_completed.get(key), Some(&done) if seq <= done)
}
