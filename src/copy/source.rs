//! The embedded database, read: taken from any hookd that might use it,
//! opened read-only, checked to be a hookd database at this build's
//! schema, and read a page at a time in primary key order.
//!
//! A running hookd holds the file's lock (`store::sqlite::lock`): the copy
//! refuses then, naming the process, rather than copy a file that keeps
//! changing (its pending notifications would then be delivered by both
//! modes). The copy takes the lock itself, so that no hookd starts on the
//! file while it reads. The database is opened read-only (never created,
//! never migrated, never checkpointed: it and its write-ahead log stay
//! byte for byte as they were; the lock file and SQLite's shared-memory
//! index `-shm`, which every reader of a WAL uses, are all it may write),
//! and read in one transaction: every table from the same snapshot. A
//! file a killed hookd left is read whole, its WAL's commits included.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use futures::TryStreamExt;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{AssertSqlSafe, Connection};

use super::tables::Table;
use super::values::{null_key, Key, ReadError, Value};
use super::CopyError;
use crate::store::sqlite::{check_files, FileLock, LockError, MIGRATOR};

/// The source, open and locked until dropped.
pub(crate) struct Source {
    conn: SqliteConnection,
    path: PathBuf,
    // Declared last: released after the connection is closed.
    _lock: FileLock,
}

/// A page of rows, each as `Table::columns` lists them, and where it ended.
pub(crate) struct Page {
    pub rows: Vec<Vec<Value>>,
    /// The last row's key: where the next page starts. `None` when the
    /// page was the last.
    pub next: Option<Vec<Key>>,
}

impl Source {
    /// Locks and opens the database file at `path`.
    pub(crate) async fn open(path: &Path) -> Result<Self, CopyError> {
        // Before the lock: taking it would create the lock file beside a
        // file that is not there. (A link is not followed: the check below
        // refuses it.)
        if std::fs::symlink_metadata(path).is_err() {
            return Err(CopyError::NoSource(path.to_path_buf()));
        }
        // The file and the files beside it are the account's own, as
        // `hookd serve` requires (the -shm a reader may create takes the
        // file's mode).
        check_files(path)?;
        let lock = FileLock::acquire(path).await.map_err(|e| match e {
            in_use @ LockError::InUse { .. } => CopyError::SourceInUse(in_use),
            other => CopyError::SourceLock(other),
        })?;
        let options = SqliteConnectOptions::new()
            .filename(path)
            .read_only(true)
            .create_if_missing(false);
        let mut conn = SqliteConnection::connect_with(&options)
            .await
            .map_err(|e| source_error(path, e))?;
        sqlx::query("BEGIN")
            .execute(&mut conn)
            .await
            .map_err(|e| source_error(path, e))?;
        let mut source = Self {
            conn,
            path: path.to_path_buf(),
            _lock: lock,
        };
        source.check_schema().await?;
        Ok(source)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Refuses a file that is not a hookd database, or one whose embedded
    /// schema is not the one this build reads.
    async fn check_schema(&mut self) -> Result<(), CopyError> {
        let has_history: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '_sqlx_migrations')",
        )
        .fetch_one(&mut self.conn)
        .await
        .map_err(|e| source_error(&self.path, e))?;
        if !has_history {
            return Err(CopyError::NotHookd(self.path.clone()));
        }
        let applied: Vec<i64> = sqlx::query_scalar(
            "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version",
        )
        .fetch_all(&mut self.conn)
        .await
        .map_err(|e| source_error(&self.path, e))?;
        let known: Vec<i64> = MIGRATOR.iter().map(|m| m.version).collect();
        if applied != known {
            return Err(CopyError::SourceSchema {
                path: self.path.clone(),
                applied,
                known,
            });
        }
        let pending: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM fanout_plans)")
            .fetch_one(&mut self.conn)
            .await
            .map_err(|e| source_error(&self.path, e))?;
        if pending {
            return Err(CopyError::FanOutPending(self.path.clone()));
        }
        Ok(())
    }

    /// The tables the file has (SQLite's own left out).
    pub(crate) async fn tables(&mut self) -> Result<BTreeSet<String>, CopyError> {
        let names: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )
        .fetch_all(&mut self.conn)
        .await
        .map_err(|e| source_error(&self.path, e))?;
        Ok(names.into_iter().collect())
    }

    /// The columns `table` has in the file.
    pub(crate) async fn columns(&mut self, table: &str) -> Result<BTreeSet<String>, CopyError> {
        let names: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info(?)")
            .bind(table)
            .fetch_all(&mut self.conn)
            .await
            .map_err(|e| source_error(&self.path, e))?;
        Ok(names.into_iter().collect())
    }

    /// How many rows `table` has.
    pub(crate) async fn count(&mut self, table: &Table) -> Result<u64, CopyError> {
        let sql = format!("SELECT count(*) FROM {}", table.name);
        let count: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
            .fetch_one(&mut self.conn)
            .await
            .map_err(|e| read_error(table, e.into()))?;
        Ok(count as u64)
    }

    /// Up to `limit` rows of `table` after the key `after` (from the start
    /// when `None`), in key order, on the primary key; fewer when their
    /// values reach `budget` bytes, so that a page of large payloads stays
    /// small in memory.
    pub(crate) async fn page(
        &mut self,
        table: &Table,
        after: Option<&[Key]>,
        limit: usize,
        budget: usize,
    ) -> Result<Page, CopyError> {
        let key = table.key_list();
        let filter = match after {
            None => String::new(),
            Some(keys) => {
                let marks = vec!["?"; keys.len()].join(", ");
                format!("WHERE ({key}) > ({marks})")
            }
        };
        let sql = format!(
            "SELECT {} FROM {} {filter} ORDER BY {key} LIMIT ?",
            table.select_list(),
            table.name
        );
        let mut query = sqlx::query(AssertSqlSafe(sql));
        for k in after.unwrap_or_default() {
            query = k.bind(query);
        }
        let mut found = query.bind(limit as i64).fetch(&mut self.conn);
        let mut rows = Vec::new();
        let mut bytes = 0;
        let mut full = false;
        while let Some(row) = found
            .try_next()
            .await
            .map_err(|e| read_error(table, e.into()))?
        {
            let values = table
                .columns
                .iter()
                .map(|c| c.kind.read(&row, c.name))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| read_error(table, e))?;
            bytes += values.iter().map(Value::size).sum::<usize>();
            rows.push(values);
            if rows.len() == limit || bytes >= budget {
                full = true;
                break;
            }
        }
        drop(found);
        let next = match rows.last() {
            Some(last) if full => Some(
                table
                    .key_positions()
                    .into_iter()
                    .map(|at| last[at].key())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| read_error(table, null_key().into()))?,
            ),
            _ => None,
        };
        Ok(Page { rows, next })
    }

    /// Ends the read transaction and closes the file, then lets the lock go.
    pub(crate) async fn close(mut self) {
        // A read transaction: ending it changes nothing.
        let _ = sqlx::query("COMMIT").execute(&mut self.conn).await;
        let _ = self.conn.close().await;
    }
}

fn source_error(path: &Path, source: sqlx::Error) -> CopyError {
    CopyError::Source {
        path: path.to_path_buf(),
        source,
    }
}

fn read_error(table: &Table, source: ReadError) -> CopyError {
    CopyError::Read {
        table: table.name,
        source,
    }
}
