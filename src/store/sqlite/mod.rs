//! The embedded store (docs/design.md §12): one SQLite file, owned by one
//! process, beside which no service runs.
//!
//! Writes go through one connection (a pool of one): SQLite runs one write
//! transaction at a time anyway, and a single writer never waits on
//! SQLite's lock, only in the pool's queue (which the group commit will
//! feed, as it feeds PostgreSQL in server mode). Reads run on a few
//! read-only connections beside it, which WAL lets see the last commit
//! without waiting for the writer.
//!
//! `hookd serve` opens it when neither `database.url` nor `redis.url` is
//! set (`startup::open_embedded`).

mod backlog;
mod breaker;
mod cancel;
mod columns;
mod consumer_tokens;
mod delivery;
mod due_age;
mod endpoints;
mod errors;
mod events;
mod fanout;
mod files;
mod health;
mod housekeeping;
mod index_owner;
mod lock;
mod most_attempted;
mod notifications;
mod operations;
mod operator;
mod ordering;
mod ordering_retention;
#[cfg(test)]
mod plans;
mod portal;
mod pull;
mod pull_due;
mod recording;
mod releasing;
mod reseal;
mod returning;
mod riding;
mod rows;
mod seams;
mod signal;
mod stats;
mod writes;

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, SqliteConnection, SqlitePool};

#[cfg(feature = "server")]
pub(crate) use files::check_files;
pub use files::{check_existing, FileError};
pub use lock::{lock_path, LockError};

use super::StoreError;
use crate::clock::Clock;
pub(crate) use lock::FileLock;

use errors::cause;
pub use errors::store_error;

/// The embedded schema's migrations (`./migrations/sqlite`, embedded by
/// `build.rs`); the PostgreSQL ones (`postgres::MIGRATOR`, `./migrations`)
/// skip this directory, as sqlx reads only the files of a migrations
/// directory, not its subdirectories.
pub static MIGRATOR: LazyLock<Migrator> =
    LazyLock::new(|| super::migrations::migrator(super::migrations::SQLITE));

/// How the database file is opened.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// How long a statement waits on a lock another connection holds (in
    /// WAL mode rare: recovering the WAL after a crash, resetting it after
    /// a checkpoint) before failing with SQLITE_BUSY (503).
    pub busy_timeout: Duration,
    /// How long a caller waits for a connection from either pool.
    pub acquire_timeout: Duration,
    /// Read-only connections beside the writer.
    pub readers: u32,
    /// Apply the migrations when opening (`hookd serve`); `hookd migrate`
    /// calls `migrate` itself.
    pub migrate: bool,
    /// Refuse the file's directory, when it exists, if it is open to other
    /// accounts (`files`): set for a directory named by `--data-dir`. One
    /// hookd creates is made 0700 either way.
    pub private_dir: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            acquire_timeout: Duration::from_secs(5),
            readers: 4,
            migrate: false,
            private_dir: false,
        }
    }
}

impl SqliteOptions {
    /// The defaults, migrating at open.
    pub fn migrating() -> Self {
        Self {
            migrate: true,
            ..Self::default()
        }
    }
}

/// Why a database file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Another process holds the file (one line naming the file and its pid).
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The data directory or a file is open to other accounts, a link, or
    /// not a plain file (`files`): one line naming it and the fix.
    #[error(transparent)]
    Files(#[from] FileError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The file, or its write-ahead log beside it, cannot be opened for
    /// writing (its mode, its owner, a read-only filesystem).
    #[error("{} cannot be written", .path.display())]
    NotWritable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The database's directory cannot be written: SQLite makes its
    /// write-ahead log there, and would fail at the first write with
    /// "attempt to write a readonly database", naming the file.
    #[error(
        "{} cannot be written, and SQLite keeps its write-ahead log beside the database there",
        .path.display()
    )]
    DirNotWritable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Refuses a database whose files this process may not write, before
/// SQLite opens them: SQLite would open a read-only file read-only without
/// a word, and create its `-wal` and `-shm` files with the database file's
/// read-only mode, so that the file would still be refused once fixed.
fn check_writable(path: &Path) -> Result<(), OpenError> {
    let files = [
        path.to_path_buf(),
        files::beside(path, "-wal"),
        files::beside(path, "-shm"),
    ];
    for file in files.into_iter().filter(|file| file.exists()) {
        // Opened for writing, not truncated: nothing is written.
        if let Err(source) = std::fs::OpenOptions::new().write(true).open(&file) {
            return Err(OpenError::NotWritable { path: file, source });
        }
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if let Err(source) = files::writable_dir(dir) {
        return Err(OpenError::DirNotWritable {
            path: dir.to_path_buf(),
            source,
        });
    }
    Ok(())
}

/// Handle to the SQLite store. Cheap to clone; the file stays locked until
/// the last clone is dropped.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    writer: SqlitePool,
    reader: SqlitePool,
    path: PathBuf,
    pull_signals: signal::PullSignals,
    /// Whether recorded attempts add to the per-minute counts
    /// (`stats.count_minutes`).
    count_minutes: bool,
    /// The clock every rule reads (`crate::clock`), as in PostgreSQL.
    clock: Clock,
    /// A recording waiting for the writer, for a create to write with its
    /// own (`riding`).
    riders: riding::Riders,
    // Declared last, so dropped after the pools.
    _lock: Arc<FileLock>,
}

impl SqliteStore {
    /// This store, reading `clock` for every rule (the system clock by
    /// default).
    pub fn with_clock(self, clock: Clock) -> Self {
        Self { clock, ..self }
    }

    /// The clock this store's rules read.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// This store, adding recorded attempts to the per-minute counts or
    /// not (`stats.count_minutes`; on by default).
    pub fn counting_minutes(self, on: bool) -> Self {
        Self {
            count_minutes: on,
            ..self
        }
    }

    /// Locks the database file at `path` for this process, creating it (and
    /// its directory) when missing, and opens the writer and the readers.
    /// The directory and every file must be this account's alone (`files`).
    pub async fn open(path: &Path, options: &SqliteOptions) -> Result<Self, OpenError> {
        // Before SQLite opens it: the file it finds, 0600, gives its -wal
        // and -shm their mode.
        files::prepare(path, options.private_dir)?;
        let lock = FileLock::acquire(path).await?;
        check_writable(path)?;
        let connect = SqliteConnectOptions::new()
            .filename(path)
            // Persistent in the file; set by every connection so that a file
            // made by another tool is switched too.
            .journal_mode(SqliteJournalMode::Wal)
            // A commit is on disk when it returns: a 201 survives a power
            // cut, not only kill -9 (NORMAL would lose the last commits).
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(options.busy_timeout)
            // consumer_tokens names its endpoint (the schema's only key).
            .foreign_keys(true);
        // A file hookd cannot write is refused here, at once and in one
        // line; the pool would retry its connection for acquire_timeout,
        // then name only the timeout.
        let mut first = SqliteConnection::connect_with(&connect.clone().create_if_missing(true))
            .await
            .map_err(store_error)?;
        writable(&mut first).await.map_err(store_error)?;
        first.close().await.map_err(store_error)?;
        // The writer first: it creates the file and switches it to WAL
        // before any reader opens it (a read-only connection can do neither).
        let writer = pool(1, options)
            .after_connect(|conn, _| Box::pin(writable(conn)))
            .after_release(|conn, _| Box::pin(clean_after_release(conn)))
            .connect_with(connect.clone().create_if_missing(true))
            .await
            .map_err(store_error)?;
        let reader = pool(options.readers.max(1), options)
            .connect_with(connect.read_only(true))
            .await
            .map_err(store_error)?;
        let store = Self {
            writer,
            reader,
            path: path.to_path_buf(),
            pull_signals: signal::PullSignals::new(),
            count_minutes: true,
            clock: Clock::system(),
            riders: riding::Riders::default(),
            _lock: Arc::new(lock),
        };
        // SQLite made its -wal and -shm by now: checked too, and the files
        // checked before found again as they were (not swapped for a link).
        files::check_files(path)?;
        if options.migrate {
            store.migrate().await?;
            // Before anything reads the table (the due index is built from
            // it): a fan-out a stopped hookd had not finished.
            store.finish_fan_outs().await?;
        }
        Ok(store)
    }

    /// Applies the embedded schema's migrations not applied yet, after
    /// refusing a schema another build left (`migrations::mismatch`).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let exists: bool = sqlx::query_scalar(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
        )
        .fetch_one(&self.writer)
        .await
        .map_err(store_error)?;
        let applied: Vec<(i64, bool)> = if exists {
            sqlx::query_as(super::migrations::APPLIED)
                .fetch_all(&self.writer)
                .await
                .map_err(store_error)?
        } else {
            Vec::new()
        };
        if let Some(mismatch) = super::migrations::mismatch(&applied, &MIGRATOR, true) {
            return Err(StoreError::Database(Box::new(mismatch)));
        }
        MIGRATOR.run(&self.writer).await.map_err(|e| match e {
            sqlx::migrate::MigrateError::Execute(inner) => store_error(inner),
            other => StoreError::Database(cause(sqlx::Error::Migrate(Box::new(other)))),
        })
    }

    /// Whether the database answers and its file can grow: `SELECT 1`
    /// answers on a full disk, where every create fails, so readiness also
    /// writes a page beside the file (`files::room_to_write`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(&self.reader)
            .await
            .map_err(store_error)?;
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || files::room_to_write(&path))
            .await
            .map_err(|e| StoreError::Unavailable(Box::new(e)))?
            .map_err(|e| StoreError::Unavailable(Box::new(e)))
    }

    /// Closes both pools, then releases the file (when no clone is left).
    pub async fn close(self) {
        // Readers first: the last connection to close checkpoints the
        // write-ahead log into the file, which only the writer can.
        self.reader.close().await;
        self.writer.close().await;
    }

    /// How many recordings waiting for the writer a create wrote with its
    /// own commit (`riding`), since the store opened.
    pub fn recordings_ridden(&self) -> u64 {
        self.riders.taken()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The one connection that writes (a pool of one, so that writers queue
    /// in the pool rather than on SQLite's lock).
    pub fn writer(&self) -> &SqlitePool {
        &self.writer
    }

    /// Read-only connections.
    pub fn reader(&self) -> &SqlitePool {
        &self.reader
    }
}

/// Fails with SQLITE_READONLY when the writer cannot write. SQLite opens a
/// file it may not write read-only, silently, and the connection stays so
/// when the file becomes writable: before, hookd started on a read-only
/// file, answered 503 to every write, and went on answering 503 after the
/// file was made writable again. Now it refuses to start, in one line,
/// and a writer opened later is refused (503) until the file is writable.
async fn writable(conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
    // A write the ROLLBACK undoes: nothing reaches the file. (BEGIN
    // IMMEDIATE alone succeeds on a read-only connection.)
    let check = sqlx::raw_sql("BEGIN; PRAGMA user_version = 0; ROLLBACK")
        .execute(&mut *conn)
        .await;
    if check.is_err() {
        // Left open by the failed statement; the connection is dropped
        // anyway, but not with a transaction in it.
        let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
    }
    check?;
    Ok(())
}

/// Whether the writer goes back to the pool, or is closed so that the pool
/// opens a new one. A write that failed with a full disk (SQLITE_FULL) may
/// have been rolled back by SQLite itself: sqlx's ROLLBACK on drop then
/// fails and sqlx goes on counting a transaction that SQLite has not. Its
/// next `begin` is then a SAVEPOINT and its `commit` a RELEASE of that
/// savepoint inside a transaction that never ends: every later write was
/// answered 201 and never reached the file (seen with a full tmpfs: 294
/// notifications accepted, none stored). A connection that counts a
/// transaction after its release is in that state; it is closed.
async fn clean_after_release(conn: &mut SqliteConnection) -> Result<bool, sqlx::Error> {
    if conn.is_in_transaction() {
        // A ROLLBACK queued by a dropped transaction runs first.
        conn.ping().await?;
    }
    Ok(!conn.is_in_transaction())
}

fn pool(connections: u32, options: &SqliteOptions) -> SqlitePoolOptions {
    SqlitePoolOptions::new()
        .max_connections(connections)
        .min_connections(connections)
        .acquire_timeout(options.acquire_timeout)
        // A connection to a local file does not go stale; keeping it keeps
        // its prepared statements.
        .max_lifetime(None)
        .idle_timeout(None)
        // Nothing between hookd and the file can break a connection.
        .test_before_acquire(false)
}

#[cfg(test)]
mod tests {
    use sqlx::{Connection, SqliteConnection};

    /// `.cargo/config.toml` builds the bundled SQLite without the mutex
    /// every allocation took, without the page cache all connections
    /// shared behind one mutex, and without the modules hookd never uses;
    /// a build that lost those options (another LIBSQLITE3_FLAGS, a
    /// libsqlite3-sys that reads them no more) fails here rather than in a
    /// benchmark or a first build.
    #[tokio::test]
    async fn the_bundled_sqlite_is_built_without_its_process_wide_mutexes_or_unused_modules() {
        let mut conn = SqliteConnection::connect("sqlite::memory:").await.unwrap();
        let options: Vec<String> = sqlx::query_scalar("PRAGMA compile_options")
            .fetch_all(&mut conn)
            .await
            .unwrap();
        assert!(
            options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
            "{options:?}"
        );
        for left_out in [
            "ENABLE_MEMORY_MANAGEMENT",
            "ENABLE_FTS3",
            "ENABLE_FTS5",
            "ENABLE_RTREE",
            "ENABLE_DBSTAT_VTAB",
            "SOUNDEX",
        ] {
            assert!(!options.iter().any(|o| o == left_out), "{options:?}");
        }
        // What sqlx and the planner rely on stays.
        assert!(options.iter().any(|o| o == "ENABLE_STAT4"), "{options:?}");
        assert!(
            options.iter().any(|o| o == "ENABLE_COLUMN_METADATA"),
            "{options:?}"
        );
    }
}
