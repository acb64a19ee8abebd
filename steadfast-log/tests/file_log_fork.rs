//! A process that starts child processes while it closes and reopens its file log.
//!
//! Starting a process forks: for a moment, until the child execs, the child holds a copy
//! of every open file description of the parent, the locked `LOCK` file included. A
//! `flock` lock belongs to the description, so a log dropped and reopened in that moment
//! finds its own lock still held. The open must not report that as another writer: the
//! lock's holder is this very process, and no handle of it is open.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use steadfast::durable::LogError;
use steadfast_log::{FileLog, FileLogOptions};

const REOPENS: usize = 400;

#[test]
fn reopening_while_another_thread_starts_processes_is_not_refused() {
    let dir = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let spawner = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut started = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let status = Command::new("true")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .status()
                    .expect("start `true`");
                assert!(status.success());
                started += 1;
            }
            started
        })
    };
    let mut refused = Vec::new();
    for _ in 0..REOPENS {
        match FileLog::open(dir.path(), FileLogOptions::default()) {
            Ok(log) => drop(log),
            Err(e) => refused.push(e),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let started = spawner.join().unwrap();
    assert!(started > 0, "no child process was started");
    assert!(
        refused.is_empty(),
        "{} of {REOPENS} reopens refused, e.g. {:?}",
        refused.len(),
        refused[0]
    );
}

#[test]
fn a_second_handle_in_this_process_is_still_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let _held = FileLog::open(dir.path(), FileLogOptions::default()).unwrap();
    let err = FileLog::open(dir.path(), FileLogOptions::default()).unwrap_err();
    assert!(
        matches!(&err, LogError::Locked { holder: Some(pid), .. } if *pid == std::process::id()),
        "{err:?}"
    );
}
