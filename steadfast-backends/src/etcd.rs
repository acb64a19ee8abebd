//! Leader election, the JobGraph store and the JobResultStore on one etcd cluster.
//!
//! Everything a cluster of JobManagers shares lives under one key prefix,
//! `/steadfast/<cluster>/`:
//!
//! | key | value | written by |
//! |---|---|---|
//! | `dispatcher/leader` | `<name> <epoch>` | the dispatcher leader, under its lease |
//! | `dispatcher/term` | the last epoch issued | each dispatcher election win |
//! | `jobs/<job>/leader` | `<name> <session>` | the job's leader, under its lease |
//! | `jobs/<job>/term` | the last session issued | each job election win |
//! | `graphs/<job>` | the job's id | the dispatcher leader (fenced) |
//! | `results/<job>` | `<STATUS> dirty` or `<STATUS> clean` | the dispatcher leader (fenced) |
//! | `audit/<job>/started/<session>` | `<name>` | every JobMaster start (an observation) |
//!
//! **Sessions come from the service.** A JobManager holds one lease; every leader key it
//! writes is attached to it, so a lease that expires (the process died, or stopped
//! renewing for longer than the TTL) deletes its leader keys, and that is the revoke.
//! Winning an election is one transaction: the leader key must be absent and the term
//! key must still have the version read just before; the transaction writes both. The
//! session (or the dispatcher's epoch) is the term key's new version, so sessions are
//! numbered 1, 2, 3... per job, every number is issued once, and a later winner always
//! holds a larger one, as [`steadfast::leadership::Session`] requires.
//!
//! **Fencing.** Every store write is a transaction that compares the dispatcher leader
//! key's `create_revision` with the one this JobManager's win created. A key re-created
//! by a later winner has a later revision, so a JobManager that lost its lease (even one
//! that does not know it yet) has every write refused, atomically with the write.
//! Flink's own JobResultStore is not fenced (`specs/leadership.md`, "Overlapping
//! dispatcher leaders"); the model's `fenced-result-store` setting is this store.

use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse,
};
use steadfast::leadership::{JobId, JobResultEntry, JobStatus, RecoveredJob, Session};

/// Why a request to etcd did not do what was asked. Every message is one line.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// etcd could not be reached, or answered with an error.
    #[error("etcd at {endpoints}: {why}")]
    Unreachable {
        /// The endpoints tried.
        endpoints: String,
        /// What the client said, on one line.
        why: String,
    },
    /// A store write was refused because this JobManager no longer leads the dispatcher.
    #[error("fenced: {what} refused, this JobManager no longer holds the dispatcher leader key")]
    Fenced {
        /// The write.
        what: String,
    },
    /// The stores hold something this JobManager cannot read.
    #[error("the stores hold an unreadable value at {key}: {why}")]
    Corrupt {
        /// The key.
        key: String,
        /// What is wrong.
        why: String,
    },
    /// The JobResultStore already has an entry for the job.
    #[error("the JobResultStore already has an entry for {job}")]
    EntryExists {
        /// The job.
        job: JobId,
    },
    /// Something on this host failed: the log file, the runtime.
    #[error("{0}")]
    Local(String),
    /// The lease was not renewed in time: etcd deleted every key attached to it.
    #[error("lease {lease:x} lost: {why}")]
    LeaseLost {
        /// The lease.
        lease: i64,
        /// How it was noticed.
        why: String,
    },
}

/// A one-line rendering of a client error (gRPC statuses may carry line breaks).
fn one_line(error: impl std::fmt::Display) -> String {
    error
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// What was won: the number the service issued and the leader key's creation revision,
/// which fences every write made on the strength of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Won {
    /// The session (job election) or epoch (dispatcher election): the term's version.
    pub number: u32,
    /// The leader key's `create_revision`.
    pub revision: i64,
}

/// One JobManager's connection: its name, its lease and the cluster's key prefix.
#[derive(Clone)]
pub struct Coordination {
    client: Client,
    endpoints: String,
    prefix: String,
    name: String,
    lease: i64,
    ttl: i64,
}

impl Coordination {
    /// Connects to `endpoints` and takes a lease of `ttl_seconds`; `name` identifies
    /// this JobManager in the leader keys.
    pub async fn connect(
        endpoints: &[String],
        cluster: &str,
        name: &str,
        ttl_seconds: i64,
    ) -> Result<Coordination, BackendError> {
        let joined = endpoints.join(",");
        let unreachable = |e: etcd_client::Error| BackendError::Unreachable {
            endpoints: joined.clone(),
            why: one_line(e),
        };
        // Bounded waits: an unreachable endpoint is an error after seconds, not a hang.
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(3))
            .with_timeout(Duration::from_secs(5));
        let mut client = Client::connect(endpoints, Some(options))
            .await
            .map_err(unreachable)?;
        let lease = client
            .lease_grant(ttl_seconds, None)
            .await
            .map_err(unreachable)?
            .id();
        Ok(Coordination {
            client,
            endpoints: joined,
            prefix: format!("/steadfast/{cluster}/"),
            name: name.to_string(),
            lease,
            ttl: ttl_seconds,
        })
    }

    /// This JobManager's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The lease every leader key of this JobManager is attached to.
    pub fn lease(&self) -> i64 {
        self.lease
    }

    fn key(&self, rest: &str) -> String {
        format!("{}{rest}", self.prefix)
    }

    fn error(&self, e: etcd_client::Error) -> BackendError {
        BackendError::Unreachable {
            endpoints: self.endpoints.clone(),
            why: one_line(e),
        }
    }

    /// Renews the lease until it is lost; returns why it was lost. Renews three times
    /// per TTL, so one late renewal does not lose it.
    pub async fn keep_alive(&self) -> BackendError {
        let lost = |why: String| BackendError::LeaseLost {
            lease: self.lease,
            why,
        };
        let mut client = self.client.clone();
        let (mut keeper, mut answers) = match client.lease_keep_alive(self.lease).await {
            Ok(pair) => pair,
            Err(e) => return lost(one_line(e)),
        };
        let period = Duration::from_millis((self.ttl as u64 * 1000 / 3).max(100));
        loop {
            if let Err(e) = keeper.keep_alive().await {
                return lost(one_line(e));
            }
            match tokio::time::timeout(period, answers.message()).await {
                Ok(Ok(Some(answer))) if answer.ttl() > 0 => {}
                Ok(Ok(Some(_))) => return lost("etcd says it expired".into()),
                Ok(Ok(None)) => return lost("etcd closed the renewal stream".into()),
                Ok(Err(e)) => return lost(one_line(e)),
                Err(_) => return lost("no renewal answer within a third of the TTL".into()),
            }
            tokio::time::sleep(period).await;
        }
    }

    /// Gives the lease back: every leader key of this JobManager goes at once, so the
    /// others need not wait for the TTL.
    pub async fn revoke(&self) -> Result<(), BackendError> {
        let mut client = self.client.clone();
        client
            .lease_revoke(self.lease)
            .await
            .map(|_| ())
            .map_err(|e| self.error(e))
    }

    /// One attempt to win the election whose keys are `leader` and `term` (relative to
    /// the prefix); `None` when someone else holds it.
    async fn try_win(&self, leader: &str, term: &str) -> Result<Option<Won>, BackendError> {
        let (leader, term) = (self.key(leader), self.key(term));
        let mut client = self.client.clone();
        let read = client
            .get(term.clone(), None)
            .await
            .map_err(|e| self.error(e))?;
        let version = read.kvs().first().map_or(0, |kv| kv.version());
        let number = u32::try_from(version + 1).map_err(|_| BackendError::Corrupt {
            key: term.clone(),
            why: format!("version {version} is past the sessions a u32 numbers"),
        })?;
        let txn = Txn::new()
            .when([
                Compare::create_revision(leader.clone(), CompareOp::Equal, 0),
                Compare::version(term.clone(), CompareOp::Equal, version),
            ])
            .and_then([
                TxnOp::put(term, number.to_string(), None),
                TxnOp::put(
                    leader,
                    format!("{} {number}", self.name),
                    Some(PutOptions::new().with_lease(self.lease)),
                ),
            ]);
        let answer = client.txn(txn).await.map_err(|e| self.error(e))?;
        if !answer.succeeded() {
            return Ok(None);
        }
        // Both puts and the leader key's creation happen at the transaction's revision.
        let revision = answer.header().map_or(0, |h| h.revision());
        Ok(Some(Won { number, revision }))
    }

    /// Tries to become the dispatcher leader.
    pub async fn try_lead_dispatcher(&self) -> Result<Option<Won>, BackendError> {
        self.try_win("dispatcher/leader", "dispatcher/term").await
    }

    /// Tries to become the leader of `job`.
    pub async fn try_lead_job(&self, job: JobId) -> Result<Option<Won>, BackendError> {
        self.try_win(
            &format!("jobs/{}/leader", job.0),
            &format!("jobs/{}/term", job.0),
        )
        .await
    }

    /// Whether this JobManager still holds `session` of `job`, read live from etcd (as
    /// Flink's Kubernetes driver does; its ZooKeeper driver answers from local state).
    pub async fn holds_job(&self, job: JobId, session: Session) -> Result<bool, BackendError> {
        let mut client = self.client.clone();
        let read = client
            .get(self.key(&format!("jobs/{}/leader", job.0)), None)
            .await
            .map_err(|e| self.error(e))?;
        let mine = format!("{} {}", self.name, session.0);
        Ok(read
            .kvs()
            .first()
            .is_some_and(|kv| kv.value() == mine.as_bytes() && kv.lease() == self.lease))
    }

    /// Gives up the leadership of `job` if this JobManager holds `session` of it.
    pub async fn resign_job(&self, job: JobId, session: Session) -> Result<(), BackendError> {
        let key = self.key(&format!("jobs/{}/leader", job.0));
        let txn = Txn::new()
            .when([Compare::value(
                key.clone(),
                CompareOp::Equal,
                format!("{} {}", self.name, session.0),
            )])
            .and_then([TxnOp::delete(key, None)]);
        let mut client = self.client.clone();
        client.txn(txn).await.map_err(|e| self.error(e))?;
        Ok(())
    }

    /// The holder of the dispatcher leader key (`<name> <epoch>`), if any.
    pub async fn dispatcher_leader(&self) -> Result<Option<String>, BackendError> {
        let mut client = self.client.clone();
        let read = client
            .get(self.key("dispatcher/leader"), None)
            .await
            .map_err(|e| self.error(e))?;
        Ok(read
            .kvs()
            .first()
            .map(|kv| String::from_utf8_lossy(kv.value()).into_owned()))
    }

    /// Every job either store holds, in ascending order (the dispatcher's recovery read).
    pub async fn recover(&self) -> Result<Vec<RecoveredJob>, BackendError> {
        let graphs = self.ids_under("graphs/").await?;
        let results = self.results().await?;
        let mut jobs: Vec<RecoveredJob> = graphs
            .iter()
            .map(|(job, _)| *job)
            .chain(results.iter().map(|(job, _, _)| *job))
            .map(|job| RecoveredJob {
                job,
                job_graph: graphs.iter().any(|(j, _)| *j == job),
                entry: results
                    .iter()
                    .find(|(j, _, _)| *j == job)
                    .map_or(JobResultEntry::None, |(_, _, entry)| *entry),
            })
            .collect();
        jobs.sort_by_key(|r| r.job);
        jobs.dedup_by_key(|r| r.job);
        Ok(jobs)
    }

    /// The jobs under `dir` (keys `<dir><job>`), with each key's `create_revision`.
    async fn ids_under(&self, dir: &str) -> Result<Vec<(JobId, i64)>, BackendError> {
        let mut client = self.client.clone();
        let read = client
            .get(self.key(dir), Some(GetOptions::new().with_prefix()))
            .await
            .map_err(|e| self.error(e))?;
        read.kvs()
            .iter()
            .map(|kv| {
                let key = String::from_utf8_lossy(kv.key()).into_owned();
                let id = key[self.key(dir).len()..].parse::<u32>().map_err(|e| {
                    BackendError::Corrupt {
                        key: key.clone(),
                        why: e.to_string(),
                    }
                })?;
                Ok((JobId(id), kv.create_revision()))
            })
            .collect()
    }

    /// Every JobResultStore entry: job, recorded status, dirty or clean.
    pub async fn results(&self) -> Result<Vec<(JobId, JobStatus, JobResultEntry)>, BackendError> {
        let mut client = self.client.clone();
        let dir = self.key("results/");
        let read = client
            .get(dir.clone(), Some(GetOptions::new().with_prefix()))
            .await
            .map_err(|e| self.error(e))?;
        read.kvs()
            .iter()
            .map(|kv| {
                let key = String::from_utf8_lossy(kv.key()).into_owned();
                let corrupt = |why: String| BackendError::Corrupt {
                    key: key.clone(),
                    why,
                };
                let id = key[dir.len()..]
                    .parse::<u32>()
                    .map_err(|e| corrupt(e.to_string()))?;
                let (status, entry) = parse_entry(kv.value())
                    .ok_or_else(|| corrupt(format!("`{}`", String::from_utf8_lossy(kv.value()))))?;
                Ok((JobId(id), status, entry))
            })
            .collect()
    }

    /// Whether the JobResultStore has an entry for `job` (the runner's grant check).
    pub async fn has_entry(&self, job: JobId) -> Result<bool, BackendError> {
        let mut client = self.client.clone();
        let read = client
            .get(self.key(&format!("results/{}", job.0)), None)
            .await
            .map_err(|e| self.error(e))?;
        Ok(!read.kvs().is_empty())
    }

    /// A write fenced by the dispatcher leadership won at `fence`: `checks` must hold as
    /// well; returns whether both did, and so whether `ops` ran. A lost leadership is
    /// [`BackendError::Fenced`].
    async fn fenced(
        &self,
        fence: i64,
        what: String,
        checks: Vec<Compare>,
        ops: Vec<TxnOp>,
    ) -> Result<bool, BackendError> {
        let leader = self.key("dispatcher/leader");
        let mut when = vec![Compare::create_revision(
            leader.clone(),
            CompareOp::Equal,
            fence,
        )];
        when.extend(checks);
        // On failure, read the leader key to tell "fenced" from "a check failed".
        let txn = Txn::new()
            .when(when)
            .and_then(ops)
            .or_else([TxnOp::get(leader, None)]);
        let mut client = self.client.clone();
        let answer = client.txn(txn).await.map_err(|e| self.error(e))?;
        if answer.succeeded() {
            return Ok(true);
        }
        let still_leader = answer.op_responses().iter().any(|r| match r {
            TxnOpResponse::Get(get) => get
                .kvs()
                .first()
                .is_some_and(|kv| kv.create_revision() == fence),
            _ => false,
        });
        if still_leader {
            Ok(false)
        } else {
            Err(BackendError::Fenced { what })
        }
    }

    /// Stores `job`'s JobGraph unless one is stored already.
    pub async fn put_job_graph(&self, fence: i64, job: JobId) -> Result<(), BackendError> {
        let key = self.key(&format!("graphs/{}", job.0));
        self.fenced(
            fence,
            format!("storing the JobGraph of {job}"),
            vec![Compare::create_revision(key.clone(), CompareOp::Equal, 0)],
            vec![TxnOp::put(key, job.0.to_string(), None)],
        )
        .await
        .map(|_| ())
    }

    /// Writes a dirty JobResultStore entry; refuses if `job` has one.
    pub async fn write_dirty_entry(
        &self,
        fence: i64,
        job: JobId,
        status: JobStatus,
    ) -> Result<(), BackendError> {
        let key = self.key(&format!("results/{}", job.0));
        let written = self
            .fenced(
                fence,
                format!("the JobResultStore entry of {job}"),
                vec![Compare::create_revision(key.clone(), CompareOp::Equal, 0)],
                vec![TxnOp::put(key, format!("{} dirty", status.name()), None)],
            )
            .await?;
        if written {
            Ok(())
        } else {
            Err(BackendError::EntryExists { job })
        }
    }

    /// Removes `job`'s JobGraph (done if it is gone already).
    pub async fn remove_job_graph(&self, fence: i64, job: JobId) -> Result<(), BackendError> {
        let key = self.key(&format!("graphs/{}", job.0));
        self.fenced(
            fence,
            format!("removing the JobGraph of {job}"),
            vec![],
            vec![TxnOp::delete(key, None)],
        )
        .await
        .map(|_| ())
    }

    /// Marks `job`'s entry clean and returns the status it records.
    pub async fn mark_entry_clean(
        &self,
        fence: i64,
        job: JobId,
    ) -> Result<JobStatus, BackendError> {
        let key = self.key(&format!("results/{}", job.0));
        let mut client = self.client.clone();
        let read = client
            .get(key.clone(), None)
            .await
            .map_err(|e| self.error(e))?;
        let kv = read.kvs().first().ok_or(BackendError::Corrupt {
            key: key.clone(),
            why: "no entry to mark clean".into(),
        })?;
        let (status, _) = parse_entry(kv.value()).ok_or_else(|| BackendError::Corrupt {
            key: key.clone(),
            why: format!("`{}`", String::from_utf8_lossy(kv.value())),
        })?;
        let written = self
            .fenced(
                fence,
                format!("marking the JobResultStore entry of {job} clean"),
                // The entry read is the entry written: nobody changed it in between.
                vec![Compare::mod_revision(
                    key.clone(),
                    CompareOp::Equal,
                    kv.mod_revision(),
                )],
                vec![TxnOp::put(
                    key.clone(),
                    format!("{} clean", status.name()),
                    None,
                )],
            )
            .await?;
        if written {
            Ok(status)
        } else {
            Err(BackendError::Corrupt {
                key,
                why: "the entry changed while it was being marked clean".into(),
            })
        }
    }

    /// Records that this JobManager started a JobMaster for `session` of `job`: not part
    /// of the protocol, an observation that tests read back in etcd's revision order.
    pub async fn audit_start(&self, job: JobId, session: Session) -> Result<(), BackendError> {
        let mut client = self.client.clone();
        client
            .put(
                self.key(&format!("audit/{}/started/{}", job.0, session.0)),
                self.name.clone(),
                None,
            )
            .await
            .map_err(|e| self.error(e))?;
        Ok(())
    }
}

/// A JobResultStore value: `<STATUS> dirty` or `<STATUS> clean`.
pub fn parse_entry(value: &[u8]) -> Option<(JobStatus, JobResultEntry)> {
    let text = std::str::from_utf8(value).ok()?;
    let (status, state) = text.split_once(' ')?;
    let status = [JobStatus::Finished, JobStatus::Failed, JobStatus::Canceled]
        .into_iter()
        .find(|s| s.name() == status)?;
    let entry = match state {
        "dirty" => JobResultEntry::Dirty,
        "clean" => JobResultEntry::Clean,
        _ => return None,
    };
    Some((status, entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_and_refuse_what_they_do_not_know() {
        assert_eq!(
            parse_entry(b"FAILED dirty"),
            Some((JobStatus::Failed, JobResultEntry::Dirty))
        );
        assert_eq!(
            parse_entry(b"CANCELED clean"),
            Some((JobStatus::Canceled, JobResultEntry::Clean))
        );
        for bad in [
            &b"FAILED"[..],
            b"SUSPENDED clean",
            b"FINISHED done",
            b"\xff",
        ] {
            assert_eq!(parse_entry(bad), None);
        }
    }

    #[test]
    fn client_errors_become_one_line() {
        assert_eq!(one_line("a\n  b\tc"), "a b c");
    }
}
