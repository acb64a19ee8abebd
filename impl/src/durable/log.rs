//! The log behind the action state store: a partitioned, offset-addressed
//! producer/consumer log, shaped so that a Kafka topic can implement it.
//!
//! flink-agents issue 1158 is about when a saved call result counts as saved: the
//! Kafka store sends a record, flushes the producer and only then awaits the send's
//! future. This trait keeps exactly those three steps apart (`send` returns a
//! pending acknowledgement, `flush` pushes buffered sends out, the acknowledgement
//! is polled or waited on), so the store's put order is visible and testable.
//! Nothing here needs an async runtime: an acknowledgement is a handle that is
//! polled, or waited on with a [`Cancellation`] token.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Index of a partition, `0..partition_count`.
pub type Partition = u32;
/// Position of a record inside one partition; the first record has offset 0.
pub type Offset = u64;

/// One record as a consumer reads it back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRecord {
    /// Partition the record lives in.
    pub partition: Partition,
    /// Offset of the record inside its partition.
    pub offset: Offset,
    /// Record key bytes.
    pub key: Vec<u8>,
    /// Record value bytes.
    pub value: Vec<u8>,
}

/// Errors a log reports, for sends, flushes, reads and recovery.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum LogError {
    /// A send was rejected; the record may or may not have landed (the broker
    /// can fail a request after appending it).
    #[error("send failed: {0}")]
    SendFailed(String),
    /// A flush failed; the sends it covered fail too.
    #[error("flush failed: {0}")]
    FlushFailed(String),
    /// A partition index outside `0..partition_count`.
    #[error("unknown partition {partition} (the log has {partitions} partitions)")]
    UnknownPartition {
        /// The partition asked for.
        partition: Partition,
        /// How many partitions the log has.
        partitions: u32,
    },
    /// A read asked for an offset past the partition's end.
    #[error("offset {offset} is past the end {end} of partition {partition}")]
    OffsetOutOfRange {
        /// Partition read.
        partition: Partition,
        /// Offset asked for.
        offset: Offset,
        /// End offset of the partition.
        end: Offset,
    },
    /// A record inside a segment file is damaged and is not the file's tail.
    #[error("corrupt record in {file} at byte {position} (record offset {offset}): {reason}")]
    CorruptRecord {
        /// Segment file path.
        file: String,
        /// Byte position of the damaged frame inside the file.
        position: u64,
        /// Offset the damaged record would have had.
        offset: Offset,
        /// What was wrong with it.
        reason: String,
    },
    /// The log directory's metadata disagrees with what the caller asked for, or is
    /// unreadable.
    #[error("log metadata: {0}")]
    Metadata(String),
    /// The log's directory is held by another open log, in this process or another
    /// (one writer at a time).
    #[error(
        "log directory {dir} is locked by {}",
        .holder.map_or("another process".to_string(), |pid| format!("process {pid}"))
    )]
    Locked {
        /// The directory.
        dir: String,
        /// Process id of the holder, if its lock file names one.
        holder: Option<u32>,
    },
    /// An operating-system I/O error, with the path or action involved.
    #[error("i/o error ({context}): {message}")]
    Io {
        /// What was being done.
        context: String,
        /// The error text.
        message: String,
    },
}

impl LogError {
    pub(crate) fn io(context: impl Into<String>, err: &std::io::Error) -> Self {
        LogError::Io {
            context: context.into(),
            message: err.to_string(),
        }
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
