//! The `Log` contract suite (`steadfast_log::testing`) on the in-memory log and on the
//! file log; the Kafka log runs the same suite against a real broker in
//! `steadfast-kafka`'s tests.

use std::collections::HashMap;

use steadfast_log::testing::{run_all, LogFactory};
use steadfast_log::{
    FileLog, FileLogOptions, Log, LogError, LogRecord, MemoryAck, MemoryLog, Offset, Partition,
};

/// In-memory logs by name; a reopened one is another handle on the same records.
#[derive(Default)]
struct Memory(HashMap<String, MemoryLog>);

impl LogFactory for Memory {
    type Log = MemoryLog;
    fn create(&mut self, name: &str, partitions: u32) -> MemoryLog {
        let log = MemoryLog::new(partitions);
        self.0.insert(name.to_string(), log.clone());
        log
    }
    fn reopen(&mut self, name: &str) -> MemoryLog {
        self.0[name].clone()
    }
}

/// File logs in directories of one temporary directory, with small segments so that
/// the suite's records span several segment files.
struct Files {
    root: tempfile::TempDir,
    partitions: HashMap<String, u32>,
}

impl Files {
    fn options(partitions: u32) -> FileLogOptions {
        FileLogOptions {
            partitions: Some(partitions),
            segment_bytes: 64,
            ..FileLogOptions::default()
        }
    }
}

impl LogFactory for Files {
    type Log = FileLog;
    fn create(&mut self, name: &str, partitions: u32) -> FileLog {
        self.partitions.insert(name.to_string(), partitions);
        FileLog::open(self.root.path().join(name), Self::options(partitions)).unwrap()
    }
    fn reopen(&mut self, name: &str) -> FileLog {
        let options = Self::options(self.partitions[name]);
        FileLog::open(self.root.path().join(name), options).unwrap()
    }
}

#[test]
fn the_memory_log_keeps_the_log_contract() {
    run_all(&mut Memory::default());
}

#[test]
fn the_file_log_keeps_the_log_contract() {
    let mut files = Files {
        root: tempfile::tempdir().unwrap(),
        partitions: HashMap::new(),
    };
    run_all(&mut files);
    // Small segments: the suite's records rolled over into several files.
    let segments = std::fs::read_dir(files.root.path().join("order"))
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("p1-") && name.ends_with(".seg"))
        .count();
    assert!(
        segments > 1,
        "the file log kept partition 1 in {segments} files"
    );
}

/// In-memory logs whose reads leave out the last record they would return: the suite
/// must refuse them.
#[derive(Default)]
struct ShortReads(Memory);

/// A log whose reads come back one record short.
struct ShortRead(MemoryLog);

impl Log for ShortRead {
    type Ack = MemoryAck;
    fn partition_count(&self) -> u32 {
        self.0.partition_count()
    }
    fn send(&mut self, p: Partition, key: &[u8], value: &[u8]) -> Result<MemoryAck, LogError> {
        self.0.send(p, key, value)
    }
    fn flush(&mut self) -> Result<(), LogError> {
        self.0.flush()
    }
    fn read(&mut self, p: Partition, from: Offset, max: usize) -> Result<Vec<LogRecord>, LogError> {
        let mut records = self.0.read(p, from, max)?;
        records.pop();
        Ok(records)
    }
    fn end_offsets(&mut self) -> Result<Vec<Offset>, LogError> {
        self.0.end_offsets()
    }
}

impl LogFactory for ShortReads {
    type Log = ShortRead;
    fn create(&mut self, name: &str, partitions: u32) -> ShortRead {
        ShortRead(self.0.create(name, partitions))
    }
    fn reopen(&mut self, name: &str) -> ShortRead {
        ShortRead(self.0.reopen(name))
    }
}

#[test]
fn a_log_that_loses_records_on_reads_fails_the_suite() {
    let failed = std::panic::catch_unwind(|| run_all(&mut ShortReads::default()));
    let message = failed.expect_err("the suite passed a log that loses records");
    let text = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        text.starts_with("assertion `left == right` failed: send order and read back"),
        "{text}"
    );
}
