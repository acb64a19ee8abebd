//! Group commit: the one routine that makes a batch of puts durable on a [`Log`]. Every
//! record is sent, one flush covers them all, and each acknowledgement is then awaited,
//! in send order. The blocking [`crate::Driver`] runs it for the puts one operator step
//! asks for, and the simulation (`steadfast-sim`) for the puts its flusher collected.
//!
//! What a put's answer is follows Kafka's producer: a send refused at once fails that
//! put alone; a failed flush fails every put it covered (their records may still have
//! landed); otherwise each put gets its acknowledgement's answer.

use steadfast::durable::{LogError, Offset, PutRecord};

use crate::log::{AckError, Log};

/// A wait for an acknowledgement was cancelled: the task is being stopped, and the
/// puts not yet answered stay in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled;

/// What a group commit did: each put's tag and record with its answer (the offset the
/// record landed at, or why the put failed), in the order the puts were given, and
/// whether a flush was made (none when no send started).
#[derive(Debug)]
pub struct GroupCommit<T> {
    /// Each put's tag, record and answer.
    pub answers: Vec<(T, PutRecord, Result<Offset, LogError>)>,
    /// Whether the log was flushed.
    pub flushed: bool,
}

/// Send every record of `puts`, flush once if any send started, and wait for each
/// acknowledgement with `wait`.
pub fn group_commit<L: Log, T>(
    log: &mut L,
    puts: Vec<(T, PutRecord)>,
    mut wait: impl FnMut(&mut L::Ack) -> Result<Offset, AckError>,
) -> Result<GroupCommit<T>, Cancelled> {
    let mut sent = Vec::with_capacity(puts.len());
    for (tag, record) in puts {
        let ack = log.send(record.partition, &record.key, &record.value);
        sent.push((tag, record, ack));
    }
    let any_sent = sent.iter().any(|(_, _, ack)| ack.is_ok());
    let flushed = if any_sent { log.flush() } else { Ok(()) };
    let mut answers = Vec::with_capacity(sent.len());
    for (tag, record, ack) in sent {
        let answer = match (ack, &flushed) {
            (Err(refused), _) => Err(refused),
            (Ok(_), Err(flush_failed)) => Err(flush_failed.clone()),
            (Ok(mut ack), Ok(())) => match wait(&mut ack) {
                Ok(offset) => Ok(offset),
                Err(AckError::Log(error)) => Err(error),
                Err(AckError::Cancelled) => return Err(Cancelled),
            },
        };
        answers.push((tag, record, answer));
    }
    Ok(GroupCommit {
        answers,
        flushed: any_sent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Cancellation, PendingAck};
    use crate::memory::{MemoryAck, MemoryLog, SendFault};
    use steadfast::durable::{LogRecord, Partition};

    /// The in-memory log, counting its flushes.
    struct Counting(MemoryLog, u32);

    impl Log for Counting {
        type Ack = MemoryAck;
        fn partition_count(&self) -> u32 {
            self.0.partition_count()
        }
        fn send(&mut self, p: Partition, key: &[u8], value: &[u8]) -> Result<MemoryAck, LogError> {
            self.0.send(p, key, value)
        }
        fn flush(&mut self) -> Result<(), LogError> {
            self.1 += 1;
            self.0.flush()
        }
        fn read(
            &mut self,
            p: Partition,
            from: Offset,
            max: usize,
        ) -> Result<Vec<LogRecord>, LogError> {
            self.0.read(p, from, max)
        }
        fn end_offsets(&mut self) -> Result<Vec<Offset>, LogError> {
            self.0.end_offsets()
        }
    }

    fn put(partition: Partition, value: &str) -> PutRecord {
        PutRecord {
            partition,
            key: b"k".to_vec(),
            value: value.as_bytes().to_vec(),
        }
    }

    fn wait(ack: &mut MemoryAck) -> Result<Offset, AckError> {
        ack.wait(&Cancellation::new())
    }

    fn answers<T>(got: GroupCommit<T>) -> Vec<(T, Result<Offset, LogError>)> {
        got.answers.into_iter().map(|(t, _, a)| (t, a)).collect()
    }

    #[test]
    fn one_flush_covers_every_put_and_answers_keep_their_order() {
        let mut log = Counting(MemoryLog::new(2), 0);
        let puts = vec![(0, put(0, "a")), (1, put(1, "b")), (2, put(0, "c"))];
        let got = answers(group_commit(&mut log, puts, wait).unwrap());
        assert_eq!(got, vec![(0, Ok(0)), (1, Ok(0)), (2, Ok(1))]);
        assert_eq!(log.1, 1);
        assert_eq!(log.0.records(0)[1].value, b"c");
        // A second commit flushes again.
        let more = group_commit(&mut log, vec![(3, put(1, "d"))], wait).unwrap();
        assert!(more.flushed);
        assert_eq!(answers(more), vec![(3, Ok(1))]);
        assert_eq!(log.1, 2);
    }

    #[test]
    fn a_failed_flush_fails_every_put_it_covered() {
        let mut log = Counting(MemoryLog::new(1), 0);
        log.0.inject_flush_failure("disk full");
        let got = answers(
            group_commit(&mut log, vec![(0, put(0, "a")), (1, put(0, "b"))], wait).unwrap(),
        );
        let failed = Err(LogError::FlushFailed("disk full".into()));
        assert_eq!(got, vec![(0, failed.clone()), (1, failed)]);
    }

    #[test]
    fn a_refused_send_or_failed_acknowledgement_fails_its_put_alone() {
        let mut log = Counting(MemoryLog::new(1), 0);
        log.0
            .inject_send_fault_after(1, SendFault::FailBeforeLanding);
        let puts = vec![
            (0, put(7, "refused")),
            (1, put(0, "a")),
            (2, put(0, "lost")),
            (3, put(0, "b")),
        ];
        let got = answers(group_commit(&mut log, puts, wait).unwrap());
        assert!(
            matches!(
                got[0].1,
                Err(LogError::UnknownPartition { partition: 7, .. })
            ),
            "{got:?}"
        );
        assert_eq!(got[1].1, Ok(0));
        assert!(matches!(got[2].1, Err(LogError::SendFailed(_))), "{got:?}");
        assert_eq!(got[3].1, Ok(1));
        assert_eq!(log.1, 1);
    }

    #[test]
    fn a_cancelled_wait_stops_the_commit() {
        let mut log = Counting(MemoryLog::new(1), 0);
        let got = group_commit(&mut log, vec![((), put(0, "a"))], |_| {
            Err(AckError::Cancelled)
        });
        assert_eq!(got.unwrap_err(), Cancelled);
    }

    #[test]
    fn nothing_sent_nothing_flushed() {
        let mut log = Counting(MemoryLog::new(1), 0);
        let none = group_commit::<_, ()>(&mut log, Vec::new(), wait).unwrap();
        assert!(none.answers.is_empty() && !none.flushed);
        let refused = group_commit(&mut log, vec![((), put(3, "a"))], wait).unwrap();
        assert!(refused.answers[0].2.is_err() && !refused.flushed);
        assert_eq!(log.1, 0);
    }
}
