//! The `Log` contract on a real Kafka-protocol broker (tansu, started by the test): the
//! contract suite every log runs (`steadfast_log::testing`), and what only a broker can
//! do wrong: a missing topic, an unreachable or dead broker, each a one-line `LogError`,
//! never a panic or a hang.

mod broker;

use std::sync::mpsc;
use std::time::Duration;

use broker::Broker;
use steadfast::durable::LogError;
use steadfast_kafka::{KafkaLog, KafkaLogOptions};
use steadfast_log::testing::{run_all, LogFactory};
use steadfast_log::{AckError, Cancellation, Log, PendingAck};

/// A hang guard for waits that end by themselves long before it.
const GUARD: Duration = Duration::from_secs(180);

fn assert_one_line(err: &LogError) {
    let text = err.to_string();
    assert!(!text.contains('\n'), "error spans lines: {text:?}");
}

/// Topics on one broker; a reopened log is another producer and consumer on the topic.
struct Topics(Broker);

impl LogFactory for Topics {
    type Log = KafkaLog;
    fn create(&mut self, name: &str, partitions: u32) -> KafkaLog {
        self.0.create_topic(name, partitions);
        self.0.open(name)
    }
    fn reopen(&mut self, name: &str) -> KafkaLog {
        self.0.open(name)
    }
}

#[test]
fn the_kafka_log_keeps_the_log_contract() {
    run_all(&mut Topics(Broker::start()));
}

#[test]
fn missing_topics_are_one_line_errors_and_topics_keep_their_partitions() {
    let broker = Broker::start();
    let err = KafkaLog::open(broker.options("no-such-topic")).unwrap_err();
    assert_one_line(&err);
    assert!(
        matches!(&err, LogError::Metadata(m) if m.contains("no-such-topic") && m.contains("does not exist")),
        "{err}"
    );
    // Opening did not create it.
    assert!(KafkaLog::open(broker.options("no-such-topic")).is_err());

    // Creating a topic that exists leaves it as it is.
    broker.create_topic("small", 2);
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
