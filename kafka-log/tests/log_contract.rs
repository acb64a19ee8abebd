//! The `Log` contract on a real Kafka-protocol broker (tansu, started by the test):
//! records of a partition land in send order at consecutive offsets, every handle reads
//! them back from any offset, end offsets count them, and every failure (a partition or
//! offset out of range, a missing topic, an unreachable or dead broker) is a one-line
//! `LogError`, never a panic or a hang.

mod broker;

use std::sync::mpsc;
use std::time::Duration;

use broker::Broker;
use steadfast::durable::{AckError, Cancellation, Log, LogError, PendingAck};
use steadfast_kafka::{KafkaLog, KafkaLogOptions};

/// A hang guard for waits that end by themselves long before it.
const GUARD: Duration = Duration::from_secs(180);

fn assert_one_line(err: &LogError) {
    let text = err.to_string();
    assert!(!text.contains('\n'), "error spans lines: {text:?}");
}

#[test]
fn records_land_in_send_order_and_read_back_from_any_offset() {
    let broker = Broker::start();
    broker.create_topic("order", 3);
    let mut log = broker.open("order");
    assert_eq!(log.partition_count(), 3);
    assert_eq!(log.end_offsets().unwrap(), vec![0, 0, 0]);

    // Thirty sends before one flush, round robin over the partitions: a group commit.
    let mut acks = Vec::new();
    for i in 0..30u32 {
        let p = i % 3;
        let ack = log
            .send(p, format!("k{i}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
        acks.push((p, i, ack));
    }
    log.flush().unwrap();
    let cancel = Cancellation::new();
    for (p, i, ack) in &mut acks {
        let offset = ack.wait(&cancel).unwrap();
        assert_eq!(offset, u64::from(*i / 3), "partition {p} send {i}");
        // An answered acknowledgement keeps its answer.
        assert_eq!(
            ack.poll(),
            steadfast::durable::AckPoll::Acked(u64::from(*i / 3))
        );
    }
    assert_eq!(log.end_offsets().unwrap(), vec![10, 10, 10]);

    // Another handle, as a restored job opens one, reads the same records.
    let mut other = broker.open("order");
    for reader in [&mut log, &mut other] {
        let all = reader.read(1, 0, 100).unwrap();
        assert_eq!(all.len(), 10);
        for (n, r) in all.iter().enumerate() {
            let i = 3 * n + 1;
            assert_eq!((r.partition, r.offset), (1, n as u64));
            assert_eq!(r.key, format!("k{i}").into_bytes());
            assert_eq!(r.value, format!("v{i}").into_bytes());
        }
        // From the middle, in batches, as a restore reads from its marker.
        let first = reader.read(2, 4, 3).unwrap();
        let next = reader.read(2, 7, 3).unwrap();
        let offsets: Vec<u64> = first.iter().chain(&next).map(|r| r.offset).collect();
        assert_eq!(offsets, vec![4, 5, 6, 7, 8, 9]);
        assert_eq!(next[2].value, b"v29");
        // At the end: nothing; past it: an error.
        assert!(reader.read(0, 10, 5).unwrap().is_empty());
        assert!(reader.read(0, 3, 0).unwrap().is_empty());
        let err = reader.read(0, 11, 5).unwrap_err();
        assert_eq!(
            err,
            LogError::OffsetOutOfRange {
                partition: 0,
                offset: 11,
                end: 10
            }
        );
    }

    // A record sent after a read is seen by the next read at the old end.
    let mut ack = log.send(0, b"late", b"late").unwrap();
    log.flush().unwrap();
    assert_eq!(ack.wait(&cancel).unwrap(), 10);
    let late = other.read(0, 10, 5).unwrap();
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].key, b"late");
    assert_eq!(other.end_offsets().unwrap(), vec![11, 10, 10]);
}

#[test]
fn partitions_out_of_range_and_missing_topics_are_one_line_errors() {
    let broker = Broker::start();
    broker.create_topic("small", 2);
    let mut log = broker.open("small");
    let err = log.send(2, b"k", b"v").unwrap_err();
    assert_eq!(
        err,
        LogError::UnknownPartition {
            partition: 2,
            partitions: 2
        }
    );
    assert!(matches!(
        log.read(7, 0, 1),
        Err(LogError::UnknownPartition { partition: 7, .. })
    ));

    let err = KafkaLog::open(broker.options("no-such-topic")).unwrap_err();
    assert_one_line(&err);
    assert!(
        matches!(&err, LogError::Metadata(m) if m.contains("no-such-topic") && m.contains("does not exist")),
        "{err}"
    );
    // Opening did not create it.
    assert!(KafkaLog::open(broker.options("no-such-topic")).is_err());

    // Creating a topic that exists leaves it as it is.
    broker.create_topic("small", 5);
    assert_eq!(broker.open("small").partition_count(), 2);
}

#[test]
fn an_unreachable_broker_is_a_one_line_error() {
    // A port nobody listens on: bound by us, then released.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let mut options = KafkaLogOptions::new(addr.to_string(), "t");
    options.request_timeout = Duration::from_secs(2);
    let err = KafkaLog::open(options).unwrap_err();
    assert_one_line(&err);
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
    println!("unreachable broker: {err}");
}

/// A broker that dies under the producer: the send's acknowledgement fails once the
/// delivery timeout passes (the record did not land), reads and end offsets fail, and
/// each error is one line.
#[test]
fn sends_to_a_dead_broker_fail_their_acknowledgement() {
    let mut broker = Broker::start();
    broker.create_topic("doomed", 1);
    let mut options = broker.options("doomed");
    options.request_timeout = Duration::from_secs(2);
    options.delivery_timeout = Duration::from_secs(3);
    let mut log = KafkaLog::open(options).unwrap();
    let mut ack = log.send(0, b"k", b"before").unwrap();
    log.flush().unwrap();
    assert_eq!(ack.wait(&Cancellation::new()).unwrap(), 0);

    broker.kill();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut ack = log.send(0, b"k", b"after").unwrap();
        let flush = log.flush();
        let waited = ack.wait(&Cancellation::new());
        let ends = log.end_offsets();
        let _ = tx.send((flush, waited, ends));
    });
    let (flush, waited, ends) = rx
        .recv_timeout(GUARD)
        .expect("a send to a dead broker neither failed nor was acknowledged within 180 s");
    match waited {
        Err(AckError::Log(err @ LogError::SendFailed(_))) => {
            assert_one_line(&err);
            println!("send to a dead broker: {err}");
        }
        other => panic!("expected a failed send, got {other:?}"),
    }
    if let Err(err) = flush {
        assert_one_line(&err);
    }
    let err = ends.expect_err("end offsets from a dead broker");
    assert_one_line(&err);
}

/// A wait observes its cancellation signal and leaves it set.
#[test]
fn a_cancelled_wait_ends_and_the_signal_stays_set() {
    let broker = Broker::start();
    broker.create_topic("cancel", 1);
    let mut options = broker.options("cancel");
    // Long enough that the record is still queued when the wait starts.
    options.linger = Duration::from_secs(5);
    let mut log = KafkaLog::open(options).unwrap();
    let mut ack = log.send(0, b"k", b"v").unwrap();
    let cancel = Cancellation::new();
    cancel.cancel();
    assert_eq!(ack.wait(&cancel), Err(AckError::Cancelled));
    assert!(cancel.is_cancelled());
    // The send itself still completes.
    log.flush().unwrap();
    assert_eq!(ack.wait(&Cancellation::new()), Ok(0));
}
