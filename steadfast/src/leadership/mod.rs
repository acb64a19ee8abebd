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
//! [`Dispatcher`] consumes the runner result and asks the JobGraph store and the
//! JobResultStore through effects ([`DispatcherEffect`]); the caller executes them.
//! Each machine takes an event and returns effects; none does IO. Every transition
//! emits one `tracing` debug event with fields `component`, `event`, `session` (where
//! one applies) and `outcome`.
//!
//! With the feature `testkit` (test support, never for production) the module also has
//! `Harness`, which wires every machine of one job to an in-memory `Environment` (the
//! election and the HA stores, behind the `JobGraphStore` and `JobResultStore` traits),
//! and the observable projections that conformance compares with the model.
#![deny(missing_docs)]

mod defect;
mod dispatcher;
mod error;
#[cfg(any(test, feature = "testkit"))]
mod harness;
mod process;
#[cfg(any(test, feature = "testkit"))]
mod projection;
mod runner;
#[cfg(any(test, feature = "testkit"))]
mod store;
mod types;

#[cfg(feature = "defects")]
pub use defect::Defect;
pub use dispatcher::{Dispatcher, DispatcherEffect, DispatcherEvent, RecoveredJob};
pub use error::LeadershipError;
#[cfg(feature = "testkit")]
pub use harness::{Environment, Harness, HarnessEffect, Query};
pub use process::{Process, ProcessEffect, ProcessEvent};
#[cfg(feature = "testkit")]
pub use projection::{LeadershipProjection, ProcessProjection, RunnerProjection};
pub use runner::{Effect, Event, Handled, Runner, RunnerOutcome};
#[cfg(feature = "testkit")]
pub use store::{InMemoryJobGraphStore, InMemoryJobResultStore, JobGraphStore, JobResultStore};
pub use types::{
    JobId, JobResultEntry, JobStatus, ProcessResult, ProcessState, RunnerResult, RunnerState,
    Session,
};
