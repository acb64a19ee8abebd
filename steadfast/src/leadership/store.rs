//! The HA stores the dispatcher consults: the JobGraph store and the JobResultStore.
//!
//! In Flink (FLINK-39704, apache/flink PR 28201) a globally terminal result is first
//! written as a dirty JobResultStore entry, then the JobGraph is removed, then the entry
//! is marked clean; recovery only resumes JobGraphs that have no entry. The traits keep
//! those operations; the in-memory implementations serve tests and drivers. The
//! dispatcher never calls them: it asks through effects, and a driver executes the
//! requests against these traits ([`super::Environment::execute`]).

use super::error::LeadershipError;
use super::types::{JobId, JobResultEntry, JobStatus};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Persisted JobGraphs, keyed by job.
pub trait JobGraphStore {
    /// Whether the store holds `job`.
    fn contains(&self, job: JobId) -> bool;
    /// Stores `job`; refuses a job already stored.
    fn put(&mut self, job: JobId) -> Result<(), LeadershipError>;
    /// Removes `job`; returns whether it was present.
    fn remove(&mut self, job: JobId) -> bool;
    /// Every stored job, in ascending order.
    fn jobs(&self) -> Vec<JobId>;
}

/// Persisted job results, keyed by job.
pub trait JobResultStore {
    /// The state of `job`'s entry.
    fn entry(&self, job: JobId) -> JobResultEntry;
    /// The status recorded for `job`, if it has an entry.
    fn status(&self, job: JobId) -> Option<JobStatus>;
    /// Writes a dirty entry; refuses if an entry exists.
    fn create_dirty(&mut self, job: JobId, status: JobStatus) -> Result<(), LeadershipError>;
    /// Marks an existing entry clean (idempotent for clean entries).
    fn mark_clean(&mut self, job: JobId) -> Result<(), LeadershipError>;
    /// Every job with an entry, in ascending order.
    fn jobs(&self) -> Vec<JobId>;
}

/// A [`JobGraphStore`] in memory.
///
/// ```
/// use steadfast::leadership::{InMemoryJobGraphStore, JobGraphStore, JobId};
/// let mut g = InMemoryJobGraphStore::default();
/// g.put(JobId(1)).unwrap();
/// assert!(g.put(JobId(1)).is_err());
/// assert!(g.remove(JobId(1)));
/// assert!(!g.contains(JobId(1)));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InMemoryJobGraphStore {
    /// Shared until changed: a copy of the store (a driver forked to explore a branch)
    /// copies no tree.
    jobs: Arc<BTreeSet<JobId>>,
}

impl JobGraphStore for InMemoryJobGraphStore {
    fn contains(&self, job: JobId) -> bool {
        self.jobs.contains(&job)
    }

    fn put(&mut self, job: JobId) -> Result<(), LeadershipError> {
        if self.jobs.contains(&job) {
            return Err(LeadershipError::DuplicateJob { job });
        }
        Arc::make_mut(&mut self.jobs).insert(job);
        Ok(())
    }

    fn remove(&mut self, job: JobId) -> bool {
        self.jobs.contains(&job) && Arc::make_mut(&mut self.jobs).remove(&job)
    }

    fn jobs(&self) -> Vec<JobId> {
        self.jobs.iter().copied().collect()
    }
}

/// A [`JobResultStore`] in memory.
///
/// ```
/// use steadfast::leadership::{InMemoryJobResultStore, JobId, JobResultEntry, JobResultStore, JobStatus};
/// let mut r = InMemoryJobResultStore::default();
/// r.create_dirty(JobId(1), JobStatus::Failed).unwrap();
/// assert_eq!(r.entry(JobId(1)), JobResultEntry::Dirty);
/// r.mark_clean(JobId(1)).unwrap();
/// assert_eq!(r.entry(JobId(1)), JobResultEntry::Clean);
/// assert_eq!(r.status(JobId(1)), Some(JobStatus::Failed));
/// assert!(r.mark_clean(JobId(2)).is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InMemoryJobResultStore {
    /// Shared until changed, as [`InMemoryJobGraphStore`]'s jobs.
    entries: Arc<BTreeMap<JobId, (JobStatus, bool)>>,
}

impl JobResultStore for InMemoryJobResultStore {
    fn entry(&self, job: JobId) -> JobResultEntry {
        match self.entries.get(&job) {
            None => JobResultEntry::None,
            Some((_, false)) => JobResultEntry::Dirty,
            Some((_, true)) => JobResultEntry::Clean,
        }
    }

    fn status(&self, job: JobId) -> Option<JobStatus> {
        self.entries.get(&job).map(|(status, _)| *status)
    }

    fn create_dirty(&mut self, job: JobId, status: JobStatus) -> Result<(), LeadershipError> {
        if self.entries.contains_key(&job) {
            return Err(LeadershipError::EntryExists { job });
        }
        Arc::make_mut(&mut self.entries).insert(job, (status, false));
        Ok(())
    }

    fn mark_clean(&mut self, job: JobId) -> Result<(), LeadershipError> {
        if !self.entries.contains_key(&job) {
            return Err(LeadershipError::NoEntry { job });
        }
        if let Some(entry) = Arc::make_mut(&mut self.entries).get_mut(&job) {
            entry.1 = true;
        }
        Ok(())
    }

    fn jobs(&self) -> Vec<JobId> {
        self.entries.keys().copied().collect()
    }
}
