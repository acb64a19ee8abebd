//! The storage the simulation's file log runs on: the real disk, with the log's fixed
//! directory name resolved inside the run's data directory.

use std::io;
use std::path::{Path, PathBuf};

use steadfast_log::storage::{LockGuard, StdStorage, Storage, StorageFile};

use super::LOG_DIR;

/// A [`Storage`] that resolves [`LOG_DIR`] inside `root`: the file log names its files
/// by the fixed name, the disk holds them in the run's data directory.
pub(super) struct Rooted {
    pub(super) root: PathBuf,
}

impl Rooted {
    fn real(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(LOG_DIR) {
            Ok(rest) if rest.as_os_str().is_empty() => self.root.clone(),
            Ok(rest) => self.root.join(rest),
            Err(_) => path.to_path_buf(),
        }
    }

    fn named(&self, path: PathBuf) -> PathBuf {
        match path.strip_prefix(&self.root) {
            Ok(rest) => Path::new(LOG_DIR).join(rest),
            Err(_) => path,
        }
    }
}

impl Storage for Rooted {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        StdStorage.create_dir_all(&self.real(dir))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        StdStorage.read(&self.real(path))
    }

    fn write_synced(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        StdStorage.write_synced(&self.real(path), bytes)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdStorage.rename(&self.real(from), &self.real(to))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut paths: Vec<PathBuf> = StdStorage
            .list(&self.real(dir))?
            .into_iter()
            .map(|p| self.named(p))
            .collect();
        // The directory's order is the file system's; the log's is the names'.
        paths.sort();
        Ok(paths)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        StdStorage.sync_dir(&self.real(dir))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        StdStorage.open_append(&self.real(path))
    }

    fn lock_exclusive(&self, path: &Path) -> io::Result<LockGuard> {
        StdStorage.lock_exclusive(&self.real(path))
    }
}
