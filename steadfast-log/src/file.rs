//! The embedded default [`Log`]: a directory of append-only segment files, one
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

use steadfast::durable::{LogError, LogRecord, Offset, Partition};

use crate::log::{io_error, AckError, AckPoll, Cancellation, Log, PendingAck};
use crate::storage::{LockGuard, StdStorage, Storage, StorageFile};

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

#[derive(Serialize, Deserialize)]
struct Meta {
    version: u32,
    partitions: u32,
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

fn parse_segment_name(name: &str) -> Option<(Partition, Offset)> {
    let rest = name.strip_prefix('p')?.strip_suffix(".seg")?;
    let (p, base) = rest.split_once('-')?;
    if base.len() != 20 {
        return None;
    }
    Some((p.parse().ok()?, base.parse().ok()?))
}

/// Take the directory's exclusive lock; a held lock is [`LogError::Locked`], naming the
/// process id its holder wrote (if it could be read).
fn lock_dir(storage: &dyn Storage, dir: &Path) -> Result<LockGuard, LogError> {
    let path = dir.join(LOCK_FILE);
    match storage.lock_exclusive(&path) {
        Ok(guard) => Ok(guard),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Err(LogError::Locked {
            dir: dir.display().to_string(),
            holder: lock_holder(storage, &path),
        }),
        Err(e) => Err(io_error(format!("lock {}", path.display()), &e)),
    }
}

/// The process id in a lock file: `None` if unreadable, or not written yet (the holder
/// writes it just after locking).
fn lock_holder(storage: &dyn Storage, path: &Path) -> Option<u32> {
    let text = storage.read(path).ok()?;
    std::str::from_utf8(&text).ok()?.trim().parse().ok()
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

/// Whether any intact frame with an offset after `expected` starts after `pos`:
/// if so the damage at `pos` is not a torn tail.
fn intact_frame_follows(bytes: &[u8], pos: usize, expected: Offset) -> bool {
    let max_more = (bytes.len() - pos) as u64 / (HEADER + PAYLOAD_FIXED) as u64 + 1;
    (pos + 1..bytes.len().saturating_sub(HEADER + PAYLOAD_FIXED - 1)).any(|q| {
        // Cheap filter on the offset field before computing a checksum.
        let off_at = q + HEADER;
        let off = u64::from_le_bytes(bytes[off_at..off_at + 8].try_into().expect("8 bytes"));
        off > expected
            && off <= expected + max_more
            && matches!(check_frame(bytes, q), Ok((o, _)) if o == off)
    })
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

/// The partition count from the log's metadata file, checked against `options`; a
/// directory without one gets one (written synced, then renamed into place).
fn read_or_create_meta(
    fs: &dyn Storage,
    dir: &Path,
    options: &FileLogOptions,
) -> Result<u32, LogError> {
    let meta_path = dir.join(META_FILE);
    match fs.read(&meta_path) {
        Ok(bytes) => {
            let meta: Meta = serde_json::from_slice(&bytes)
                .map_err(|e| LogError::Metadata(format!("{}: {e}", meta_path.display())))?;
            if meta.version != 1 || meta.partitions == 0 {
                return Err(LogError::Metadata(format!(
                    "{}: unsupported version {} or zero partitions",
                    meta_path.display(),
                    meta.version
                )));
            }
            if let Some(asked) = options.partitions {
                if asked != meta.partitions {
                    return Err(LogError::Metadata(format!(
                        "{} has {} partitions, {asked} were asked for",
                        dir.display(),
                        meta.partitions
                    )));
                }
            }
            Ok(meta.partitions)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let partitions = options.partitions.unwrap_or(4).max(1);
            let tmp = dir.join("log.json.tmp");
            let text = serde_json::to_vec(&Meta {
                version: 1,
                partitions,
            })
            .map_err(|e| LogError::Metadata(e.to_string()))?;
            fs.write_synced(&tmp, &text)
                .map_err(|e| io_error(format!("write {}", tmp.display()), &e))?;
            fs.rename(&tmp, &meta_path)
                .map_err(|e| io_error(format!("rename {}", tmp.display()), &e))?;
            sync_dir(fs, dir)?;
            Ok(partitions)
        }
        Err(e) => Err(io_error(format!("read {}", meta_path.display()), &e)),
    }
}

/// The segment files in `dir`, by partition, as (base offset, path) in listing order;
/// a segment of a partition the log does not have is refused.
fn find_segments(
    fs: &dyn Storage,
    dir: &Path,
    partitions: u32,
) -> Result<Vec<Vec<(Offset, PathBuf)>>, LogError> {
    let mut found: Vec<Vec<(Offset, PathBuf)>> = vec![Vec::new(); partitions as usize];
    let entries = fs
        .list(dir)
        .map_err(|e| io_error(format!("list {}", dir.display()), &e))?;
    for path in entries {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some((p, base)) = parse_segment_name(&name) {
            let slot = found.get_mut(p as usize).ok_or_else(|| {
                LogError::Metadata(format!(
                    "segment {name} belongs to partition {p}, the log has {partitions}"
                ))
            })?;
            slot.push((base, path));
        }
    }
    Ok(found)
}

/// Recovers `partition` from its segment `files` (a partition without one gets an
/// empty first segment): each segment must start where the one before it ends; only the
/// last may have a torn tail.
fn recover_partition(
    fs: &dyn Storage,
    dir: &Path,
    partition: Partition,
    mut files: Vec<(Offset, PathBuf)>,
    report: &mut RecoveryReport,
) -> Result<PartitionLog, LogError> {
    files.sort();
    if files.is_empty() {
        files.push((0, dir.join(segment_name(partition, 0))));
    }
    let count = files.len();
    let mut segments = Vec::with_capacity(count);
    let mut next: Offset = files[0].0;
    for (i, (base, path)) in files.into_iter().enumerate() {
        if base != next {
            return Err(LogError::Metadata(format!(
                "{} starts at offset {base}, expected {next} (a segment is missing)",
                path.display()
            )));
        }
        let last = i + 1 == count;
        let segment = recover_segment(fs, partition, base, path, last, report)?;
        next = base + segment.positions.len() as Offset;
        segments.push(segment);
    }
    Ok(PartitionLog {
        segments,
        next,
        durable_end: next,
    })
}

fn recover_segment(
    fs: &dyn Storage,
    partition: Partition,
    base: Offset,
    path: PathBuf,
    last: bool,
    report: &mut RecoveryReport,
) -> Result<Segment, LogError> {
    let mut file = open_segment_file(fs, &path)?;
    let bytes = fs
        .read(&path)
        .map_err(|e| io_error(format!("read {}", path.display()), &e))?;
    let mut positions = Vec::new();
    let mut pos = 0usize;
    let mut expected = base;
    while pos < bytes.len() {
        let damage = match check_frame(&bytes, pos) {
            Ok((offset, _)) if offset != expected => Some(format!(
                "record carries offset {offset}, expected {expected}"
            )),
            Ok((_, frame_len)) => {
                positions.push(pos as u64);
                pos += frame_len;
                expected += 1;
                None
            }
            Err(reason) => Some(reason),
        };
        let Some(reason) = damage else { continue };
        let only_zeros = bytes[pos..].iter().all(|b| *b == 0);
        let tail = last && (only_zeros || !intact_frame_follows(&bytes, pos, expected));
        if !tail {
            return Err(LogError::CorruptRecord {
                file: path.display().to_string(),
                position: pos as u64,
                offset: expected,
                reason,
            });
        }
        let dropped = (bytes.len() - pos) as u64;
        file.set_len(pos as u64)
            .and_then(|_| file.sync_all())
            .map_err(|e| io_error(format!("truncate {}", path.display()), &e))?;
        tracing::warn!(
            component = "durable.file_log",
            event = "tail_truncated",
            file = %path.display(),
            partition,
            offset = expected,
            position = pos,
            bytes_dropped = dropped,
            reason = %reason,
        );
        report.truncated.push(TruncatedTail {
            file: path.display().to_string(),
            partition,
            offset: expected,
            position: pos as u64,
            bytes_dropped: dropped,
            reason,
        });
        break;
    }
    report.records += positions.len() as u64;
    let len = positions
        .last()
        .map(|&p| {
            let l = u32::from_le_bytes(bytes[p as usize..p as usize + 4].try_into().expect("4"));
            p + (HEADER as u64) + u64::from(l)
        })
        .unwrap_or(0);
    Ok(Segment {
        base,
        path,
        file,
        len,
        positions,
        dirty: false,
    })
}

impl Inner {
    fn flush(&mut self) -> Result<(), LogError> {
        if let Some(err) = &self.broken {
            return Err(err.clone());
        }
        let sync = self.options.sync;
        let mut failure = None;
        for part in &mut self.partitions {
            for seg in part.segments.iter_mut().filter(|s| s.dirty) {
                if sync {
                    if let Err(e) = seg.file.sync_data() {
                        failure = Some(io_error(format!("fsync {}", seg.path.display()), &e));
                        break;
                    }
                }
                seg.dirty = false;
            }
        }
        let acked = std::mem::take(&mut self.unflushed);
        if let Some(err) = failure {
            // After a failed fsync the kernel may have dropped dirty pages: trust
            // nothing further from this handle.
            tracing::error!(component = "durable.file_log", event = "flush", error = %err);
            self.broken = Some(err.clone());
            for (id, _) in acked {
                if let Some(slot) = self.acks.get_mut(&id) {
                    *slot = AckPoll::Failed(err.clone());
                }
            }
            return Err(LogError::FlushFailed(err.to_string()));
        }
        for part in &mut self.partitions {
            part.durable_end = part.next;
        }
        for (id, offset) in acked {
            if let Some(slot) = self.acks.get_mut(&id) {
                *slot = AckPoll::Acked(offset);
            }
        }
        Ok(())
    }

    fn append(
        &mut self,
        partition: Partition,
        key: &[u8],
        value: &[u8],
    ) -> Result<Offset, LogError> {
        if let Some(err) = &self.broken {
            return Err(err.clone());
        }
        let count = self.partitions.len() as u32;
        let segment_bytes = self.options.segment_bytes;
        let part =
            self.partitions
                .get_mut(partition as usize)
                .ok_or(LogError::UnknownPartition {
                    partition,
                    partitions: count,
                })?;
        let offset = part.next;
        let payload_len = PAYLOAD_FIXED + key.len() + value.len();
        if payload_len > MAX_PAYLOAD {
            return Err(LogError::SendFailed(format!(
                "record of {payload_len} bytes exceeds the {MAX_PAYLOAD}-byte limit"
            )));
        }
        let frame = &mut self.frame;
        frame.clear();
        frame.extend_from_slice(&(payload_len as u32).to_le_bytes());
        frame.extend_from_slice(&[0; 4]);
        frame.extend_from_slice(&offset.to_le_bytes());
        frame.extend_from_slice(&(key.len() as u32).to_le_bytes());
        frame.extend_from_slice(key);
        frame.extend_from_slice(value);
        let crc = crc32c::crc32c(&frame[HEADER..]);
        frame[4..8].copy_from_slice(&crc.to_le_bytes());

        let active = part.segments.last_mut().expect("a partition has a segment");
        if active.len > 0 && active.len + frame.len() as u64 > segment_bytes {
            // The full segment is made durable before the next one starts: recovery
            // accepts a torn tail only in a partition's last segment, so a power loss
            // that tore an earlier segment's unsynced tail would leave a log that no
            // longer opens (found by the power-loss test).
            if self.options.sync {
                if let Err(e) = active.file.sync_data() {
                    let err = io_error(format!("fsync {}", active.path.display()), &e);
                    self.broken = Some(err.clone());
                    return Err(err);
                }
            }
            let path = self.dir.join(segment_name(partition, offset));
            let file = open_segment_file(&*self.storage, &path)?;
            // The new file's directory entry is durable before any record in it is
            // acknowledged.
            sync_dir(&*self.storage, &self.dir)?;
            tracing::info!(
                component = "durable.file_log",
                event = "segment_rolled",
                partition,
                base = offset,
                file = %path.display(),
            );
            part.segments.push(Segment {
                base: offset,
                path,
                file,
                len: 0,
                positions: Vec::new(),
                dirty: false,
            });
        }
        let seg = part.segments.last_mut().expect("a partition has a segment");
        if let Err(e) = seg.file.append(frame) {
            // Cut a partial frame off so later appends stay aligned.
            let _ = seg.file.set_len(seg.len);
            return Err(io_error(format!("append to {}", seg.path.display()), &e));
        }
        seg.positions.push(seg.len);
        seg.len += frame.len() as u64;
        seg.dirty = true;
        part.next += 1;
        Ok(offset)
    }

    fn read_record(&self, partition: Partition, offset: Offset) -> Result<LogRecord, LogError> {
        let part = &self.partitions[partition as usize];
        let idx = part.segments.partition_point(|s| s.base <= offset) - 1;
        let seg = &part.segments[idx];
        let pos = seg.positions[(offset - seg.base) as usize];
        let mut header = [0u8; HEADER];
        let io = |e: std::io::Error| io_error(format!("read {}", seg.path.display()), &e);
        seg.file.read_exact_at(&mut header, pos).map_err(io)?;
        let len = u32::from_le_bytes(header[0..4].try_into().expect("4")) as usize;
        let mut frame = vec![0u8; HEADER + len.min(MAX_PAYLOAD)];
        frame[..HEADER].copy_from_slice(&header);
        seg.file
            .read_exact_at(&mut frame[HEADER..], pos + HEADER as u64)
            .map_err(io)?;
        match check_frame(&frame, 0) {
            Ok((o, _)) if o == offset => {}
            Ok((o, _)) => {
                return Err(LogError::CorruptRecord {
                    file: seg.path.display().to_string(),
                    position: pos,
                    offset,
                    reason: format!("record carries offset {o}"),
                })
            }
            Err(reason) => {
                return Err(LogError::CorruptRecord {
                    file: seg.path.display().to_string(),
                    position: pos,
                    offset,
                    reason,
                })
            }
        }
        let key_len = u32::from_le_bytes(frame[16..20].try_into().expect("4")) as usize;
        let body = &frame[HEADER + PAYLOAD_FIXED..];
        Ok(LogRecord {
            partition,
            offset,
            key: body[..key_len].to_vec(),
            value: body[key_len..].to_vec(),
        })
    }
}

/// Acknowledgement of a [`FileLog`] send. Waiting on it flushes if needed.
pub struct FileAck {
    inner: Arc<Mutex<Inner>>,
    id: u64,
}

impl FileAck {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for FileAck {
    fn drop(&mut self) {
        self.lock().acks.remove(&self.id);
    }
}

impl PendingAck for FileAck {
    fn poll(&mut self) -> AckPoll {
        self.lock()
            .acks
            .get(&self.id)
            .cloned()
            .unwrap_or(AckPoll::Pending)
    }

    fn wait(&mut self, cancel: &Cancellation) -> Result<Offset, AckError> {
        let mut inner = self.lock();
        if matches!(inner.acks.get(&self.id), Some(AckPoll::Pending)) {
            if cancel.is_cancelled() {
                return Err(AckError::Cancelled);
            }
            // Group commit: this fsync covers every send made so far.
            let _ = inner.flush();
        }
        match inner.acks.get(&self.id) {
            Some(AckPoll::Acked(offset)) => Ok(*offset),
            Some(AckPoll::Failed(err)) => Err(AckError::Log(err.clone())),
            _ => Err(AckError::Log(LogError::SendFailed(
                "acknowledgement lost".into(),
            ))),
        }
    }
}

impl Log for FileLog {
    type Ack = FileAck;

    fn partition_count(&self) -> u32 {
        self.lock().partitions.len() as u32
    }

    fn send(
        &mut self,
        partition: Partition,
        key: &[u8],
        value: &[u8],
    ) -> Result<FileAck, LogError> {
        let mut inner = self.lock();
        let id = inner.next_ack;
        inner.next_ack += 1;
        let outcome = match inner.append(partition, key, value) {
            Ok(offset) => {
                inner.unflushed.push((id, offset));
                AckPoll::Pending
            }
            Err(err @ LogError::UnknownPartition { .. }) => return Err(err),
            Err(err) => {
                tracing::warn!(component = "durable.file_log", event = "send", partition, error = %err);
                AckPoll::Failed(err)
            }
        };
        inner.acks.insert(id, outcome);
        Ok(FileAck {
            inner: Arc::clone(&self.inner),
            id,
        })
    }

    fn flush(&mut self) -> Result<(), LogError> {
        self.lock().flush()
    }

    fn read(
        &mut self,
        partition: Partition,
        from: Offset,
        max_records: usize,
    ) -> Result<Vec<LogRecord>, LogError> {
        let inner = self.lock();
        let count = inner.partitions.len() as u32;
        let part = inner
            .partitions
            .get(partition as usize)
            .ok_or(LogError::UnknownPartition {
                partition,
                partitions: count,
            })?;
        let start = part.segments[0].base;
        let end = part.durable_end;
        if from > end || from < start {
            return Err(LogError::OffsetOutOfRange {
                partition,
                offset: from,
                end,
            });
        }
        let stop = end.min(from.saturating_add(max_records as u64));
        (from..stop)
            .map(|offset| inner.read_record(partition, offset))
            .collect()
    }

    fn end_offsets(&mut self) -> Result<Vec<Offset>, LogError> {
        Ok(self
            .lock()
            .partitions
            .iter()
            .map(|p| p.durable_end)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_open_of_a_held_directory_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = FileLog::open(dir.path(), FileLogOptions::default()).unwrap();
        let err = FileLog::open(dir.path(), FileLogOptions::default()).unwrap_err();
        let pid = std::process::id();
        assert_eq!(
            err,
            LogError::Locked {
                dir: dir.path().display().to_string(),
                holder: Some(pid),
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "log directory {} is locked by process {pid}",
                dir.path().display()
            )
        );
        // A clone shares the open log and its lock: dropping it releases nothing.
        drop(first.clone());
        assert!(FileLog::open(dir.path(), FileLogOptions::default()).is_err());
        drop(first);
        let mut again = FileLog::open(dir.path(), FileLogOptions::default()).unwrap();
        assert_eq!(again.end_offsets().unwrap(), vec![0; 4]);
    }
}
