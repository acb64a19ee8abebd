//! Opening a [`FileLog`](super::FileLog) directory: taking its lock, reading or writing
//! its metadata, finding the segment files, and checking every frame, truncating a
//! torn tail of a partition's last segment.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use steadfast::durable::{LogError, Offset, Partition};

use super::{
    check_frame, open_segment_file, segment_name, sync_dir, FileLogOptions, PartitionLog,
    RecoveryReport, Segment, TruncatedTail, HEADER, LOCK_FILE, META_FILE, PAYLOAD_FIXED,
};
use crate::log::io_error;
use crate::storage::{LockGuard, Storage};

#[derive(Serialize, Deserialize)]
struct Meta {
    version: u32,
    partitions: u32,
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
pub(super) fn lock_dir(storage: &dyn Storage, dir: &Path) -> Result<LockGuard, LogError> {
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

/// The partition count from the log's metadata file, checked against `options`; a
/// directory without one gets one (written synced, then renamed into place).
pub(super) fn read_or_create_meta(
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
pub(super) fn find_segments(
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
pub(super) fn recover_partition(
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
