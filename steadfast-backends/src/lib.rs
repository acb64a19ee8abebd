//! The leadership machines of `steadfast` (FLINK-39704) on a real coordination service:
//! leader election, the JobGraph store and the JobResultStore, all on etcd.
//!
//! **Why etcd rather than ZooKeeper.** Both are in Debian (`etcd-server` 3.4,
//! `zookeeperd` 3.8) and both would do; etcd won on three counts:
//! - *the client*: `etcd-client` (crates.io, MIT/Apache-2.0) is async on tokio and
//!   tonic, kept up with tonic's releases and covers the whole v3 API (leases, keep-alive,
//!   transactions, watches). Its build generates the gRPC code with `protoc`, which
//!   Debian's `protobuf-compiler` provides (`.ci/run` installs it). The Rust ZooKeeper
//!   clients are fewer and less used, and the server needs a JRE;
//! - *sessions*: an etcd lease is a session with a TTL that the client renews; keys
//!   attached to it vanish when it expires, which is exactly a revoke. Numbering our
//!   sessions by a key's version (`etcd`, "Sessions come from the service") gives the
//!   dense, per-job, monotone numbers `Session` needs, issued by the service;
//! - *fencing*: a transaction compares the leader key's creation revision and writes in
//!   one atomic step, so a store write of a JobManager that lost its lease cannot land.
//!   ZooKeeper's `multi` with a version check on the leader node gives the same, at the
//!   price of the extra node bookkeeping.
//!
//! - [`etcd`]: the keys, the elections and the fenced stores;
//! - [`jobmanager`]: a JobManager process driving the sans-IO dispatcher and runners
//!   against them (the binary `steadfast-jobmanager` runs one).
#![deny(missing_docs)]

pub mod etcd;
pub mod jobmanager;
