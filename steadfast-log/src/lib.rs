//! steadfast-log: the log behind durable actions, and the blocking driver that runs the
//! sans-IO operator of the `steadfast` crate on one.
//!
//! - [`Log`]: the partitioned, offset-addressed log trait (what a Kafka topic offers):
//!   `send` returns a pending acknowledgement, `flush` pushes sends out, the
//!   acknowledgement is polled or waited on;
//! - [`MemoryLog`]: an in-memory log (with fault injection under the `testkit` feature);
//! - [`FileLog`]: the embedded default, append-only checksummed segment files, over the
//!   file operations of [`storage`] (the real file system, or a simulated disk);
//! - [`Driver`]: the only owner of a [`Log`]: it executes the operator's effects, groups
//!   puts under one flush ([`group_commit`]), crashes and restores the operator (fencing
//!   the log first), and counts supplier calls;
//! - [`Projection`]: the driver's observable projection of a run, which conformance
//!   compares with the model.
//!
//! The Kafka log is in the `steadfast-kafka` crate; every log passes the one contract
//! suite of `testing` (feature `testkit`), in the manner of openraft's storage suite.

#[cfg(not(unix))]
compile_error!("steadfast-log's file log locks and syncs files with unix calls (flock, positional reads); it builds on unix only");

mod driver;
mod file;
mod group;
mod log;
mod memory;
mod projection;
pub mod storage;
#[cfg(feature = "testkit")]
pub mod testing;

pub use driver::{
    append_fences, restart_without_checkpoint, restore_from_log, Driver, DriverError, Reopen,
    RequestedCall, Supplier,
};
pub use file::{FileAck, FileLog, FileLogOptions, RecoveryReport, TruncatedTail};
pub use group::{group_commit, Cancelled, GroupCommit};
pub use log::{AckError, AckPoll, Cancellation, Log, PendingAck};
pub use memory::{MemoryAck, MemoryLog, SendFault};
pub use projection::{
    CachedState, CallCount, CheckpointProjection, KeyActivityProjection, KeyProjection,
    LoggedState, OutputRecord, Projection,
};
pub use steadfast::durable::{LogError, LogRecord, Offset, Partition};

// The README's Rust example is compiled and run as a doctest, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExample;
