//! One process per database file (docs/design.md §12): an exclusive lock on a
//! companion file (`hookd.db.lock`), held for the store's lifetime, with
//! the holder's pid written in it so that a second process can say who
//! holds the file.
//!
//! SQLite's own locks do not serve: they are taken per transaction, and two
//! processes on one file would each run an in-process due index and deliver
//! the same notifications. The lock is `flock(2)` (`File::try_lock` on
//! Linux): the kernel drops it when the holder exits, even by kill -9, so a
//! crash never leaves the file locked. The lock file itself stays; removing
//! it would let a process that opened it before the removal lock an inode
//! nobody else sees. It is the account's own (`files`): created 0600,
//! opened without following a link, so no other account can hold it or
//! point it at a file for hookd to write its pid into.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Why the database file cannot be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process (or another store in this one) holds the file. One
    /// line, printed as hookd's last word when it refuses to start.
    #[error("{} is in use by {}: {} is locked", .path.display(), holder(.pid), .lock.display())]
    InUse {
        path: PathBuf,
        lock: PathBuf,
        /// `None` when the holder has not written its pid yet (it took the
        /// lock a moment ago) or the file was altered.
        pid: Option<u32>,
    },
    /// The lock file is not the account's own (`files`).
    #[error(transparent)]
    Files(#[from] super::files::FileError),
    #[error("cannot lock {}: {source}", .lock.display())]
    Io {
        lock: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn holder(pid: &Option<u32>) -> String {
    match pid {
        Some(pid) => format!("another hookd process (pid {pid})"),
        None => "another hookd process".to_string(),
    }
}

/// The held lock; dropping it (closing the file) releases it.
#[derive(Debug)]
pub(crate) struct FileLock {
    _file: File,
}

/// Where the lock of the database at `path` lives: beside it, named after it.
pub fn lock_path(path: &Path) -> PathBuf {
    super::files::beside(path, ".lock")
}

impl FileLock {
    /// Takes the lock of the database at `path` without waiting, and writes
    /// this process's pid into it.
    pub(crate) fn acquire(path: &Path) -> Result<Self, LockError> {
        let lock = lock_path(path);
        let io = |source| LockError::Io {
            lock: lock.clone(),
            source,
        };
        // Not truncated on open: until the lock is ours, the pid in the
        // file is the holder's, which a refused process reads.
        let mut file = super::files::open_private(&lock)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                // Unreadable content only loses the pid from the message.
                let pid = file
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| text.trim().parse().ok());
                return Err(LockError::InUse {
                    path: path.to_path_buf(),
                    lock,
                    pid,
                });
            }
            Err(TryLockError::Error(error)) => return Err(io(error)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(Self { _file: file })
    }
}
