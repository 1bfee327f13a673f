//! The server-mode database, written: connected, migrated to this build's
//! schema, checked for what it already holds, and given one page of rows
//! per statement.
//!
//! Each page is one `INSERT … ON CONFLICT (primary key) DO NOTHING`: a
//! statement is its own transaction, so a page is in or out whole, and a
//! row already there (from an earlier run, whole or interrupted) is left
//! as it is and counted as skipped. A run that stops midway is finished by
//! running it again (with `--merge`, since the target then holds rows).

use std::collections::BTreeSet;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{AssertSqlSafe, PgPool, Postgres, QueryBuilder};

use super::tables::{Table, TABLES};
use super::values::Value;
use super::CopyError;
use crate::domain::operator_event::OPERATOR_ENDPOINT_ID;
use crate::store::postgres::MIGRATOR;

/// Rows counted at most per table when telling what a target holds.
const SHOWN: i64 = 1000;

/// The target database.
pub(crate) struct Target {
    pool: PgPool,
}

/// How long the copy waits for the target's first connection.
const CONNECT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Target {
    /// Connects to `url` (one connection: the copy writes one page at a
    /// time).
    /// Connects, or says in one line why it cannot (refused, no such
    /// database, a password refused) within `CONNECT_WAIT`, where the pool
    /// said only, after 30 s, that it timed out.
    pub(crate) async fn connect(url: &str) -> Result<Self, CopyError> {
        let options: PgConnectOptions = url
            .parse()
            .map_err(|e| CopyError::Target(sqlx::Error::Configuration(Box::new(e))))?;
        let options = options.application_name("hookd copy");
        // One connection first, for its own error: the pool's would say
        // only that it timed out waiting.
        if let Some(why) = crate::store::postgres::why_unreachable(&options, CONNECT_WAIT).await {
            return Err(CopyError::TargetUnreachable(why));
        }
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(CONNECT_WAIT)
            .connect_with(options)
            .await
            .map_err(CopyError::Target)?;
        Ok(Self { pool })
    }

    /// Applies PostgreSQL's migrations not applied yet: the tables must be
    /// there, and at the schema this build writes.
    pub(crate) async fn migrate(&self) -> Result<(), CopyError> {
        MIGRATOR.run(&self.pool).await.map_err(CopyError::Migrate)
    }

    /// The columns `table` has in the target.
    pub(crate) async fn columns(&self, table: &str) -> Result<BTreeSet<String>, CopyError> {
        let names: Vec<String> = sqlx::query_scalar(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1",
        )
        .bind(table)
        .fetch_all(&self.pool)
        .await
        .map_err(CopyError::Target)?;
        Ok(names.into_iter().collect())
    }

    /// What the target holds, as `(table, rows)` for each table that is
    /// not empty (rows counted up to `SHOWN` + 1). The operator endpoint
    /// is not counted: a server makes it at start from its configuration,
    /// so it is no data of its own; the copy leaves it as the server made
    /// it.
    pub(crate) async fn holdings(&self) -> Result<Vec<(&'static str, i64)>, CopyError> {
        let mut held = Vec::new();
        for table in &TABLES {
            let except = if table.name == "endpoints" {
                "WHERE id <> $2"
            } else {
                ""
            };
            let sql = format!(
                "SELECT count(*) FROM (SELECT 1 FROM {} {except} LIMIT $1) AS t",
                table.name
            );
            let mut query = sqlx::query_scalar(AssertSqlSafe(sql)).bind(SHOWN + 1);
            if table.name == "endpoints" {
                query = query.bind(OPERATOR_ENDPOINT_ID);
            }
            let rows: i64 = query
                .fetch_one(&self.pool)
                .await
                .map_err(CopyError::Target)?;
            if rows > 0 {
                held.push((table.name, rows));
            }
        }
        Ok(held)
    }

    /// Inserts `rows` of `table` but those whose primary key the target
    /// has; how many it inserted.
    pub(crate) async fn insert(
        &self,
        table: &Table,
        rows: Vec<Vec<Value>>,
    ) -> Result<u64, CopyError> {
        if rows.is_empty() {
            return Ok(0);
        }
        // A notification's key is unique in `notification_keys` (server
        // mode's `notifications` is partitioned): each copied keyed row
        // gets its key row in the same statement.
        let keyed = table.name == "notifications";
        let mut insert: QueryBuilder<Postgres> = QueryBuilder::new(format!(
            "{}INSERT INTO {} ({}) ",
            if keyed { "WITH copied AS (" } else { "" },
            table.name,
            table.names()
        ));
        insert.push_values(rows, |mut row, values| {
            for value in values {
                value.bind(&mut row);
            }
        });
        // Only the primary key: a row that clashes with another row on a
        // unique index (a uid, an idempotency key) is an error, not a row
        // silently left behind.
        insert.push(format!(" ON CONFLICT ({}) DO NOTHING", table.key_list()));
        if keyed {
            insert.push(
                " RETURNING id, key, endpoint_id), keys AS ( \
                 INSERT INTO notification_keys (key, endpoint_id, id) \
                 SELECT key, endpoint_id, id FROM copied WHERE key IS NOT NULL) \
                 SELECT count(*) FROM copied",
            );
            let copied: i64 = insert
                .build_query_scalar()
                .fetch_one(&self.pool)
                .await
                .map_err(|e| write_error(table, e))?;
            return Ok(copied as u64);
        }
        let done = insert
            .build()
            .execute(&self.pool)
            .await
            .map_err(|e| write_error(table, e))?;
        Ok(done.rows_affected())
    }

    pub(crate) async fn close(self) {
        self.pool.close().await;
    }
}

/// The target's holdings, as words: "endpoints: 3, notifications: 1000+".
pub(crate) fn describe(held: &[(&str, i64)]) -> String {
    held.iter()
        .map(|(table, rows)| {
            if *rows > SHOWN {
                format!("{table}: {SHOWN}+")
            } else {
                format!("{table}: {rows}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_error(table: &Table, source: sqlx::Error) -> CopyError {
    if let sqlx::Error::Database(db) = &source {
        if db.is_unique_violation() {
            return CopyError::Clash {
                table: table.name,
                constraint: db.constraint().unwrap_or("a unique index").to_string(),
            };
        }
    }
    CopyError::Write {
        table: table.name,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holdings_read_as_counts_with_a_bound() {
        assert_eq!(
            describe(&[("endpoints", 3), ("notifications", 1001)]),
            "endpoints: 3, notifications: 1000+"
        );
    }
}
