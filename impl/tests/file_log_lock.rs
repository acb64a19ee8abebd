//! The file log's directory lock across processes: while a child process holds the log
//! open, an open in this process is refused at once, naming the child's process id;
//! once the child is killed (SIGKILL: it releases nothing itself), the log opens.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use steadfast::durable::{FileLog, FileLogOptions, LogError};

const CHILD_DIR: &str = "STEADFAST_LOCK_CHILD_DIR";

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
