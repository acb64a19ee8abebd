//! An in-memory [`Log`] for tests and benchmarks, with fault injection behind the
//! `testkit` feature.
//!
//! flink-agents issue 1158 turns on what a producer can observe: a send can fail
//! before its record lands, fail *after* it landed (the broker appended it but the
//! producer sees an error), hang until the waiting task is cancelled, or land with
//! the acknowledgement never arriving. Each of these is a [`SendFault`] queued for
//! an upcoming send (`testkit`). An optional linger interval holds sends in a batch
//! until a flush or until the interval passes, like a Kafka producer's `linger.ms`.
//!
//! The log is shared: clones see the same records, so a test can drop an operator
//! (a crash) and restore a new one over the same "broker". `MemoryLog::fork` (`testkit`)
//! makes an independent copy instead. Landed records
//! never change, so a fork shares them: each partition is copied on its first write
//! after a fork, and then only as a list of shared records. A record's key and value
//! are kept in one shared buffer, allocated once when the record is sent; reads hand
//! out [`LogRecord`]s built from it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::log::{AckError, AckPoll, Cancellation, Log, PendingAck};
use steadfast::durable::{LogError, LogRecord, Offset, Partition};

/// A fault applied to one send when its record would land.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SendFault {
    /// The record never lands and the acknowledgement fails.
    FailBeforeLanding,
    /// The record lands, but the acknowledgement fails.
    FailAfterLanding,
    /// The record never lands and the acknowledgement never resolves.
    Hang,
    /// The record lands and the acknowledgement never resolves.
    LandUnacked,
}

#[derive(Clone)]
struct Pending {
    id: u64,
    partition: Partition,
    record: Stored,
    fault: Option<SendFault>,
}

/// A record's key and value bytes, back to back in one buffer that the log and its
/// forks share: a record is written once and only read afterwards.
#[derive(Clone)]
struct Stored {
    bytes: Arc<[u8]>,
    key_len: usize,
}

impl Stored {
    fn new(key: &[u8], value: &[u8]) -> Self {
        // Collected from an iterator of known length, the buffer is allocated once, at
        // its size; it is filled by two copies while this is its only handle.
        let mut bytes: Arc<[u8]> = std::iter::repeat_n(0, key.len() + value.len()).collect();
        let buffer = Arc::get_mut(&mut bytes).expect("a new buffer has one handle");
        buffer[..key.len()].copy_from_slice(key);
        buffer[key.len()..].copy_from_slice(value);
        Stored {
            bytes,
            key_len: key.len(),
        }
    }

    /// The record as a consumer reads it, at `offset` of `partition`.
    fn read(&self, partition: Partition, offset: Offset) -> LogRecord {
        let (key, value) = self.bytes.split_at(self.key_len);
        LogRecord {
            partition,
            offset,
            key: key.to_vec(),
            value: value.to_vec(),
        }
    }
}

/// One partition's landed records, shared between forks until one of them writes.
type Records = Arc<Vec<Stored>>;

/// Every record of one partition, as a consumer reads them.
fn read_all(partition: usize, records: &[Stored]) -> Vec<LogRecord> {
    records
        .iter()
        .enumerate()
        .map(|(offset, r)| r.read(partition as Partition, offset as Offset))
        .collect()
}

#[derive(Default)]
struct State {
    partitions: Vec<Records>,
    acks: HashMap<u64, AckPoll>,
    next_ack: u64,
    /// Per upcoming send, in order, its fault; `None` for a send left alone.
    faults: VecDeque<Option<SendFault>>,
    flush_faults: VecDeque<String>,
    linger: Option<Duration>,
    batch: Vec<Pending>,
    batch_deadline: Option<Instant>,
    sends: u64,
    /// Threads blocked in `MemoryAck::wait`; wake-ups are skipped when none are.
    waiters: u32,
}

impl State {
    /// Land one send; returns its acknowledgement outcome and records it for a
    /// handle still waiting in `acks`.
    fn land(&mut self, p: Pending) -> AckPoll {
        let lands = !matches!(
            p.fault,
            Some(SendFault::FailBeforeLanding) | Some(SendFault::Hang)
        );
        let offset = if lands {
            let part = Arc::make_mut(&mut self.partitions[p.partition as usize]);
            let offset = part.len() as Offset;
            part.push(p.record);
            Some(offset)
        } else {
            None
        };
        let outcome = match (p.fault, offset) {
            (None, Some(offset)) => AckPoll::Acked(offset),
            (Some(SendFault::FailBeforeLanding), _) => AckPoll::Failed(LogError::SendFailed(
                "injected failure before the record landed".into(),
            )),
            (Some(SendFault::FailAfterLanding), _) => AckPoll::Failed(LogError::SendFailed(
                "injected failure after the record landed".into(),
            )),
            _ => AckPoll::Pending,
        };
        tracing::debug!(
            component = "durable.memory_log",
            event = "land",
            partition = p.partition,
            landed = lands,
            fault = ?p.fault,
            offset = ?offset,
        );
        if let Some(slot) = self.acks.get_mut(&p.id) {
            *slot = outcome.clone();
        }
        outcome
    }

    fn land_batch(&mut self) {
        self.batch_deadline = None;
        for p in std::mem::take(&mut self.batch) {
            self.land(p);
        }
    }

    fn land_expired(&mut self) {
        if let Some(deadline) = self.batch_deadline {
            if Instant::now() >= deadline {
                self.land_batch();
            }
        }
    }
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

/// The in-memory log. Cloning gives another handle onto the same records.
#[derive(Clone)]
pub struct MemoryLog {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for MemoryLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("MemoryLog")
            .field("partitions", &state.partitions.len())
            .field(
                "records",
                &state.partitions.iter().map(|p| p.len()).sum::<usize>(),
            )
            .finish()
    }
}

impl MemoryLog {
    /// An empty log with `partitions` partitions (at least one).
    pub fn new(partitions: u32) -> Self {
        let partitions = partitions.max(1);
        let state = State {
            partitions: vec![Records::default(); partitions as usize],
            ..State::default()
        };
        MemoryLog {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                wake: Condvar::new(),
            }),
        }
    }

    /// An empty log whose sends wait in a batch until a flush or until `linger`
    /// has passed since the batch's first send.
    pub fn with_linger(partitions: u32, linger: Duration) -> Self {
        let log = Self::new(partitions);
        log.lock().linger = Some(linger);
        log
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep using it.
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// An independent copy: the same records, queued faults, linger setting and
    /// unresolved sends, sharing nothing with this log afterwards. Acknowledgement
    /// handles of earlier sends keep referring to this log.
    #[cfg(any(test, feature = "testkit"))]
    pub fn fork(&self) -> Self {
        let state = {
            let s = self.lock();
            State {
                partitions: s.partitions.clone(),
                // Every acknowledgement handle polls the log that made it: the fork's
                // copy of this bookkeeping could never be read.
                acks: HashMap::new(),
                next_ack: s.next_ack,
                faults: s.faults.clone(),
                flush_faults: s.flush_faults.clone(),
                linger: s.linger,
                batch: s.batch.clone(),
                batch_deadline: s.batch_deadline,
                sends: s.sends,
                waiters: 0,
            }
        };
        MemoryLog {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                wake: Condvar::new(),
            }),
        }
    }

    /// Apply `fault` to the next send that has no fault queued yet.
    #[cfg(any(test, feature = "testkit"))]
    pub fn inject_send_fault(&self, fault: SendFault) {
        self.lock().faults.push_back(Some(fault));
    }

    /// Apply `fault` to the send after the next `skipped` sends that have no fault
    /// queued yet, leaving those alone: a fault at the last put of a run of several.
    #[cfg(any(test, feature = "testkit"))]
    pub fn inject_send_fault_after(&self, skipped: usize, fault: SendFault) {
        let mut state = self.lock();
        state.faults.extend(std::iter::repeat_n(None, skipped));
        state.faults.push_back(Some(fault));
    }

    /// Make the next flush fail with `message`; the sends it covers fail too.
    #[cfg(any(test, feature = "testkit"))]
    pub fn inject_flush_failure(&self, message: impl Into<String>) {
        self.lock().flush_faults.push_back(message.into());
    }

    /// Faults queued and not yet consumed by a send, next first.
    #[cfg(any(test, feature = "testkit"))]
    pub fn queued_faults(&self) -> Vec<SendFault> {
        self.lock().faults.iter().flatten().copied().collect()
    }

    /// Every landed record of `partition`, in offset order (empty for an unknown
    /// partition).
    pub fn records(&self, partition: Partition) -> Vec<LogRecord> {
        let mut state = self.lock();
        state.land_expired();
        state
            .partitions
            .get(partition as usize)
            .map(|p| read_all(partition as usize, p))
            .unwrap_or_default()
    }

    /// Every landed record, indexed by partition.
    pub fn all_records(&self) -> Vec<Vec<LogRecord>> {
        let mut state = self.lock();
        state.land_expired();
        state
            .partitions
            .iter()
            .enumerate()
            .map(|(partition, p)| read_all(partition, p))
            .collect()
    }

    /// Number of sends ever started on this log.
    pub fn send_count(&self) -> u64 {
        self.lock().sends
    }
}

/// Acknowledgement of a [`MemoryLog`] send.
pub struct MemoryAck {
    shared: Arc<Shared>,
    id: u64,
    /// Outcome known when the send returned (no linger, no hang): no shared
    /// bookkeeping is needed then.
    resolved: Option<AckPoll>,
}

impl MemoryAck {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for MemoryAck {
    fn drop(&mut self) {
        if self.resolved.is_none() {
            self.lock().acks.remove(&self.id);
        }
    }
}

impl PendingAck for MemoryAck {
    fn poll(&mut self) -> AckPoll {
        if let Some(outcome) = &self.resolved {
            return outcome.clone();
        }
        let mut state = self.lock();
        state.land_expired();
        state
            .acks
            .get(&self.id)
            .cloned()
            .unwrap_or(AckPoll::Pending)
    }

    fn wait(&mut self, cancel: &Cancellation) -> Result<Offset, AckError> {
        match &self.resolved {
            Some(AckPoll::Acked(offset)) => return Ok(*offset),
            Some(AckPoll::Failed(err)) => return Err(AckError::Log(err.clone())),
            _ => {}
        }
        let shared = Arc::clone(&self.shared);
        let mut state = shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        loop {
            state.land_expired();
            match state.acks.get(&self.id) {
                Some(AckPoll::Acked(offset)) => return Ok(*offset),
                Some(AckPoll::Failed(err)) => return Err(AckError::Log(err.clone())),
                _ => {}
            }
            if cancel.is_cancelled() {
                return Err(AckError::Cancelled);
            }
            // Wake at the linger deadline, or poll the cancellation signal.
            let timeout = state
                .batch_deadline
                .map(|d| d.saturating_duration_since(Instant::now()))
                .unwrap_or(Duration::from_millis(1))
                .min(Duration::from_millis(1));
            state.waiters += 1;
            state = shared
                .wake
                .wait_timeout(state, timeout)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
            state.waiters -= 1;
        }
    }
}

impl Log for MemoryLog {
    type Ack = MemoryAck;

    fn partition_count(&self) -> u32 {
        self.lock().partitions.len() as u32
    }

    fn send(
        &mut self,
        partition: Partition,
        key: &[u8],
        value: &[u8],
    ) -> Result<MemoryAck, LogError> {
        let mut state = self.lock();
        let partitions = state.partitions.len() as u32;
        if partition >= partitions {
            return Err(LogError::UnknownPartition {
                partition,
                partitions,
            });
        }
        state.land_expired();
        let id = state.next_ack;
        state.next_ack += 1;
        state.sends += 1;
        let fault = state.faults.pop_front().flatten();
        let pending = Pending {
            id,
            partition,
            record: Stored::new(key, value),
            fault,
        };
        let resolved = match state.linger {
            None => match state.land(pending) {
                AckPoll::Pending => {
                    state.acks.insert(id, AckPoll::Pending);
                    None
                }
                outcome => Some(outcome),
            },
            Some(linger) => {
                state.acks.insert(id, AckPoll::Pending);
                if state.batch.is_empty() {
                    state.batch_deadline = Some(Instant::now() + linger);
                }
                state.batch.push(pending);
                None
            }
        };
        let wake = state.waiters > 0;
        drop(state);
        if wake {
            self.shared.wake.notify_all();
        }
        Ok(MemoryAck {
            shared: Arc::clone(&self.shared),
            id,
            resolved,
        })
    }

    fn flush(&mut self) -> Result<(), LogError> {
        let mut state = self.lock();
        if let Some(message) = state.flush_faults.pop_front() {
            for mut p in std::mem::take(&mut state.batch) {
                p.fault = Some(SendFault::FailBeforeLanding);
                state.land(p);
            }
            state.batch_deadline = None;
            drop(state);
            self.shared.wake.notify_all();
            return Err(LogError::FlushFailed(message));
        }
        state.land_batch();
        let wake = state.waiters > 0;
        drop(state);
        if wake {
            self.shared.wake.notify_all();
        }
        Ok(())
    }

    fn read(
        &mut self,
        partition: Partition,
        from: Offset,
        max_records: usize,
    ) -> Result<Vec<LogRecord>, LogError> {
        let mut state = self.lock();
        state.land_expired();
        let partitions = state.partitions.len() as u32;
        let part = state
            .partitions
            .get(partition as usize)
            .ok_or(LogError::UnknownPartition {
                partition,
                partitions,
            })?;
        let end = part.len() as Offset;
        if from > end {
            return Err(LogError::OffsetOutOfRange {
                partition,
                offset: from,
                end,
            });
        }
        Ok(part
            .iter()
            .enumerate()
            .skip(from as usize)
            .take(max_records)
            .map(|(offset, r)| r.read(partition, offset as Offset))
            .collect())
    }

    fn end_offsets(&mut self) -> Result<Vec<Offset>, LogError> {
        let mut state = self.lock();
        state.land_expired();
        Ok(state.partitions.iter().map(|p| p.len() as Offset).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(log: &mut MemoryLog, partition: Partition, key: &[u8], value: &[u8]) -> Offset {
        let mut ack = log.send(partition, key, value).expect("known partition");
        log.flush().expect("no flush fault");
        ack.wait(&Cancellation::new()).expect("acknowledged")
    }

    /// Key and value come back byte for byte, split where they were sent (an empty
    /// key or value included), at consecutive offsets per partition, through every
    /// way of reading.
    #[test]
    fn records_read_back_as_sent() {
        let mut log = MemoryLog::new(2);
        let sent: [(Partition, &[u8], &[u8]); 4] = [
            (0, b"key-a", b"value-a"),
            (1, b"", b"only a value"),
            (0, b"only a key", b""),
            (0, b"", b""),
        ];
        for (partition, key, value) in sent {
            send(&mut log, partition, key, value);
        }
        let want = |partition: Partition| -> Vec<LogRecord> {
            sent.iter()
                .filter(|(p, _, _)| *p == partition)
                .enumerate()
                .map(|(offset, (_, key, value))| LogRecord {
                    partition,
                    offset: offset as Offset,
                    key: key.to_vec(),
                    value: value.to_vec(),
                })
                .collect()
        };
        assert_eq!(log.records(0), want(0));
        assert_eq!(log.all_records(), vec![want(0), want(1)]);
        assert_eq!(log.read(0, 1, 5).unwrap(), want(0)[1..].to_vec());
        assert_eq!(log.read(0, 3, 5).unwrap(), Vec::new());
        assert_eq!(log.end_offsets().unwrap(), vec![3, 1]);
        assert!(matches!(
            log.read(1, 2, 1),
            Err(LogError::OffsetOutOfRange {
                offset: 2,
                end: 1,
                ..
            })
        ));
    }

    /// A fork starts with the records landed so far; sends on either side afterwards
    /// stay on that side.
    #[test]
    fn a_fork_shares_landed_records_and_nothing_after() {
        let mut log = MemoryLog::new(1);
        send(&mut log, 0, b"k", b"first");
        let mut fork = log.fork();
        assert_eq!(send(&mut log, 0, b"k", b"original"), 1);
        assert_eq!(send(&mut fork, 0, b"k", b"forked"), 1);
        let values = |log: &MemoryLog| -> Vec<Vec<u8>> {
            log.records(0).into_iter().map(|r| r.value).collect()
        };
        assert_eq!(values(&log), [b"first".to_vec(), b"original".to_vec()]);
        assert_eq!(values(&fork), [b"first".to_vec(), b"forked".to_vec()]);
    }

    /// A send still lingering in a batch is copied into a fork and lands there at the
    /// fork's flush; its acknowledgement handle answers for the log that made it.
    #[test]
    fn a_lingering_send_lands_in_a_fork_and_acknowledges_in_its_own_log() {
        let mut log = MemoryLog::with_linger(1, Duration::from_secs(3600));
        let mut ack = log.send(0, b"k", b"lingering").unwrap();
        let mut fork = log.fork();
        fork.flush().unwrap();
        assert_eq!(fork.records(0).len(), 1);
        assert_eq!(log.records(0).len(), 0);
        assert_eq!(ack.poll(), AckPoll::Pending);
        log.flush().unwrap();
        assert_eq!(ack.poll(), AckPoll::Acked(0));
        assert_eq!(log.records(0).len(), 1);
    }

    /// Cancels `cancel` after `after`, so that a wait that never ends fails its test
    /// instead of hanging it.
    fn watchdog(cancel: &Cancellation, after: Duration) {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            cancel.cancel();
        });
    }

    /// A wait on a send still lingering ends when the batch lands at its deadline, with
    /// the offset, or with the send's failure.
    #[test]
    fn a_wait_ends_when_a_lingering_send_lands_at_its_deadline() {
        let mut log = MemoryLog::with_linger(1, Duration::from_millis(5));
        let cancel = Cancellation::new();
        watchdog(&cancel, Duration::from_secs(30));
        let mut first = log.send(0, b"k", b"lands").unwrap();
        assert_eq!(first.wait(&cancel), Ok(0));
        log.inject_send_fault(SendFault::FailBeforeLanding);
        let mut second = log.send(0, b"k", b"fails").unwrap();
        assert!(matches!(
            second.wait(&cancel),
            Err(AckError::Log(LogError::SendFailed(_)))
        ));
        assert_eq!(log.records(0).len(), 1);
    }

    /// Every send counts, failed ones too, and two sends pending at once are told apart:
    /// dropping one handle leaves the other to its own outcome.
    #[test]
    fn sends_are_counted_and_pending_acknowledgements_kept_apart() {
        let mut log = MemoryLog::with_linger(1, Duration::from_secs(3600));
        let first = log.send(0, b"k", b"one").unwrap();
        let mut second = log.send(0, b"k", b"two").unwrap();
        log.inject_send_fault(SendFault::FailBeforeLanding);
        let mut third = log.send(0, b"k", b"three").unwrap();
        assert_eq!(log.send_count(), 3);
        drop(first);
        log.flush().unwrap();
        assert_eq!(second.poll(), AckPoll::Acked(1));
        assert!(matches!(
            third.poll(),
            AckPoll::Failed(LogError::SendFailed(_))
        ));
        assert_eq!(log.send_count(), 3);
    }

    /// A fault queued after skipped sends hits the send after them, and only that one;
    /// the skipped sends are not faults.
    #[test]
    fn a_fault_after_skipped_sends_hits_the_send_after_them() {
        let mut log = MemoryLog::new(1);
        log.inject_send_fault_after(2, SendFault::FailBeforeLanding);
        assert_eq!(log.queued_faults(), [SendFault::FailBeforeLanding]);
        assert_eq!(send(&mut log, 0, b"k", b"one"), 0);
        assert_eq!(send(&mut log, 0, b"k", b"two"), 1);
        let mut third = log.send(0, b"k", b"three").unwrap();
        assert!(matches!(
            third.wait(&Cancellation::new()),
            Err(AckError::Log(LogError::SendFailed(_)))
        ));
        assert!(log.queued_faults().is_empty());
        assert_eq!(send(&mut log, 0, b"k", b"four"), 2);
    }

    /// The `Debug` text names the partitions and the records landed, not their bytes.
    #[test]
    fn debug_text_counts_partitions_and_records() {
        let mut log = MemoryLog::new(3);
        send(&mut log, 1, b"k", b"v");
        send(&mut log, 2, b"k", b"v");
        assert_eq!(
            format!("{log:?}"),
            "MemoryLog { partitions: 3, records: 2 }"
        );
    }
}
