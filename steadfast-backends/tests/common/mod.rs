//! A real etcd for the tests: Debian's `etcd` binary, started on free loopback ports
//! with its data in a temporary directory, and killed when the test ends.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Generous guard against hangs; no test relies on anything taking less.
pub(crate) const GUARD: Duration = Duration::from_secs(120);

/// The etcd binary: `$STEADFAST_ETCD`, else `etcd` on the `PATH`. A missing binary fails
/// the test with one line: these tests run against the real server or not at all.
pub(crate) fn etcd_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("STEADFAST_ETCD") {
        return PathBuf::from(path);
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("etcd"))
            .find(|candidate| candidate.is_file())
    });
    found.unwrap_or_else(|| {
        panic!("no etcd binary on the PATH: install Debian's etcd-server (`apt-get install etcd-server`, as .ci/run does) or set STEADFAST_ETCD")
    })
}

/// A free loopback port (free when asked; etcd binds it right after).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A running etcd, killed on drop.
pub(crate) struct Etcd {
    child: Child,
    /// Its client endpoint, `127.0.0.1:PORT`.
    pub endpoint: String,
}

impl Etcd {
    /// Starts etcd with its data under `dir` and waits until it answers.
    pub(crate) fn start(dir: &Path) -> Etcd {
        let (client, peer) = (free_port(), free_port());
        let client_url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.join("etcd.log")).expect("etcd's log file");
        let child = Command::new(etcd_binary())
            .arg("--name=test")
            .arg(format!("--data-dir={}", dir.join("etcd-data").display()))
            .arg(format!("--listen-client-urls={client_url}"))
            .arg(format!("--advertise-client-urls={client_url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=test={peer_url}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", etcd_binary().display()));
        let mut etcd = Etcd {
            child,
            endpoint: format!("127.0.0.1:{client}"),
        };
        let started = Instant::now();
        let runtime = runtime();
        loop {
            let ready = runtime.block_on(async {
                let mut c = etcd_client::Client::connect([etcd.endpoint.as_str()], None).await?;
                c.get("/", None).await
            });
            if ready.is_ok() {
                return etcd;
            }
            if let Ok(Some(status)) = etcd.child.try_wait() {
                panic!(
                    "etcd exited at start ({status}); its log: {}",
                    dir.join("etcd.log").display()
                );
            }
            assert!(
                started.elapsed() < GUARD,
                "etcd did not answer within {GUARD:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A runtime for the tests' own etcd client.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
