//! The embedded default [`Log`](crate::Log): a directory of append-only segment files, one
//! series per partition, so a single process can save durable call results without
//! a broker (the role Kafka plays for flink-agents issue 1158).
//!
//! Layout: `log.json` holds the partition count; partition `p` is the files
//! `p{p}-{base offset, 20 digits}.seg`, rolled when a segment reaches the size
//! limit. Each record is a frame `[payload length: u32 LE][crc32c of payload: u32
//! LE][payload]`, the payload being `[offset: u64 LE][key length: u32 LE][key][value]`.
//!
//! A send appends its frame to the active segment at once; a flush fsyncs every
//! written segment and only then resolves the acknowledgements, so an acknowledged
//! record survives a crash of the process or the machine. Waiting on an
//! unresolved acknowledgement flushes, which commits every send made so far in one
//! fsync (group commit). Readers see flushed records only.
//!
//! Opening recovers: every frame is checked; a damaged frame that is the tail of
//! the partition's last segment (it runs past the end of the file, ends exactly
//! at the end, or only zero bytes follow it) is truncated and reported in
//! [`RecoveryReport`]. Any other damaged frame is [`LogError::CorruptRecord`]
//! naming the file and byte position: records are never skipped.
//!
//! One writer at a time: opening takes an exclusive lock on the directory (`flock` of
//! its `LOCK` file, which holds the holder's process id) before it reads or repairs
//! anything, and keeps it until the last clone of the log and the last acknowledgement
//! handle it gave out are dropped, or the process ends. A second open, from another process or from this one while the first handle
//! lives, fails at once with [`LogError::Locked`] naming the holder. Every open is a
//! writer's (opening may truncate a torn tail), so a reader, such as the driver's
//! projection between a crash and a restore, opens only while no writer holds the log.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use steadfast::durable::{LogError, Offset, Partition};

use crate::log::{io_error, AckPoll};
use crate::storage::{LockGuard, StdStorage, Storage, StorageFile};

mod io;
mod recovery;
#[cfg(test)]
mod tests;

pub use io::FileAck;
use recovery::{find_segments, lock_dir, read_or_create_meta, recover_partition};

const META_FILE: &str = "log.json";
/// The directory's lock file (module documentation).
const LOCK_FILE: &str = "LOCK";
const HEADER: usize = 8;
const PAYLOAD_FIXED: usize = 12;
/// Largest payload accepted; anything larger in a header is damage.
const MAX_PAYLOAD: usize = 256 << 20;

/// Options for opening a [`FileLog`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileLogOptions {
    /// Partition count. `None`: use the existing log's count, or 4 for a new log.
    /// `Some(n)` on an existing log with a different count is an error.
    pub partitions: Option<u32>,
    /// A segment rolls once appending would take it past this many bytes.
    pub segment_bytes: u64,
    /// Whether a flush fsyncs (turn off only for throwaway logs).
    pub sync: bool,
}

impl Default for FileLogOptions {
    fn default() -> Self {
        FileLogOptions {
            partitions: None,
            segment_bytes: 64 << 20,
            sync: true,
        }
    }
}

/// A damaged tail that opening truncated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruncatedTail {
    /// Segment file.
    pub file: String,
    /// Partition of the segment.
    pub partition: Partition,
    /// Offset the dropped record would have had.
    pub offset: Offset,
    /// Byte position the file was cut at.
    pub position: u64,
    /// Bytes dropped.
    pub bytes_dropped: u64,
    /// What was wrong with the tail.
    pub reason: String,
}

/// What opening the log found and repaired.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryReport {
    /// Damaged tails truncated, at most one per partition.
    pub truncated: Vec<TruncatedTail>,
    /// Records found intact, over all partitions.
    pub records: u64,
}

struct Segment {
    base: Offset,
    path: PathBuf,
    file: Box<dyn StorageFile>,
    len: u64,
    /// Byte position of each record, indexed by `offset - base`.
    positions: Vec<u64>,
    dirty: bool,
}

struct PartitionLog {
    segments: Vec<Segment>,
    /// Offset the next send gets.
    next: Offset,
    /// One past the last flushed record: what readers see.
    durable_end: Offset,
}

struct Inner {
    /// The directory's lock, released when the last clone of the log is dropped.
    _lock: LockGuard,
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    options: FileLogOptions,
    partitions: Vec<PartitionLog>,
    acks: HashMap<u64, AckPoll>,
    unflushed: Vec<(u64, Offset)>,
    next_ack: u64,
    /// Set when an fsync failed: the page cache state is unknown from then on.
    broken: Option<LogError>,
    frame: Vec<u8>,
}

/// The file-backed log. Clones share one open log.
#[derive(Clone)]
pub struct FileLog {
    inner: Arc<Mutex<Inner>>,
    report: Arc<RecoveryReport>,
}

impl std::fmt::Debug for FileLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.lock();
        f.debug_struct("FileLog")
            .field("dir", &inner.dir)
            .field("partitions", &inner.partitions.len())
            .finish()
    }
}

fn segment_name(partition: Partition, base: Offset) -> String {
    format!("p{partition}-{base:020}.seg")
}

fn sync_dir(storage: &dyn Storage, dir: &Path) -> Result<(), LogError> {
    storage
        .sync_dir(dir)
        .map_err(|e| io_error(format!("sync directory {}", dir.display()), &e))
}

fn open_segment_file(storage: &dyn Storage, path: &Path) -> Result<Box<dyn StorageFile>, LogError> {
    storage
        .open_append(path)
        .map_err(|e| io_error(format!("open {}", path.display()), &e))
}

/// A frame at `pos` that checks out: returns (payload offset field, frame length).
fn check_frame(bytes: &[u8], pos: usize) -> Result<(Offset, usize), String> {
    if bytes.len() - pos < HEADER {
        return Err("incomplete frame header".into());
    }
    let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().expect("4 bytes"));
    if !(PAYLOAD_FIXED..=MAX_PAYLOAD).contains(&len) {
        return Err(format!("implausible payload length {len}"));
    }
    if bytes.len() - pos - HEADER < len {
        return Err(format!(
            "frame of {} bytes runs past the end of the file",
            HEADER + len
        ));
    }
    let payload = &bytes[pos + HEADER..pos + HEADER + len];
    if crc32c::crc32c(payload) != crc {
        return Err("checksum mismatch".into());
    }
    let offset = u64::from_le_bytes(payload[0..8].try_into().expect("8 bytes"));
    let key_len = u32::from_le_bytes(payload[8..12].try_into().expect("4 bytes")) as usize;
    if key_len > len - PAYLOAD_FIXED {
        return Err(format!("key length {key_len} exceeds the payload"));
    }
    Ok((offset, HEADER + len))
}

impl FileLog {
    /// Open the log in `dir`, creating it if the directory holds no log, and
    /// recover every partition (see the module documentation).
    pub fn open(dir: impl AsRef<Path>, options: FileLogOptions) -> Result<FileLog, LogError> {
        Self::open_on(Arc::new(StdStorage), dir, options)
    }

    /// [`FileLog::open`] on `storage` (a simulated disk in the power-loss test).
    pub fn open_on(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        options: FileLogOptions,
    ) -> Result<FileLog, LogError> {
        let dir = dir.as_ref().to_path_buf();
        let fs = &*storage;
        fs.create_dir_all(&dir)
            .map_err(|e| io_error(format!("create {}", dir.display()), &e))?;
        let lock = lock_dir(fs, &dir)?;
        let partitions = read_or_create_meta(fs, &dir, &options)?;
        let found = find_segments(fs, &dir, partitions)?;
        let mut report = RecoveryReport::default();
        let mut logs = Vec::with_capacity(partitions as usize);
        for (p, files) in found.into_iter().enumerate() {
            logs.push(recover_partition(
                fs,
                &dir,
                p as Partition,
                files,
                &mut report,
            )?);
        }
        sync_dir(fs, &dir)?;
        tracing::info!(
            component = "durable.file_log",
            event = "open",
            dir = %dir.display(),
            partitions,
            records = report.records,
            truncated = report.truncated.len(),
        );
        Ok(FileLog {
            inner: Arc::new(Mutex::new(Inner {
                _lock: lock,
                storage,
                dir,
                options,
                partitions: logs,
                acks: HashMap::new(),
                unflushed: Vec::new(),
                next_ack: 0,
                broken: None,
                frame: Vec::new(),
            })),
            report: Arc::new(report),
        })
    }

    /// What opening found and repaired.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.report
    }

    /// The log's directory.
    pub fn dir(&self) -> PathBuf {
        self.lock().dir.clone()
    }

    /// Segment files of `partition`, oldest first.
    pub fn segment_files(&self, partition: Partition) -> Vec<PathBuf> {
        self.lock()
            .partitions
            .get(partition as usize)
            .map(|p| p.segments.iter().map(|s| s.path.clone()).collect())
            .unwrap_or_default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
