//! Concurrent, seeded, faulty runs of the production machines, with a production log.
//!
//! The conformance harness steps the machines in lock-step, one event at a time, in the
//! order the model chose. This crate runs them the way a deployment would: as tasks on an
//! async runtime (tokio), racing each other, with messages, answers and callbacks
//! delayed, elections that grant and revoke in storms, and dispatcher failovers, every
//! choice drawn from one seed so that a run replays exactly. Every transition the
//! machines make is a `tracing` event; [`log`] writes them, one JSON object per line, to
//! one file per run. `steadfast validate` (the conformance crate's `validate` module)
//! then checks each file against the model.
//!
//! - [`durable`]: the durable action operator of flink-agents issue 1158 with its
//!   source, supplier, group-committing file log, checkpoint coordinator, injected put
//!   failures, and task crashes with restores.
//! - [`leadership`]: the dispatcher, the HA stores and, per job, a leader election, a
//!   runner and its JobMaster processes (FLINK-39704).

#![deny(missing_docs)]

pub mod durable;
mod error;
pub mod leadership;
pub mod log;
pub mod rng;

pub use error::RunError;
