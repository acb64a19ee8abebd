//! Unit tests of the file log's directory lock.

use super::*;
use crate::log::Log;

#[test]
fn a_second_open_of_a_held_directory_is_refused_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let first = FileLog::open(dir.path(), FileLogOptions::default()).unwrap();
    let err = FileLog::open(dir.path(), FileLogOptions::default()).unwrap_err();
    let pid = std::process::id();
    assert_eq!(
        err,
        LogError::Locked {
            dir: dir.path().display().to_string(),
            holder: Some(pid),
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "log directory {} is locked by process {pid}",
            dir.path().display()
        )
    );
    // A clone shares the open log and its lock: dropping it releases nothing.
    drop(first.clone());
    assert!(FileLog::open(dir.path(), FileLogOptions::default()).is_err());
    drop(first);
    let mut again = FileLog::open(dir.path(), FileLogOptions::default()).unwrap();
    assert_eq!(again.end_offsets().unwrap(), vec![0; 4]);
}
