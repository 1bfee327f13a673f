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
//!
//! A lock outlives its store for a moment when this process starts a child
//! just then. `flock(2)` belongs to the open file, and a child shares every
//! open file of its parent from the fork until its exec closes them (all of
//! hookd's are close-on-exec). A store dropped in that window leaves its
//! file locked until the child's exec, and opening the file again at once
//! was refused as in use by this very process. hookd itself starts no
//! children, but a process that embeds it may (the test binary starts
//! thousands). So this process keeps the lock files it holds (`HELD`); a
//! file locked under this process's own pid that none of its stores holds
//! is waited for, up to `CHILD_WAIT`, and another store of this process is
//! still refused at once.

use std::collections::BTreeSet;
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The lock files this process's live `FileLock`s hold, by device and inode.
/// Taking a lock and entering it here is one step under this mutex, so that
/// a refused open that reads it knows whether a store holds the file.
static HELD: Mutex<BTreeSet<(u64, u64)>> = Mutex::new(BTreeSet::new());

/// How long an open waits for a child of this process to let go of a lock
/// it inherited. An exec takes microseconds; a loaded machine stretches
/// that to milliseconds, not seconds.
const CHILD_WAIT: Duration = Duration::from_secs(5);

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
    /// The cause in the message only, as `FileError::Io`'s.
    #[error("cannot lock {}: {error}", .lock.display())]
    Io {
        lock: PathBuf,
        error: std::io::Error,
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
    file: File,
    key: (u64, u64),
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Before the file closes: an open that finds the file still locked
        // meanwhile waits for it rather than refusing.
        HELD.lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&self.key);
    }
}

/// Where the lock of the database at `path` lives: beside it, named after it.
pub fn lock_path(path: &Path) -> PathBuf {
    super::files::beside(path, ".lock")
}

impl FileLock {
    /// Takes the lock of the database at `path`, and writes this process's
    /// pid into it. Another process's lock, or another store's in this
    /// process, refuses at once; only a child's inherited hold is waited for.
    pub(crate) async fn acquire(path: &Path) -> Result<Self, LockError> {
        let lock = lock_path(path);
        let io = |error| LockError::Io {
            lock: lock.clone(),
            error,
        };
        // Not truncated on open: until the lock is ours, the pid in the
        // file is the holder's, which a refused process reads.
        let mut file = super::files::open_private(&lock)?;
        let metadata = file.metadata().map_err(io)?;
        let key = (metadata.dev(), metadata.ino());
        let deadline = tokio::time::Instant::now() + CHILD_WAIT;
        let mut pause = Duration::from_millis(1);
        loop {
            let pid = {
                let mut held = HELD.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                match file.try_lock() {
                    Ok(()) => {
                        held.insert(key);
                        break;
                    }
                    Err(TryLockError::WouldBlock) => {}
                    Err(TryLockError::Error(error)) => return Err(io(error)),
                }
                let pid = holder_pid(&mut file);
                let inherited = pid == Some(std::process::id()) && !held.contains(&key);
                if !inherited || tokio::time::Instant::now() >= deadline {
                    return Err(LockError::InUse {
                        path: path.to_path_buf(),
                        lock,
                        pid,
                    });
                }
                pid
            };
            tracing::debug!(lock = %lock.display(), ?pid, "the lock is held by a child of this process; waiting for its exec");
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(50));
        }
        // Ours from here: dropped on any error below, which lets it go.
        let mut held = Self { file, key };
        let file = &mut held.file;
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(held)
    }
}

/// The pid the holder wrote; `None` when unreadable (that only loses the pid
/// from the message) or not written yet.
fn holder_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Starts children until dropped, from two threads, as a test binary
    /// running other tests does.
    struct Children {
        stop: Arc<AtomicBool>,
        threads: Vec<std::thread::JoinHandle<u64>>,
    }

    impl Children {
        fn start() -> Self {
            let stop = Arc::new(AtomicBool::new(false));
            let threads = (0..2)
                .map(|_| {
                    let stop = stop.clone();
                    std::thread::spawn(move || {
                        let mut started = 0;
                        while !stop.load(Ordering::Relaxed) {
                            std::process::Command::new("true").status().unwrap();
                            started += 1;
                        }
                        started
                    })
                })
                .collect();
            Self { stop, threads }
        }

        fn stop(self) -> u64 {
            self.stop.store(true, Ordering::Relaxed);
            self.threads.into_iter().map(|t| t.join().unwrap()).sum()
        }
    }

    #[tokio::test]
    async fn a_lock_let_go_while_this_process_starts_children_is_taken_again_each_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hookd.db");
        let children = Children::start();

        for round in 0..300 {
            let lock = FileLock::acquire(&path).await;
            assert!(lock.is_ok(), "round {round}: {:?}", lock.err());
        }

        assert!(children.stop() > 0, "children were started meanwhile");
    }

    #[tokio::test]
    async fn a_second_lock_in_this_process_is_refused_while_children_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hookd.db");
        let children = Children::start();
        let first = FileLock::acquire(&path).await.unwrap();

        for _ in 0..50 {
            let refused = FileLock::acquire(&path).await;
            let Err(LockError::InUse { pid, .. }) = refused else {
                panic!("not refused as in use: {refused:?}");
            };
            assert_eq!(pid, Some(std::process::id()));
        }

        drop(first);
        children.stop();
        FileLock::acquire(&path)
            .await
            .expect("free once the first is dropped");
    }
}
