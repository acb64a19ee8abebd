//! The file operations the file log ([`FileLog`](crate::FileLog)) makes, behind a trait, so that
//! a test can run the log on a simulated disk that loses power ([`Storage`]).
//! [`StdStorage`] is the real one over `std::fs`, the default everywhere.
//!
//! The operations are the few an append-only log needs, each with the durability a
//! Linux file system gives it: appended bytes are durable once the file is synced;
//! a new or renamed file's directory entry once its directory is synced. One more keeps
//! a second writer out: an exclusive lock on a file ([`Storage::lock_exclusive`]).

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A file system, as the file log uses it.
pub trait Storage: Send + Sync {
    /// Create `dir` and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The whole contents of `path` (`NotFound` if there is no such file).
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Create or replace `path` with `bytes` and sync the file (not its directory).
    fn write_synced(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// Rename `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// The paths of the entries of `dir`.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// Make `dir`'s entries (files created or renamed in it) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Open `path` for reading and appending, creating it if missing.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;

    /// Lock `path` (created if missing) for the returned guard alone, without waiting,
    /// and write this process's id into it. Another holder, in this process or another,
    /// makes it fail at once with [`io::ErrorKind::WouldBlock`]. The lock is released
    /// when the guard is dropped, or the process ends.
    ///
    /// The default takes no lock: a simulated disk has no other process to keep out.
    fn lock_exclusive(&self, path: &Path) -> io::Result<LockGuard> {
        let _ = path;
        Ok(Box::new(()))
    }
}

/// Holds a lock taken by [`Storage::lock_exclusive`] until dropped.
pub type LockGuard = Box<dyn Send + Sync>;

/// An open file of a [`Storage`].
pub trait StorageFile: Send {
    /// Append `bytes` at the end.
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Fill `buf` from byte `pos` on (an error if the file ends first).
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()>;
    /// Cut or extend the file to `len` bytes.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// Make the file's data durable (`fdatasync`).
    fn sync_data(&mut self) -> io::Result<()>;
    /// Make the file's data and metadata durable (`fsync`).
    fn sync_all(&mut self) -> io::Result<()>;
}

/// The real file system (`std::fs`).
#[derive(Clone, Copy, Debug, Default)]
pub struct StdStorage;

impl Storage for StdStorage {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }

    fn write_synced(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut f = File::create(path)?;
        f.write_all(bytes)?;
        f.sync_all()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        fs::read_dir(dir)?
            .map(|entry| entry.map(|e| e.path()))
            .collect()
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)?;
        Ok(Box::new(StdFile(file)))
    }

    /// `flock(LOCK_EX | LOCK_NB)`: held by this open file, so a second open of the same
    /// path in this process is refused too, and released by the kernel when the file is
    /// closed, also when the process dies. The file is opened close-on-exec, so a child
    /// process does not keep the lock once it runs its program; until then (between fork
    /// and exec) it shares the open file, and a relock by this process after its own
    /// guard is gone waits for that, a bounded moment (see `HELD_LOCKS`).
    fn lock_exclusive(&self, path: &Path) -> io::Result<LockGuard> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let id = file_id(&file)?;
        let mut held = HELD_LOCKS.lock().unwrap_or_else(|e| e.into_inner());
        if held.contains(&id) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        flock_allowing_forked_children(&file)?;
        held.insert(id);
        drop(held);
        // The holder's id, for the error of whoever is refused next: written in place at
        // a fixed width, so a reader never finds the file empty or half old.
        let line = format!(
            "{:>width$}\n",
            std::process::id(),
            width = HOLDER_LINE_BYTES - 1
        );
        file.write_all_at(line.as_bytes(), 0)?;
        file.set_len(line.len() as u64)?;
        Ok(Box::new(HeldLock {
            file: Some(file),
            id,
        }))
    }
}

/// Identity of a file: device and inode.
type FileId = (u64, u64);

fn file_id(file: &File) -> io::Result<FileId> {
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}

/// The lock files this process holds through a live guard.
///
/// `flock` cannot tell this process's live guard from a child that was forked while
/// the guard lived and has not yet exec'd (both hold the same open file). This set can:
/// a lock that is held although no guard of this process holds it, and whose file names
/// this process as its holder, is a starting child's, and is retried.
type HeldLocks = BTreeSet<FileId>;

static HELD_LOCKS: Mutex<HeldLocks> = Mutex::new(BTreeSet::new());

/// The holder's line in a lock file: a process id right-aligned in 10 digits, and a newline.
const HOLDER_LINE_BYTES: usize = 11;

/// How long a lock held only by a starting child is retried before it is refused.
const FORKED_CHILD_WAIT_MS: u64 = 2_000;

fn flock_allowing_forked_children(file: &File) -> io::Result<()> {
    let mut waited_ms = 0;
    loop {
        match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e.into()),
            Err(e) if waited_ms >= FORKED_CHILD_WAIT_MS || !names_this_process(file) => {
                return Err(e.into())
            }
            Err(_) => {
                std::thread::sleep(std::time::Duration::from_millis(1));
                waited_ms += 1;
            }
        }
    }
}

/// Whether the lock file holds this process's id (written by the guard that locked it).
/// Reads the id's fixed width at offset 0 only, leaving the file's position alone.
fn names_this_process(file: &File) -> bool {
    let mut line = [0u8; HOLDER_LINE_BYTES];
    let Ok(read) = file.read_at(&mut line, 0) else {
        return false;
    };
    std::str::from_utf8(&line[..read])
        .is_ok_and(|text| text.trim().parse() == Ok(std::process::id()))
}

/// A lock taken by [`StdStorage::lock_exclusive`]: unlocks by closing the file, then
/// leaves [`HELD_LOCKS`].
struct HeldLock {
    file: Option<File>,
    id: FileId,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        drop(self.file.take());
        HELD_LOCKS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

struct StdFile(File);

impl StorageFile for StdFile {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.write_all(bytes)
    }

    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, pos)
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.0.sync_all()
    }
}
