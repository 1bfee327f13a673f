//! The embedded mode's store: its file opened and locked, and the walk
//! that reseals its values followed by a checkpoint that drops the old
//! ones.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;

use super::Reseal;
use crate::config::Settings;
use crate::store::sqlite::{SqliteOptions, SqliteStore};

/// Locks and opens the embedded database file at `path` (its directory
/// created 0700 if missing), applying migrations if `migrate`. A second
/// process on the same file is refused with one line naming the pid
/// holding it; a directory or file open to other accounts, or a link, with
/// one line naming it and the fix (`store::sqlite::files`).
pub async fn open_embedded(
    settings: &Settings,
    path: &Path,
    migrate: bool,
) -> anyhow::Result<SqliteStore> {
    if std::fs::symlink_metadata(path).is_err() {
        // A server-mode deployment that forgot its two URLs would otherwise
        // start quietly on an empty file, its backlog left in PostgreSQL.
        tracing::warn!(
            database = %path.display(),
            "creating a new database file: embedded mode, as database.url and redis.url are empty (server mode sets both)"
        );
    }
    let wait = Duration::from_millis(settings.embedded.busy_timeout_ms);
    let options = SqliteOptions {
        busy_timeout: wait,
        acquire_timeout: wait,
        readers: settings.embedded.readers,
        migrate,
        private_dir: settings.embedded.data_dir.is_some(),
    };
    SqliteStore::open(path, &options)
        .await
        .map(|store| store.counting_minutes(settings.stats.count_minutes))
        .with_context(|| format!("cannot use the database file {}", path.display()))
}

/// The embedded walk, then the file and its write-ahead log rid of the
/// values it replaced (`SqliteStore::forget_old_values`): with keys set,
/// a plaintext secret written before them is left in neither.
pub(super) fn forgetting_old_values(walk: Reseal, store: SqliteStore) -> Reseal {
    Box::new(move |token| {
        Box::pin(async move {
            walk(token.clone()).await;
            if token.is_cancelled() {
                return;
            }
            match store.forget_old_values().await {
                Ok(true) => tracing::info!(
                    "the database file and its write-ahead log keep no value the walk replaced"
                ),
                Ok(false) => tracing::warn!(
                    "the write-ahead log could not be truncated after the walk (a long read); values it replaced stay in it until the next checkpoint"
                ),
                Err(error) => tracing::warn!(%error, "the write-ahead log could not be truncated after the walk"),
            }
        })
    })
}
