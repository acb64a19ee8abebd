//! The harness's in-memory environment: the job's leader election and the HA stores,
//! answering the runner's questions and executing the dispatcher's store requests.

use std::collections::BTreeSet;

use super::Query;
use crate::leadership::dispatcher::{DispatcherEffect, DispatcherEvent, RecoveredJob};
use crate::leadership::error::LeadershipError;
use crate::leadership::runner::Event;
use crate::leadership::store::{
    InMemoryJobGraphStore, InMemoryJobResultStore, JobGraphStore, JobResultStore,
};
use crate::leadership::types::{JobId, JobResultEntry, Session};

/// The in-memory environment: the job's leader election and the HA stores.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    /// The session currently issued by the job's leader election.
    pub issued: Option<Session>,
    /// The last session number handed out (sessions start at 1).
    pub last_session: u32,
    /// The JobGraph store.
    pub graphs: InMemoryJobGraphStore,
    /// The JobResultStore.
    pub results: InMemoryJobResultStore,
    /// The stores refuse the writes of a dispatcher that is no longer leader: each
    /// write carries its dispatcher's epoch ([`Environment::execute_for`]), as
    /// Kubernetes HA stores check the leader annotation.
    pub fenced: bool,
    /// The epoch of the dispatcher that gained leadership last.
    pub leader_epoch: u32,
}

impl Environment {
    /// Answers a query from the current environment state.
    pub fn answer(&self, job: JobId, query: Query) -> Event {
        match query {
            Query::JobResultStore => Event::JobResultStoreAnswered {
                has_entry: self.results.entry(job) != JobResultEntry::None,
            },
            Query::Leadership(session) => Event::LeadershipConfirmed {
                session,
                held: self.issued == Some(session),
            },
        }
    }

    /// [`Environment::execute`] for the dispatcher of `epoch`: fenced stores refuse its
    /// writes unless it is the latest leader's.
    pub fn execute_for(
        &mut self,
        epoch: u32,
        request: DispatcherEffect,
    ) -> Result<DispatcherEvent, LeadershipError> {
        let write = !matches!(request, DispatcherEffect::RecoverJobs { .. });
        if self.fenced && write && epoch != self.leader_epoch {
            return Err(LeadershipError::Fenced {
                epoch,
                leader_epoch: self.leader_epoch,
            });
        }
        self.execute(request)
    }

    /// Executes one of the dispatcher's store requests against the stores and returns
    /// the dispatcher's answer event; refuses any other effect, and a request the
    /// stores refuse, leaving the stores unchanged.
    pub fn execute(
        &mut self,
        request: DispatcherEffect,
    ) -> Result<DispatcherEvent, LeadershipError> {
        match request {
            DispatcherEffect::RecoverJobs { epoch } => {
                let jobs: BTreeSet<JobId> = self
                    .graphs
                    .jobs()
                    .into_iter()
                    .chain(self.results.jobs())
                    .collect();
                let jobs = jobs
                    .into_iter()
                    .map(|job| RecoveredJob {
                        job,
                        job_graph: self.graphs.contains(job),
                        entry: self.results.entry(job),
                    })
                    .collect();
                Ok(DispatcherEvent::JobsRecovered { epoch, jobs })
            }
            DispatcherEffect::PutJobGraph { job } => {
                self.graphs.put(job)?;
                Ok(DispatcherEvent::JobGraphStored { job })
            }
            // Written if missing, as Flink's dispatcher does
            // (`createDirtyJobResultEntryIfMissingAsync`): an entry already there stays
            // as its first writer left it, and the global cleanup goes on.
            DispatcherEffect::WriteDirtyEntry { job, status } => {
                match self.results.create_dirty(job, status) {
                    Ok(()) | Err(LeadershipError::EntryExists { .. }) => {}
                    Err(error) => return Err(error),
                }
                Ok(DispatcherEvent::DirtyEntryWritten { job })
            }
            DispatcherEffect::RemoveJobGraph { job } => {
                self.graphs.remove(job);
                Ok(DispatcherEvent::JobGraphRemoved { job })
            }
            DispatcherEffect::MarkEntryClean { job } => {
                let status = self
                    .results
                    .status(job)
                    .ok_or(LeadershipError::NoEntry { job })?;
                self.results.mark_clean(job)?;
                Ok(DispatcherEvent::EntryMarkedClean { job, status })
            }
            DispatcherEffect::StartRunner { .. }
            | DispatcherEffect::CloseRunner { .. }
            | DispatcherEffect::GlobalCleanup { .. }
            | DispatcherEffect::LocalCleanup { .. }
            | DispatcherEffect::FatalError { .. } => Err(LeadershipError::NoPendingStoreRequest),
        }
    }
}
