//! The log behind the action state store: a partitioned, offset-addressed
//! producer/consumer log, shaped so that a Kafka topic can implement it.
//!
//! flink-agents issue 1158 is about when a saved call result counts as saved: the
//! Kafka store sends a record, flushes the producer and only then awaits the send's
//! future. This trait keeps exactly those three steps apart (`send` returns a
//! pending acknowledgement, `flush` pushes buffered sends out, the acknowledgement
//! is polled or waited on), so the store's put order is visible and testable.
//! Nothing here needs an async runtime: an acknowledgement is a handle that is
//! polled, or waited on with a [`Cancellation`] token. The values a log carries
//! ([`Partition`], [`Offset`], [`LogRecord`], [`LogError`]) are the machines' own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use steadfast::durable::{LogError, LogRecord, Offset, Partition};

/// A [`LogError::Io`] for a failed file operation.
pub(crate) fn io_error(context: impl Into<String>, err: &std::io::Error) -> LogError {
    LogError::Io {
        context: context.into(),
        message: err.to_string(),
    }
}

/// What polling an acknowledgement found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AckPoll {
    /// Not resolved yet.
    Pending,
    /// The record is in the log at this offset.
    Acked(Offset),
    /// The send failed (the record may still have landed; see [`LogError::SendFailed`]).
    Failed(LogError),
}

/// Why waiting for an acknowledgement ended without an offset.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AckError {
    /// The log reported a failure.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The wait was cancelled; the send itself may still complete later.
    #[error("wait for acknowledgement cancelled")]
    Cancelled,
}

/// A cancellation signal shared between a task and whoever may stop it.
///
/// Once set it stays set: waiting on an acknowledgement observes it but never
/// clears it, so code later in the task still sees the request to stop (the Java
/// fix restores the thread's interrupt flag for the same reason).
#[derive(Clone, Debug, Default)]
pub struct Cancellation(Arc<AtomicBool>);

impl Cancellation {
    /// A fresh, unset signal.
    pub fn new() -> Self {
        Self::default()
    }
    /// Request cancellation.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    /// Whether cancellation was requested.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A pending acknowledgement of one send.
pub trait PendingAck {
    /// Look at the acknowledgement without blocking. Once it returns `Acked` or
    /// `Failed`, later polls return the same answer.
    fn poll(&mut self) -> AckPoll;

    /// Block until the acknowledgement resolves or `cancel` is set.
    ///
    /// The default polls with a short sleep; logs with their own wake-up
    /// mechanism override it.
    fn wait(&mut self, cancel: &Cancellation) -> Result<Offset, AckError> {
        loop {
            match self.poll() {
                AckPoll::Acked(offset) => return Ok(offset),
                AckPoll::Failed(err) => return Err(AckError::Log(err)),
                AckPoll::Pending => {
                    if cancel.is_cancelled() {
                        return Err(AckError::Cancelled);
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
    }
}

/// A partitioned, offset-addressed log with producer and consumer sides.
///
/// Contract (what a Kafka topic with an idempotent producer also gives):
/// - records sent to one partition land in send order with consecutive offsets;
/// - `flush` returns once every earlier send has resolved or been handed to the
///   broker, and reports a failure of the flush itself;
/// - an acknowledged record can be read back at its offset until the log is
///   deleted;
/// - `end_offsets` is one past the last readable record of each partition.
pub trait Log {
    /// The acknowledgement handle `send` returns.
    type Ack: PendingAck;

    /// Number of partitions, fixed for the log's lifetime.
    fn partition_count(&self) -> u32;

    /// Start sending one record. Errors found at once (an unknown partition) are
    /// returned here; everything else arrives through the acknowledgement.
    fn send(
        &mut self,
        partition: Partition,
        key: &[u8],
        value: &[u8],
    ) -> Result<Self::Ack, LogError>;

    /// Push out every buffered send.
    fn flush(&mut self) -> Result<(), LogError>;

    /// Read up to `max_records` records of `partition` starting at `from`.
    /// Reading at the end offset returns an empty list.
    fn read(
        &mut self,
        partition: Partition,
        from: Offset,
        max_records: usize,
    ) -> Result<Vec<LogRecord>, LogError>;

    /// End offset of every partition, indexed by partition.
    fn end_offsets(&mut self) -> Result<Vec<Offset>, LogError>;
}
