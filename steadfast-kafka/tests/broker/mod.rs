//! A real Kafka-protocol broker for the tests: tansu's broker, built by `scripts/test`
//! from the `tansu-broker` crate (`steadfast-kafka/test-broker/`, the binary
//! `steadfast-test-broker`), started on a free loopback port in a temporary directory,
//! storing its topics in an SQLite file there, and killed when the handle drops.
//!
//! The SQLite engine, not tansu's in-memory one: in tansu 0.6.0 the in-memory engine
//! stores a record batch as one object and a fetch returns only batches whose base
//! offset is at or after the offset asked for, so a read from inside a batch of several
//! records (a group commit's) misses that batch; the SQLite engine keeps one row per
//! record.
//!
//! A missing binary fails the test with one line saying how to install it: the tests
//! are about the real broker, so they never skip.

#![allow(dead_code)]

use std::fs::OpenOptions;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use steadfast_kafka::{create_topic, KafkaLog, KafkaLogOptions};

/// Generous: the broker is up in well under a second on a quiet machine, but CI shares
/// two cores with a build.
const START_GUARD: Duration = Duration::from_secs(120);

/// How to get the broker, for the one-line failure.
pub(crate) const INSTALL_HINT: &str = "scripts/test builds it, or: cargo build --release --locked \
     --manifest-path steadfast-kafka/test-broker/Cargo.toml --target-dir target/test-broker";

/// The broker binary: `$STEADFAST_TANSU` (a `tansu` binary of 0.6.0 with the `libsql`
/// feature takes the same arguments), else `steadfast-test-broker` where `scripts/test`
/// builds it, in `test-broker/release/` of the target directory this test runs from.
fn tansu_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("STEADFAST_TANSU") {
        return Some(PathBuf::from(path));
    }
    // This test is `<target>/<profile>/deps/<name>`.
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent()?.parent()?.parent()?;
    let built = target.join("test-broker/release/steadfast-test-broker");
    built.is_file().then_some(built)
}

/// A running broker.
pub(crate) struct Broker {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Broker {
    /// Start a broker, waiting until it accepts connections.
    pub(crate) fn start() -> Broker {
        let Some(binary) = tansu_binary() else {
            panic!("the test broker is not built (target/test-broker, $STEADFAST_TANSU): {INSTALL_HINT}");
        };
        let dir = tempfile::tempdir().expect("temporary directory for the broker");
        // A port the system just handed out and we released: another process could
        // take it in between, which the start guard then reports.
        let addr = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port");
        let url = format!("tcp://{addr}");
        let log = std::fs::File::create(dir.path().join("broker.log")).expect("broker log");
        let child = Command::new(&binary)
            .current_dir(dir.path())
            // The broker reads its settings from the environment too; the arguments
            // win, and no inherited variable points it elsewhere.
            .env_remove("STORAGE_ENGINE")
            .env_remove("LISTENER_URL")
            .env_remove("ADVERTISED_LISTENER_URL")
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
                "--storage-engine",
                "sqlite://tansu.db",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("broker log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut broker = Broker { child, addr, dir };
        broker.wait_until_listening();
        broker
    }

    fn wait_until_listening(&mut self) {
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "tansu broker exited with {status} before listening on {}: {}",
                    self.addr,
                    self.log_tail()
                );
            }
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            if start.elapsed() > START_GUARD {
                panic!(
                    "tansu broker not listening on {} after {} s: {}",
                    self.addr,
                    START_GUARD.as_secs(),
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The last lines of the broker's output, on one line, for failure messages.
    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("broker.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }

    /// `host:port` for clients.
    pub(crate) fn bootstrap(&self) -> String {
        self.addr.to_string()
    }

    /// Create `topic` with `partitions` partitions.
    pub(crate) fn create_topic(&self, topic: &str, partitions: u32) {
        create_topic(
            &self.bootstrap(),
            topic,
            partitions,
            1,
            Duration::from_secs(30),
        )
        .unwrap_or_else(|e| panic!("creating topic {topic}: {e}; broker: {}", self.log_tail()));
    }

    /// Options for `topic` on this broker.
    pub(crate) fn options(&self, topic: &str) -> KafkaLogOptions {
        KafkaLogOptions::new(self.bootstrap(), topic)
    }

    /// Open `topic` on this broker.
    pub(crate) fn open(&self, topic: &str) -> KafkaLog {
        KafkaLog::open(self.options(topic))
            .unwrap_or_else(|e| panic!("opening topic {topic}: {e}; broker: {}", self.log_tail()))
    }

    /// Kill the broker (SIGKILL) and wait for it.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Append `line` to a worker process's journal file and sync it, so the parent reads
/// it whatever happens to the worker next (a SIGKILL, a SIGSTOP).
pub(crate) fn append_line(path: &Path, line: &str) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("worker journal");
    writeln!(f, "{line}").expect("worker journal write");
    f.sync_all().expect("worker journal sync");
}

/// Replace `path` atomically with `text` (a worker's checkpoint or state file).
pub(crate) fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("worker file");
    OpenOptions::new()
        .write(true)
        .open(&tmp)
        .and_then(|f| f.sync_all())
        .expect("worker file sync");
    std::fs::rename(&tmp, path).expect("worker file rename");
}
