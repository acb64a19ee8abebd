//! The durable action log on a Kafka-protocol broker: a [`Log`] over one topic,
//! through librdkafka (the `rdkafka` crate, with the librdkafka it bundles).
//!
//! This is the store flink-agents issue 1158 is about: action states saved as records
//! of a Kafka topic, one partition per key (the operator picks it), read back from the
//! checkpoint's marker on restore. The producer is idempotent with `acks=all`, so a
//! send the client retries lands once and an acknowledged record is on every in-sync
//! replica. The [`Log`] contract maps onto the client as follows:
//! - `send` hands the record to the producer's queue; its [`KafkaAck`] resolves in the
//!   delivery callback, with the offset the broker assigned or the delivery error;
//! - `flush` waits until every queued record is delivered or failed (librdkafka's
//!   flush sends at once, without waiting out `linger.ms`);
//! - `read` assigns a consumer to the partition at the offset asked for (no consumer
//!   group joined, nothing committed) and polls up to the partition's end;
//! - `end_offsets` are the high watermarks that fetch responses report: the consumer
//!   reads each partition from the end it knew to the end-of-partition event.
//!
//! End offsets do not come from a ListOffsets request: tansu 0.6.0 (the broker the
//! tests run) answers "latest" with the base offset of the newest record batch plus
//! one, which is short of the end whenever that batch holds several records (the
//! producer batches the puts of a group commit). Its fetch responses carry the right
//! high watermark, as Kafka's do, and reading to the end costs one fetch when the end
//! is already known. Every acknowledged send also raises the known end of its
//! partition, so a read below it needs no request for the end.
//!
//! Every failure is a [`LogError`] with a one-line message naming the broker or topic;
//! nothing here panics on a broker's answer.
//!
//! The blocking driver over a topic of an existing cluster:
//!
//! ```no_run
//! use std::time::Duration;
//! use serde_json::json;
//! use steadfast::durable::{ActionDef, CallChain, CallOutcome};
//! use steadfast_log::Driver;
//! use steadfast_kafka::{create_topic, KafkaLog, KafkaLogOptions};
//!
//! let brokers = "kafka-1:9092,kafka-2:9092";
//! create_topic(brokers, "action-state", 12, 3, Duration::from_secs(30))?;
//! let mut options = KafkaLogOptions::new(brokers, "action-state");
//! // Any librdkafka setting of both clients: TLS, SASL, client id...
//! options.client_config.push(("client.id".into(), "agents-7".into()));
//! let mut driver = Driver::new(
//!     vec![ActionDef::new("enrich", CallChain::new(["lookup"]))],
//!     Box::new(move || KafkaLog::open(options.clone())),
//!     Box::new(|_call, _function, _args| CallOutcome::Value(json!(70))),
//! )?;
//! driver.input("user-7", json!(10))?;
//! driver.run_until_idle_grouped()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, DefaultConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::topic_partition_list::{Offset as KafkaOffset, TopicPartitionList};
use rdkafka::ClientContext;
use steadfast::durable::{LogError, LogRecord, Offset, Partition};
use steadfast_log::{AckError, AckPoll, Cancellation, Log, PendingAck};

/// Where the log lives and how long the client waits.
#[derive(Clone, Debug)]
pub struct KafkaLogOptions {
    /// The brokers to bootstrap from, `host:port[,host:port...]`.
    pub bootstrap_servers: String,
    /// The topic holding the action states. It must exist (see [`create_topic`]).
    pub topic: String,
    /// Bound on one metadata, offset or read request, and on a flush.
    pub request_timeout: Duration,
    /// Bound on one record's delivery, retries included (`message.timeout.ms`): past
    /// it the send's acknowledgement fails instead of waiting for a broker that is
    /// gone.
    pub delivery_timeout: Duration,
    /// How long the producer holds a record to batch it with later ones
    /// (`linger.ms`); a flush sends at once regardless.
    pub linger: Duration,
    /// Further librdkafka settings for both clients (security, client id...), applied
    /// last: they may override the ones above but not idempotence or `acks`.
    pub client_config: Vec<(String, String)>,
}

impl KafkaLogOptions {
    /// Options for `topic` on the brokers `bootstrap_servers`, with the defaults: 10 s
    /// requests, 30 s deliveries, Kafka's 5 ms linger.
    pub fn new(bootstrap_servers: impl Into<String>, topic: impl Into<String>) -> Self {
        KafkaLogOptions {
            bootstrap_servers: bootstrap_servers.into(),
            topic: topic.into(),
            request_timeout: Duration::from_secs(10),
            delivery_timeout: Duration::from_secs(30),
            linger: Duration::from_millis(5),
            client_config: Vec::new(),
        }
    }

    fn base_config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.bootstrap_servers)
            .set(
                "socket.timeout.ms",
                millis(self.request_timeout).to_string(),
            );
        config
    }

    fn apply_extra(&self, config: &mut ClientConfig) {
        for (k, v) in &self.client_config {
            config.set(k, v);
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// The client's error text on one line: librdkafka's messages can embed newlines, and
/// every error of this crate is one line.
fn one_line(err: impl std::fmt::Display) -> String {
    err.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A failure talking to the broker, for requests that are neither sends nor flushes.
fn broker_error(options: &KafkaLogOptions, doing: &str, err: impl std::fmt::Display) -> LogError {
    LogError::Io {
        context: format!("{doing} on Kafka broker {}", options.bootstrap_servers),
        message: one_line(err),
    }
}

/// One send's outcome, set by the producer's delivery callback.
#[derive(Debug)]
struct AckSlot {
    state: Mutex<AckPoll>,
}

impl AckSlot {
    fn lock(&self) -> MutexGuard<'_, AckPoll> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn resolve(&self, outcome: AckPoll) {
        let mut state = self.lock();
        // The first answer stands; librdkafka reports each message once, but a purge at
        // shutdown must not turn an acknowledgement into a failure.
        if *state == AckPoll::Pending {
            *state = outcome;
        }
    }
}

/// Per partition, an end offset known to be reached: raised by acknowledgements (in the
/// producer's thread) and by reads. Ends only grow, so the highest value seen stands.
#[derive(Debug)]
struct KnownEnds(Vec<AtomicU64>);

impl KnownEnds {
    fn get(&self, partition: Partition) -> Offset {
        self.0[partition as usize].load(Ordering::Acquire)
    }

    fn raise(&self, partition: Partition, end: Offset) {
        if let Some(slot) = self.0.get(partition as usize) {
            slot.fetch_max(end, Ordering::AcqRel);
        }
    }
}

/// The producer's context: routes each delivery report to its send's slot.
struct AckContext {
    ends: Arc<KnownEnds>,
}

impl ClientContext for AckContext {}

impl ProducerContext for AckContext {
    type DeliveryOpaque = Arc<AckSlot>;

    fn delivery(&self, result: &DeliveryResult<'_>, slot: Arc<AckSlot>) {
        let outcome = match result {
            Ok(message) => match u64::try_from(message.offset()) {
                Ok(offset) => {
                    if let Ok(p) = Partition::try_from(message.partition()) {
                        self.ends.raise(p, offset + 1);
                    }
                    AckPoll::Acked(offset)
                }
                // Only with acks=0 does a delivery come without an offset.
                Err(_) => AckPoll::Failed(LogError::SendFailed(format!(
                    "broker acknowledged partition {} without an offset",
                    message.partition()
                ))),
            },
            Err((err, message)) => AckPoll::Failed(LogError::SendFailed(format!(
                "partition {}: {}",
                message.partition(),
                one_line(err)
            ))),
        };
        slot.resolve(outcome);
    }
}

/// The pending acknowledgement of one [`KafkaLog::send`]. It shares the producer, whose
/// delivery reports it serves while it waits: there is no polling thread to wait for.
pub struct KafkaAck {
    slot: Arc<AckSlot>,
    producer: Arc<BaseProducer<AckContext>>,
}

impl std::fmt::Debug for KafkaAck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaAck")
            .field("state", &*self.slot.lock())
            .finish()
    }
}

/// How long one poll for delivery reports lasts: rdkafka's producer poll returns at its
/// deadline, not at the first report, so this bounds the latency a poll adds to an
/// acknowledgement, and how late a wait sees its cancellation signal.
const SERVE_STEP: Duration = Duration::from_millis(1);

impl PendingAck for KafkaAck {
    fn poll(&mut self) -> AckPoll {
        // Serve the delivery reports that arrived, without blocking.
        self.producer.poll(Duration::ZERO);
        self.slot.lock().clone()
    }

    fn wait(&mut self, cancel: &Cancellation) -> Result<Offset, AckError> {
        loop {
            match &*self.slot.lock() {
                AckPoll::Acked(offset) => return Ok(*offset),
                AckPoll::Failed(err) => return Err(AckError::Log(err.clone())),
                AckPoll::Pending => {
                    if cancel.is_cancelled() {
                        return Err(AckError::Cancelled);
                    }
                }
            }
            // Serves the delivery reports arriving meanwhile (this one's or other
            // sends'). The delivery timeout bounds the wait: librdkafka fails a record
            // it could not deliver in time.
            self.producer.poll(SERVE_STEP);
        }
    }
}

/// The action log on one Kafka topic.
pub struct KafkaLog {
    options: KafkaLogOptions,
    producer: Arc<BaseProducer<AckContext>>,
    consumer: BaseConsumer,
    partitions: u32,
    ends: Arc<KnownEnds>,
    /// Where the consumer's next record comes from: the partitions it is assigned and,
    /// per partition, the offset of that record. `None` when unknown (after an error).
    position: Option<Vec<(Partition, Offset)>>,
}

impl std::fmt::Debug for KafkaLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaLog")
            .field("bootstrap_servers", &self.options.bootstrap_servers)
            .field("topic", &self.options.topic)
            .field("partitions", &self.partitions)
            .finish()
    }
}

impl KafkaLog {
    /// Connect to the brokers and open the topic: its partition count comes from the
    /// broker's metadata. An unreachable broker or a missing topic is an error.
    pub fn open(options: KafkaLogOptions) -> Result<KafkaLog, LogError> {
        let mut consumer_config = options.base_config();
        consumer_config
            // Reads assign partitions at explicit offsets: nothing is committed, and a
            // metadata request must not create the topic.
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("allow.auto.create.topics", "false")
            // librdkafka refuses an assignment without a group id, though no group is
            // joined and nothing is committed under it.
            .set("group.id", "steadfast-durable-log")
            // Reaching a partition's end is an event: that is how ends are learnt.
            .set("enable.partition.eof", "true")
            // An offset outside the partition is an error, never a silent jump.
            .set("auto.offset.reset", "error")
            // A fetch at the end answers at once rather than waiting for records.
            .set("fetch.wait.max.ms", "1");
        options.apply_extra(&mut consumer_config);
        let consumer: BaseConsumer = consumer_config
            .create_with_context(DefaultConsumerContext)
            .map_err(|e| broker_error(&options, "creating a consumer", e))?;

        let metadata = consumer
            .fetch_metadata(Some(&options.topic), options.request_timeout)
            .map_err(|e| broker_error(&options, "fetching metadata", e))?;
        let topic = metadata
            .topics()
            .iter()
            .find(|t| t.name() == options.topic)
            .ok_or_else(|| {
                LogError::Metadata(format!(
                    "Kafka broker {} returned no metadata for topic {}",
                    options.bootstrap_servers, options.topic
                ))
            })?;
        if let Some(err) = topic.error() {
            let code = RDKafkaErrorCode::from(err);
            return Err(LogError::Metadata(
                if code == RDKafkaErrorCode::UnknownTopicOrPartition {
                    format!(
                        "topic {} does not exist on Kafka broker {}",
                        options.topic, options.bootstrap_servers
                    )
                } else {
                    format!(
                        "topic {} on Kafka broker {}: {}",
                        options.topic,
                        options.bootstrap_servers,
                        one_line(code)
                    )
                },
            ));
        }
        let partitions = u32::try_from(topic.partitions().len()).unwrap_or(0);
        if partitions == 0 {
            return Err(LogError::Metadata(format!(
                "topic {} on Kafka broker {} has no partitions",
                options.topic, options.bootstrap_servers
            )));
        }
        let ends = Arc::new(KnownEnds(
            (0..partitions).map(|_| AtomicU64::new(0)).collect(),
        ));

        let mut producer_config = options.base_config();
        producer_config
            .set("linger.ms", millis(options.linger).to_string())
            .set(
                "message.timeout.ms",
                millis(options.delivery_timeout).to_string(),
            )
            .set(
                "request.timeout.ms",
                millis(options.request_timeout).to_string(),
            );
        options.apply_extra(&mut producer_config);
        // Set last so that no extra setting weakens them: a retried send must land
        // once (idempotence), and an acknowledged one on every in-sync replica.
        producer_config
            .set("enable.idempotence", "true")
            .set("acks", "all");
        // A producer without a polling thread: its delivery reports are served by the
        // flush and by waits on acknowledgements, in steps of `SERVE_STEP`. (rdkafka's
        // threaded producer, and its flush, poll in steps of 100 ms: a put took 100 ms.)
        let producer: BaseProducer<AckContext> = producer_config
            .create_with_context(AckContext {
                ends: Arc::clone(&ends),
            })
            .map_err(|e| broker_error(&options, "creating a producer", e))?;
        let producer = Arc::new(producer);

        tracing::info!(
            component = "durable.kafka_log",
            event = "open",
            brokers = %options.bootstrap_servers,
            topic = %options.topic,
            partitions,
        );
        Ok(KafkaLog {
            options,
            producer,
            consumer,
            partitions,
            ends,
            position: None,
        })
    }

    /// The options the log was opened with.
    pub fn options(&self) -> &KafkaLogOptions {
        &self.options
    }

    fn check_partition(&self, partition: Partition) -> Result<(), LogError> {
        if partition < self.partitions {
            Ok(())
        } else {
            Err(LogError::UnknownPartition {
                partition,
                partitions: self.partitions,
            })
        }
    }

    fn read_error(
        &self,
        partition: Partition,
        offset: Offset,
        err: impl std::fmt::Display,
    ) -> LogError {
        broker_error(
            &self.options,
            &format!(
                "reading {} partition {partition} at offset {offset}",
                self.options.topic
            ),
            err,
        )
    }

    /// Assign the consumer to `starts` (partition, offset) unless it is there already.
    fn assign(&mut self, starts: &[(Partition, Offset)]) -> Result<(), LogError> {
        if self.position.as_deref() == Some(starts) {
            return Ok(());
        }
        self.position = None;
        let mut assignment = TopicPartitionList::new();
        for &(partition, from) in starts {
            let offset = i64::try_from(from).map_err(|_| LogError::OffsetOutOfRange {
                partition,
                offset: from,
                end: self.ends.get(partition),
            })?;
            assignment
                .add_partition_offset(
                    &self.options.topic,
                    partition as i32,
                    KafkaOffset::Offset(offset),
                )
                .map_err(|e| broker_error(&self.options, "assigning partitions", e))?;
        }
        self.consumer
            .assign(&assignment)
            .map_err(|e| broker_error(&self.options, "assigning partitions", e))?;
        self.position = Some(starts.to_vec());
        Ok(())
    }

    /// Read the assigned partitions forward until, for every partition in `until`, its
    /// next offset reached the given stop or (with `to_end`) its end-of-partition event
    /// came, handing each record to `keep`. Raises the known ends on the way.
    ///
    /// Without `to_end` the stops are below known ends, so an end-of-partition event
    /// there is one left over from reading this assignment to its end earlier, and is
    /// passed over.
    fn poll_until(
        &mut self,
        until: &mut Vec<(Partition, Offset)>,
        to_end: bool,
        mut keep: impl FnMut(LogRecord),
    ) -> Result<(), LogError> {
        let deadline = Instant::now() + self.options.request_timeout;
        let mut positions = self.position.take().unwrap_or_default();
        while !until.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let (p, stop) = until[0];
            let at = positions
                .iter()
                .find(|(q, _)| *q == p)
                .map_or(0, |&(_, next)| next);
            if left.is_zero() {
                let waited = millis(self.options.request_timeout);
                return Err(self.read_error(
                    p,
                    at,
                    if to_end {
                        format!("the end of the partition did not come within {waited} ms")
                    } else {
                        format!("offset {stop} was not reached within {waited} ms")
                    },
                ));
            }
            let event = match self.consumer.poll(left) {
                None => continue,
                Some(event) => event,
            };
            let (partition, record) = match event {
                Ok(message) => {
                    let (Ok(partition), Ok(offset)) = (
                        Partition::try_from(message.partition()),
                        u64::try_from(message.offset()),
                    ) else {
                        continue;
                    };
                    let record = LogRecord {
                        partition,
                        offset,
                        key: message.key().unwrap_or_default().to_vec(),
                        value: message.payload().unwrap_or_default().to_vec(),
                    };
                    (partition, Some(record))
                }
                Err(KafkaError::PartitionEOF(p)) => match Partition::try_from(p) {
                    Ok(p) => (p, None),
                    Err(_) => continue,
                },
                Err(err) => return Err(self.read_error(p, at, err)),
            };
            let Some(pos) = positions.iter_mut().find(|(q, _)| *q == partition) else {
                // A partition of an earlier assignment.
                continue;
            };
            match record {
                Some(record) => {
                    // Records below the position were returned already.
                    if record.offset < pos.1 {
                        continue;
                    }
                    // Offsets can skip (a transaction's marker takes one).
                    pos.1 = record.offset + 1;
                    self.ends.raise(partition, pos.1);
                    keep(record);
                    until.retain(|&(q, stop)| q != partition || pos.1 < stop);
                }
                None => {
                    // Everything up to the high watermark was read: that is the end.
                    self.ends.raise(partition, pos.1);
                    if to_end {
                        until.retain(|&(q, _)| q != partition);
                    }
                }
            }
        }
        self.position = Some(positions);
        Ok(())
    }

    /// Learn the current end of `partitions`: read each from its known end to its
    /// end-of-partition event (records between are skipped; a read asks for them).
    fn refresh_ends(&mut self, partitions: &[Partition]) -> Result<(), LogError> {
        let starts: Vec<(Partition, Offset)> =
            partitions.iter().map(|&p| (p, self.ends.get(p))).collect();
        // Reassigning resets librdkafka's end-of-partition state, so the event comes
        // again for a partition read to its end before.
        self.position = None;
        self.assign(&starts)?;
        let mut until: Vec<(Partition, Offset)> =
            partitions.iter().map(|&p| (p, Offset::MAX)).collect();
        self.poll_until(&mut until, true, |_| {})
    }
}

impl Log for KafkaLog {
    type Ack = KafkaAck;

    fn partition_count(&self) -> u32 {
        self.partitions
    }

    fn send(
        &mut self,
        partition: Partition,
        key: &[u8],
        value: &[u8],
    ) -> Result<KafkaAck, LogError> {
        self.check_partition(partition)?;
        let slot = Arc::new(AckSlot {
            state: Mutex::new(AckPoll::Pending),
        });
        let record = BaseRecord::with_opaque_to(&self.options.topic, Arc::clone(&slot))
            .partition(partition as i32)
            .key(key)
            .payload(value);
        if let Err((err, _)) = self.producer.send(record) {
            // Refused before it was queued (a full queue, a fatal producer error): the
            // record cannot land, and the acknowledgement says so.
            slot.resolve(AckPoll::Failed(LogError::SendFailed(format!(
                "partition {partition}: {}",
                one_line(err)
            ))));
        }
        Ok(KafkaAck {
            slot,
            producer: Arc::clone(&self.producer),
        })
    }

    fn flush(&mut self) -> Result<(), LogError> {
        let deadline = Instant::now() + self.options.request_timeout;
        loop {
            // A flush with no time to wait asks librdkafka to send what it holds at
            // once, without waiting out `linger.ms`; it answers "timed out" while
            // records are still on their way.
            let _ = self.producer.flush(Duration::ZERO);
            // Records queued, in flight, or delivered with their report not yet
            // served: none left means every acknowledgement is resolved.
            if self.producer.in_flight_count() == 0 {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(LogError::FlushFailed(format!(
                    "topic {} on Kafka broker {}: {} records still undelivered after {} ms",
                    self.options.topic,
                    self.options.bootstrap_servers,
                    self.producer.in_flight_count(),
                    millis(self.options.request_timeout)
                )));
            }
            self.producer.poll(SERVE_STEP);
        }
    }

    fn read(
        &mut self,
        partition: Partition,
        from: Offset,
        max_records: usize,
    ) -> Result<Vec<LogRecord>, LogError> {
        self.check_partition(partition)?;
        if from >= self.ends.get(partition) {
            self.refresh_ends(&[partition])?;
        }
        let end = self.ends.get(partition);
        if from > end {
            return Err(LogError::OffsetOutOfRange {
                partition,
                offset: from,
                end,
            });
        }
        let stop = end.min(from.saturating_add(max_records as u64));
        if from == stop {
            return Ok(Vec::new());
        }
        self.assign(&[(partition, from)])?;
        let mut records = Vec::with_capacity((stop - from) as usize);
        let mut until = vec![(partition, stop)];
        let result = self.poll_until(&mut until, false, |r| records.push(r));
        if let Err(err) = result {
            self.position = None;
            return Err(err);
        }
        Ok(records)
    }

    fn end_offsets(&mut self) -> Result<Vec<Offset>, LogError> {
        let all: Vec<Partition> = (0..self.partitions).collect();
        if let Err(err) = self.refresh_ends(&all) {
            self.position = None;
            return Err(err);
        }
        Ok(all.iter().map(|&p| self.ends.get(p)).collect())
    }
}

/// Create `topic` with `partitions` partitions (replication factor `replication`) on the
/// brokers `bootstrap_servers`. A topic that already exists is left as it is and is not
/// an error: [`KafkaLog::open`] reads its partition count from the broker.
pub fn create_topic(
    bootstrap_servers: &str,
    topic: &str,
    partitions: u32,
    replication: u16,
    timeout: Duration,
) -> Result<(), LogError> {
    let options = KafkaLogOptions::new(bootstrap_servers, topic);
    let admin: AdminClient<DefaultClientContext> = options
        .base_config()
        .create()
        .map_err(|e| broker_error(&options, "creating an admin client", e))?;
    let partitions = i32::try_from(partitions).map_err(|_| {
        LogError::Metadata(format!("{partitions} partitions is more than Kafka allows"))
    })?;
    let new = NewTopic::new(
        topic,
        partitions,
        TopicReplication::Fixed(i32::from(replication)),
    );
    let admin_options = AdminOptions::new()
        .request_timeout(Some(timeout))
        .operation_timeout(Some(timeout));
    let results = futures_executor::block_on(admin.create_topics([&new], &admin_options))
        .map_err(|e| broker_error(&options, &format!("creating topic {topic}"), e))?;
    for result in results {
        match result {
            Ok(_) => {}
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, code)) => {
                return Err(broker_error(
                    &options,
                    &format!("creating topic {name}"),
                    code,
                ))
            }
        }
    }
    Ok(())
}
