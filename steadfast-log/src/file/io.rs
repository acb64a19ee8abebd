//! The write and read path of an open [`FileLog`]: appending and flushing frames,
//! reading records back, the acknowledgement handle, and the [`Log`] implementation.

use std::sync::{Arc, Mutex, MutexGuard};

use steadfast::durable::{LogError, LogRecord, Offset, Partition};

use super::{
    check_frame, open_segment_file, segment_name, sync_dir, FileLog, Inner, Segment, HEADER,
    MAX_PAYLOAD, PAYLOAD_FIXED,
};
use crate::log::{io_error, AckError, AckPoll, Cancellation, Log, PendingAck};

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
