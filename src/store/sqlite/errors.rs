//! SQLite's errors in the store's terms: what the API answers 503 for
//! (try again later), 409 (a unique index refused the write, named as
//! PostgreSQL names it) and 422 (a value the schema refuses).

use crate::store::StoreError;

// Primary result codes (https://www.sqlite.org/rescode.html); sqlx reports
// the extended code, whose low byte is the primary one.
const SQLITE_NOMEM: i64 = 7;
const SQLITE_BUSY: i64 = 5;
const SQLITE_LOCKED: i64 = 6;
const SQLITE_READONLY: i64 = 8;
const SQLITE_IOERR: i64 = 10;
const SQLITE_FULL: i64 = 13;
const SQLITE_CANTOPEN: i64 = 14;
const SQLITE_TOOBIG: i64 = 18;
const SQLITE_CONSTRAINT: i64 = 19;
const SQLITE_MISMATCH: i64 = 20;

/// A unique violation's text names the columns of a plain index
/// (`UNIQUE constraint failed: endpoints.uid`) and the name of an index on
/// an expression (`…: index 'events_key'`). These are the schema's unique
/// indexes on columns, by the columns SQLite names, with PostgreSQL's names
/// for them; `tests::every_unique_index_has_its_postgresql_name` reads the
/// schema so that a new unique index cannot be missed here.
const UNIQUE_INDEXES: &[(&str, &str)] = &[
    ("endpoints.id", "endpoints_pkey"),
    ("endpoints.uid", "endpoints_uid_key"),
    ("notifications.id", "notifications_pkey"),
    (
        "notifications.key, notifications.endpoint_id",
        "notifications_key",
    ),
    ("attempts.notification_id, attempts.number", "attempts_pkey"),
    ("events.id", "events_pkey"),
    ("consumer_tokens.endpoint_id", "consumer_tokens_pkey"),
    ("consumer_tokens.digest", "consumer_tokens_digest_key"),
    ("operations.id", "operations_pkey"),
    (
        "operations.endpoint_id, operations.kind",
        "operations_running_per_endpoint",
    ),
    ("endpoint_circuits.endpoint_id", "endpoint_circuits_pkey"),
    ("portal_owners.owner", "portal_owners_pkey"),
    (
        "order_keys.endpoint_id, order_keys.order_key",
        "order_keys_pkey",
    ),
    (
        "minute_stats.endpoint_id, minute_stats.minute",
        "minute_stats_pkey",
    ),
    (
        "minute_totals.minute, minute_totals.shard",
        "minute_totals_pkey",
    ),
    (
        "hour_failing.hour, hour_failing.endpoint_id",
        "hour_failing_pkey",
    ),
    (
        "owner_minute_stats.owner, owner_minute_stats.minute, owner_minute_stats.shard",
        "owner_minute_stats_pkey",
    ),
    // SQLite's own (`fanout`): PostgreSQL writes a fan-out in one statement.
    ("fanout_plans.event_id", "fanout_plans_pkey"),
    (
        "due_indexes.identity, due_indexes.process",
        "due_indexes_pkey",
    ),
];

/// The cause a `StoreError` keeps. Generic, so that it serves the store's
/// error as it is on this branch (a `sqlx::Error`) and as reshaped (boxed).
pub(crate) fn cause<C: From<sqlx::Error>>(error: sqlx::Error) -> C {
    C::from(error)
}

/// The store's error for a sqlx error from SQLite.
pub fn store_error(error: sqlx::Error) -> StoreError {
    match &error {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => StoreError::Unavailable(cause(error)),
        sqlx::Error::Database(db) => {
            let code = db.code().and_then(|c| c.parse::<i64>().ok()).unwrap_or(0);
            match code & 0xff {
                // Busy or locked: another connection's transaction outlasted
                // the busy timeout. I/O errors, a full disk, a file made
                // read-only or gone: all can pass (space comes back, the
                // operator fixes the mount) and nothing was written, so
                // the caller answers 503 and tries again later.
                SQLITE_BUSY | SQLITE_LOCKED | SQLITE_IOERR | SQLITE_FULL | SQLITE_READONLY
                | SQLITE_CANTOPEN | SQLITE_NOMEM => StoreError::Unavailable(cause(error)),
                SQLITE_CONSTRAINT if db.is_unique_violation() => {
                    StoreError::Conflict(conflict_name(db.message()))
                }
                // A check, NOT NULL or a STRICT column's type refused it.
                SQLITE_CONSTRAINT | SQLITE_MISMATCH | SQLITE_TOOBIG => {
                    StoreError::InvalidValue(cause(error))
                }
                _ => StoreError::Database(cause(error)),
            }
        }
        _ => StoreError::Database(cause(error)),
    }
}

/// The name of the unique index a violation's message names, as
/// PostgreSQL would name it; the message's own words when it is unknown.
pub(crate) fn conflict_name(message: &str) -> String {
    let what = message
        .strip_prefix("UNIQUE constraint failed: ")
        .unwrap_or(message);
    if let Some(index) = what
        .strip_prefix("index '")
        .and_then(|rest| rest.strip_suffix('\''))
    {
        return index.to_string();
    }
    UNIQUE_INDEXES
        .iter()
        .find(|(columns, _)| *columns == what)
        .map_or_else(|| what.to_string(), |(_, name)| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::{SqliteOptions, SqliteStore};

    #[test]
    fn a_violation_of_an_index_on_columns_is_named_as_postgresql_names_it() {
        assert_eq!(
            conflict_name("UNIQUE constraint failed: endpoints.uid"),
            "endpoints_uid_key"
        );
        assert_eq!(
            conflict_name("UNIQUE constraint failed: index 'events_key'"),
            "events_key"
        );
        assert_eq!(
            conflict_name("UNIQUE constraint failed: other.x"),
            "other.x"
        );
    }

    /// Reads every unique index of the migrated schema and checks that the
    /// message SQLite would give for it maps to the PostgreSQL name.
    #[tokio::test]
    async fn every_unique_index_has_its_postgresql_name() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("hookd.db"), &SqliteOptions::migrating())
            .await
            .unwrap();
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' \
             AND name NOT LIKE 'sqlite%'",
        )
        .fetch_all(store.reader())
        .await
        .unwrap();
        let mut checked = 0;
        for table in &tables {
            let indexes: Vec<(String, i64, String)> = sqlx::query_as(
                "SELECT name, \"unique\", origin FROM pragma_index_list(?) WHERE \"unique\" = 1",
            )
            .bind(table)
            .fetch_all(store.reader())
            .await
            .unwrap();
            for (index, _, origin) in indexes {
                let columns: Vec<Option<String>> =
                    sqlx::query_scalar("SELECT name FROM pragma_index_info(?) ORDER BY seqno")
                        .bind(&index)
                        .fetch_all(store.reader())
                        .await
                        .unwrap();
                let message = if columns.iter().any(Option::is_none) {
                    format!("UNIQUE constraint failed: index '{index}'")
                } else {
                    let named: Vec<String> = columns
                        .iter()
                        .flatten()
                        .map(|c| format!("{table}.{c}"))
                        .collect();
                    format!("UNIQUE constraint failed: {}", named.join(", "))
                };
                let expected = if origin == "pk" {
                    format!("{table}_pkey")
                } else {
                    index.clone()
                };
                assert_eq!(conflict_name(&message), expected, "{index} of {table}");
                checked += 1;
            }
        }
        assert_eq!(checked, UNIQUE_INDEXES.len() + 1, "plus events_key");
    }
}
