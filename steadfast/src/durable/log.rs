//! The vocabulary of the log behind the action state store: partitions, offsets, the
//! records a consumer reads back, and the errors a log reports. The operator and the
//! store speak it in their events and effects; the log itself (the `Log` trait, its
//! implementations and the blocking driver that owns one) lives in the `steadfast-log`
//! crate, so this crate does no IO.

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
