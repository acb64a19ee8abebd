//! The `Log` contract suite: what every log behind the action state store must do,
//! written once and run by each implementation's tests (the in-memory and file logs in
//! this crate, the Kafka log against a real broker in `steadfast-kafka`).
//!
//! An implementation hands the suite a [`LogFactory`] that makes empty logs and opens
//! them again; [`run_all`] then checks, on fresh logs:
//! - records of a partition land in send order at consecutive offsets, one flush covering
//!   many sends (a group commit), and an answered acknowledgement keeps its answer;
//! - records read back from any offset, in batches, from this handle and from a handle
//!   opened again (as a restored job opens one); end offsets count them; a read at the
//!   end is empty and past it an error naming the partition's end;
//! - a partition out of range is refused at the send and at the read;
//! - a wait whose cancellation signal is set returns at once and leaves the signal set,
//!   and the send itself still completes.
//!
//! Every error the suite provokes must be a single line. Failures name the check.

use steadfast::durable::{LogError, Offset};

use crate::log::{AckError, AckPoll, Cancellation, Log, PendingAck};

/// Makes the logs the suite runs on.
pub trait LogFactory {
    /// The log under test.
    type Log: Log;
    /// A new, empty log called `name` (unique within one suite run) with `partitions`
    /// partitions.
    fn create(&mut self, name: &str, partitions: u32) -> Self::Log;
    /// Open log `name` again. The suite has dropped every earlier handle on it first, so
    /// a log that admits one handle at a time (the file log locks its directory) can
    /// open it.
    fn reopen(&mut self, name: &str) -> Self::Log;
}

/// Run every check of the contract.
pub fn run_all<F: LogFactory>(factory: &mut F) {
    send_order_and_read_back(factory);
    unknown_partitions_are_refused(factory);
    cancelled_wait_returns_and_keeps_the_signal(factory);
}

fn assert_one_line(check: &str, err: &LogError) {
    let text = err.to_string();
    assert!(!text.contains('\n'), "{check}: error spans lines: {text:?}");
}

/// Records land in send order at consecutive offsets and read back from any offset.
pub fn send_order_and_read_back<F: LogFactory>(factory: &mut F) {
    const CHECK: &str = "send order and read back";
    let mut log = factory.create("order", 3);
    assert_eq!(log.partition_count(), 3, "{CHECK}: partition count");
    assert_eq!(log.end_offsets().unwrap(), vec![0, 0, 0], "{CHECK}: empty");

    // Thirty sends before one flush, round robin over the partitions: a group commit.
    let mut acks = Vec::new();
    for i in 0..30u32 {
        let p = i % 3;
        let ack = log.send(p, format!("k{i}").as_bytes(), format!("v{i}").as_bytes());
        acks.push((i, ack.unwrap_or_else(|e| panic!("{CHECK}: send {i}: {e}"))));
    }
    log.flush()
        .unwrap_or_else(|e| panic!("{CHECK}: flush: {e}"));
    let cancel = Cancellation::new();
    for (i, ack) in &mut acks {
        let expected = Offset::from(*i / 3);
        assert_eq!(ack.wait(&cancel), Ok(expected), "{CHECK}: send {i}");
        assert_eq!(ack.poll(), AckPoll::Acked(expected), "{CHECK}: answer kept");
    }
    assert_eq!(
        log.end_offsets().unwrap(),
        vec![10, 10, 10],
        "{CHECK}: ends"
    );
    read_back(CHECK, &mut log);

    // A record sent after a read is seen by the next read at the old end.
    let mut ack = log.send(0, b"late", b"late").unwrap();
    log.flush().unwrap();
    assert_eq!(ack.wait(&cancel), Ok(10), "{CHECK}: late send");
    drop(acks);
    drop(ack);
    drop(log);

    // Another handle, as a restored job opens one, reads the same records.
    let mut again = factory.reopen("order");
    assert_eq!(again.partition_count(), 3, "{CHECK}: reopened count");
    assert_eq!(
        again.end_offsets().unwrap(),
        vec![11, 10, 10],
        "{CHECK}: reopened ends"
    );
    read_back(CHECK, &mut again);
    let late = again.read(0, 10, 5).unwrap();
    assert_eq!(late.len(), 1, "{CHECK}: late record after reopening");
    assert_eq!((late[0].offset, &late[0].key[..]), (10, &b"late"[..]));
}

/// The reads of [`send_order_and_read_back`]: partition 1 whole, partition 2 from its
/// middle in batches, partition 0 at and past its end (10 records each at first).
fn read_back<L: Log>(check: &str, log: &mut L) {
    let all = log.read(1, 0, 100).unwrap();
    assert_eq!(all.len(), 10, "{check}: partition 1");
    for (n, r) in all.iter().enumerate() {
        let i = 3 * n + 1;
        assert_eq!((r.partition, r.offset), (1, n as Offset), "{check}: place");
        assert_eq!(r.key, format!("k{i}").into_bytes(), "{check}: key");
        assert_eq!(r.value, format!("v{i}").into_bytes(), "{check}: value");
    }
    // From the middle, in batches, as a restore reads from its marker.
    let first = log.read(2, 4, 3).unwrap();
    let next = log.read(2, 7, 3).unwrap();
    let offsets: Vec<Offset> = first.iter().chain(&next).map(|r| r.offset).collect();
    assert_eq!(offsets, vec![4, 5, 6, 7, 8, 9], "{check}: batches");
    assert_eq!(next[2].value, b"v29", "{check}: last value");
    assert!(log.read(0, 3, 0).unwrap().is_empty(), "{check}: max 0");
    let end = log.end_offsets().unwrap()[0];
    assert!(
        log.read(0, end, 5).unwrap().is_empty(),
        "{check}: at the end"
    );
    let err = log.read(0, end + 1, 5).unwrap_err();
    assert_one_line(check, &err);
    let past = LogError::OffsetOutOfRange {
        partition: 0,
        offset: end + 1,
        end,
    };
    assert_eq!(err, past, "{check}: past the end");
}

/// A partition out of range is refused at the send and at the read.
pub fn unknown_partitions_are_refused<F: LogFactory>(factory: &mut F) {
    const CHECK: &str = "unknown partitions";
    let mut log = factory.create("small", 2);
    let err = log.send(2, b"k", b"v").err();
    let refused = LogError::UnknownPartition {
        partition: 2,
        partitions: 2,
    };
    assert_eq!(err, Some(refused), "{CHECK}: send");
    let err = log.read(7, 0, 1).unwrap_err();
    assert_one_line(CHECK, &err);
    assert!(
        matches!(err, LogError::UnknownPartition { partition: 7, .. }),
        "{CHECK}: read: {err}"
    );
    assert_eq!(
        log.end_offsets().unwrap(),
        vec![0, 0],
        "{CHECK}: nothing landed"
    );
}

/// A wait whose signal is set returns at once (with the answer if there already is one)
/// and leaves the signal set; the send still completes.
pub fn cancelled_wait_returns_and_keeps_the_signal<F: LogFactory>(factory: &mut F) {
    const CHECK: &str = "cancelled wait";
    let mut log = factory.create("cancel", 1);
    let mut ack = log.send(0, b"k", b"v").unwrap();
    let cancel = Cancellation::new();
    cancel.cancel();
    let waited = ack.wait(&cancel);
    assert!(
        matches!(waited, Err(AckError::Cancelled) | Ok(0)),
        "{CHECK}: {waited:?}"
    );
    assert!(cancel.is_cancelled(), "{CHECK}: the signal was cleared");
    log.flush().unwrap();
    assert_eq!(ack.wait(&Cancellation::new()), Ok(0), "{CHECK}: completes");
    assert_eq!(log.end_offsets().unwrap(), vec![1], "{CHECK}: landed");
}
