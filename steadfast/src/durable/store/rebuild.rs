//! Rebuilding the store from the log ([`Rebuild`]): the records from a recovery marker
//! to the log's end, partition by partition in offset order, keeping the owned keys'
//! unfinished states and skipping the states of fenced incarnations.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{decode_entry, input_unfinished, ActionStateStore, RecoveryMarker, StoreError};
use crate::durable::log::{LogRecord, Offset, Partition};
use crate::durable::record::Entry;
use crate::durable::{Epoch, StateKey};

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
