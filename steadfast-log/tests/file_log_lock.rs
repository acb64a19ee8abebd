//! The file log's directory lock across processes: while a child process holds the log
//! open, an open in this process is refused at once, naming the child's process id;
//! once the child is killed (SIGKILL: it releases nothing itself), the log opens.
//!
//! The same with a real driver in the child, stopped (SIGSTOP) before it is killed: a
//! paused process still holds its lock, so no restore can start while it could still
//! write, and the file log has no zombie sends. Once it is killed, a driver taking
//! over restores from its checkpoint and no acknowledged call runs again.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use rustix::process::{kill_process, Pid, Signal};
use serde_json::json;
use steadfast::durable::{ActionDef, CallChain, CallOutcome, CallRef, Checkpoint, LogError};
use steadfast_log::{Driver, DriverError, FileLog, FileLogOptions, Supplier};

const CHILD_DIR: &str = "STEADFAST_LOCK_CHILD_DIR";
const DRIVER_DIR: &str = "STEADFAST_LOCK_DRIVER_DIR";

/// Entry point of the holder process the lock test starts: it opens the log, says so,
/// and waits until its standard input closes or it is killed. It does nothing unless
/// started by that test (hence ignored in normal runs).
#[test]
#[ignore = "child process of a_log_held_by_another_process_is_refused_until_it_dies"]
fn lock_holder_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let _log = FileLog::open(&dir, FileLogOptions::default()).unwrap();
    println!("holding");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

#[test]
fn a_log_held_by_another_process_is_refused_until_it_dies() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lock_holder_child", "--ignored", "--nocapture"])
        .env(CHILD_DIR, dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let holding = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("holding"));
    assert!(holding, "the child did not open the log");
    let err = FileLog::open(dir.path(), FileLogOptions::default()).unwrap_err();
    assert_eq!(
        err,
        LogError::Locked {
            dir: dir.path().display().to_string(),
            holder: Some(child.id()),
        }
    );
    child.kill().unwrap();
    child.wait().unwrap();
    FileLog::open(dir.path(), FileLogOptions::default()).expect("the lock died with its holder");
}

/// The action of the driver test: calls 0 and 1 are acknowledged in the child, call 2
/// is left to the process that takes over.
fn actions() -> Vec<ActionDef> {
    vec![ActionDef::new(
        "act",
        CallChain::new(["lookup", "enrich", "publish"]),
    )]
}

/// A supplier that writes each run down in `dir/calls.log` (synced) before answering.
fn supplier(dir: &Path) -> Supplier {
    let path = dir.join("calls.log");
    Box::new(move |call: &CallRef, _f: &str, _args: &serde_json::Value| {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        writeln!(f, "{}/{}/{}", call.key, call.seq, call.index).unwrap();
        f.sync_all().unwrap();
        CallOutcome::Value(json!(call.index))
    })
}

fn reopen(dir: &Path) -> steadfast_log::Reopen<FileLog> {
    let log = dir.join("log");
    let options = FileLogOptions {
        partitions: Some(2),
        ..FileLogOptions::default()
    };
    Box::new(move || FileLog::open(&log, options.clone()))
}

/// Entry point of the driver process the driver test starts: a checkpoint with its
/// action queued (kept in a file), calls 0 and 1 saved, then it says so and holds the
/// log until it is killed. Does nothing unless started by that test.
#[test]
#[ignore = "child process of a_stopped_driver_keeps_its_log_locked_and_its_successor_repeats_no_acknowledged_call"]
fn driver_holder_child() {
    let Ok(dir) = std::env::var(DRIVER_DIR) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let mut driver = Driver::new(actions(), reopen(&dir), supplier(&dir)).unwrap();
    driver.input("k", json!(1)).unwrap();
    let id = driver.checkpoint().unwrap();
    driver.complete_checkpoint(id).unwrap();
    let checkpoint = serde_json::to_string(driver.completed_checkpoint().unwrap()).unwrap();
    std::fs::write(dir.join("checkpoint.json"), checkpoint).unwrap();
    driver.call(0).unwrap();
    driver.call(0).unwrap();
    println!("holding");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// Kills the child when the test ends, passed or not.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn signal(child: &Child, sig: Signal) {
    kill_process(Pid::from_raw(child.id() as i32).unwrap(), sig).unwrap();
}

/// Whether the child's stdout says it holds the log (false if it ended first).
fn says_holding(stdout: ChildStdout) -> bool {
    BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("holding"))
}

/// The open of `dir`'s log is refused, in one line naming `pid`.
fn assert_refused(dir: &Path, pid: u32) {
    let err = FileLog::open(dir.join("log"), FileLogOptions::default()).unwrap_err();
    assert_eq!(
        err,
        LogError::Locked {
            dir: dir.join("log").display().to_string(),
            holder: Some(pid),
        }
    );
    let text = err.to_string();
    assert!(
        !text.contains('\n') && text.contains(&format!("process {pid}")),
        "{text}"
    );
}

#[test]
fn a_stopped_driver_keeps_its_log_locked_and_its_successor_repeats_no_acknowledged_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Killed(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "driver_holder_child", "--ignored", "--nocapture"])
            .env(DRIVER_DIR, dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id();
    assert!(
        says_holding(child.0.stdout.take().unwrap()),
        "the child's driver did not run"
    );
    assert_refused(dir.path(), pid);

    // Paused, it still holds the lock: a successor's restore cannot start, and takes
    // no epoch.
    signal(&child.0, Signal::STOP);
    assert_refused(dir.path(), pid);
    let text = std::fs::read_to_string(dir.path().join("checkpoint.json")).unwrap();
    let checkpoint: Checkpoint = serde_json::from_str(&text).unwrap();
    let mut successor = Driver::after_crash(actions(), reopen(dir.path()), supplier(dir.path()), 1);
    successor.input("k", json!(1)).unwrap();
    successor.adopt_checkpoint(checkpoint, 1);
    let err = successor.restore().unwrap_err();
    assert!(
        matches!(err, DriverError::Log(LogError::Locked { holder: Some(p), .. }) if p == pid),
        "{err:?}"
    );

    signal(&child.0, Signal::KILL);
    child.0.wait().unwrap();
    let report = successor
        .restore()
        .unwrap()
        .expect("restored from the checkpoint");
    assert_eq!(successor.epoch(), 2);
    assert_eq!((report.states_loaded, report.fenced_skipped), (1, 0));
    successor.run_until_idle().unwrap();
    assert_eq!(successor.emitted().len(), 1);

    // Calls 0 and 1 ran in the child and were acknowledged; only call 2 ran here.
    let calls = std::fs::read_to_string(dir.path().join("calls.log")).unwrap();
    let mut runs: BTreeMap<&str, u32> = BTreeMap::new();
    for line in calls.lines() {
        *runs.entry(line).or_default() += 1;
    }
    assert_eq!(
        runs,
        BTreeMap::from([("k/0/0", 1), ("k/0/1", 1), ("k/0/2", 1)])
    );
}
