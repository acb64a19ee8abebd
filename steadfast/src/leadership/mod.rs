//! The leadership lifecycle of a Flink job, as sans-IO state machines, in the fixed
//! design of FLINK-39704 ("Preserve globally terminal job result across leadership
//! revocation", apache/flink PR 28201).
//!
//! A job's globally terminal result (FINISHED, FAILED, CANCELED) used to be masked as
//! SUSPENDED when leadership was revoked in the same window; the dispatcher then kept the
//! JobGraph and recovered the finished job on the next grant. The fix has two parts,
//! both built in here:
//! - [`Process`] defers `NotFinished` until its JobMaster service terminated, so a
//!   terminal signal that is still in flight when close starts wins;
//! - [`Runner`] caches a terminal value of its current process in `pending_terminal`
//!   before the leadership check on the forwarding path, and flushes it on close or on
//!   the next grant instead of reporting SUSPENDED or starting a new process.
//!
//! [`Dispatcher`] consumes the runner result and asks a [`JobGraphStore`] and a
//! [`JobResultStore`] through effects; [`Driver`] wires everything to an in-memory
//! [`Environment`].
//! Each machine takes an event and returns effects; none does IO. Every transition
//! emits one `tracing` debug event with fields `component`, `event`, `session` (where
//! one applies) and `outcome`.
#![deny(missing_docs)]

mod defect;
mod dispatcher;
mod driver;
mod error;
mod process;
mod projection;
mod runner;
mod store;
mod types;

#[cfg(feature = "defects")]
pub use defect::Defect;
pub use dispatcher::{Dispatcher, DispatcherEffect, DispatcherEvent, RecoveredJob};
pub use driver::{Driver, DriverEffect, Environment, Query};
pub use error::LeadershipError;
pub use process::{Process, ProcessEffect, ProcessEvent};
pub use projection::{LeadershipProjection, ProcessProjection, RunnerProjection};
pub use runner::{Effect, Event, Handled, Runner, RunnerOutcome};
pub use store::{InMemoryJobGraphStore, InMemoryJobResultStore, JobGraphStore, JobResultStore};
pub use types::{
    JobId, JobResultEntry, JobStatus, ProcessResult, ProcessState, RunnerResult, RunnerState,
    Session,
};
