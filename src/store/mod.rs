//! PostgreSQL, the source of truth: endpoints, notifications and attempts.
//! Functions over one pool; every query is written for the index it uses.

pub mod attempts;
pub mod cancel;
pub mod consumer_tokens;
mod debug;
pub mod delivery;
pub mod endpoints;
pub mod events;
pub mod health;
pub mod housekeeping;
pub mod notifications;
mod operator;
#[cfg(test)]
mod plan_tests;
pub mod pull;
pub mod pull_due;
pub mod recording;
pub mod reseal;
mod sealing;
pub mod seams;
pub mod sqlite;
pub mod writes;

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use std::sync::Arc;

use crate::config::DatabaseSettings;
use crate::domain::sealed::{Keyring, SealError};

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached (connection refused, pool exhausted...):
    /// the API answers 503 and the dispatcher waits.
    // The cause is in the message rather than the error chain, so it is
    // printed once wherever the error is.
    #[error("database unavailable: {0}")]
    Unavailable(sqlx::Error),
    /// A unique constraint refused the write; the name says which.
    #[error("conflict on {0}")]
    Conflict(String),
    /// PostgreSQL refused a value (class 22, e.g. a NUL byte in text).
    #[error("invalid value: {0}")]
    InvalidValue(sqlx::Error),
    #[error("database error: {0}")]
    Database(sqlx::Error),
    /// A value sealed at rest does not open: its key is not configured, or
    /// it was altered.
    #[error("{what}: {error}")]
    Sealed { what: String, error: SealError },
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        match &error {
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Tls(_) => StoreError::Unavailable(error),
            sqlx::Error::Database(db) => {
                if db.is_unique_violation() {
                    return StoreError::Conflict(db.constraint().unwrap_or("unique").to_string());
                }
                // Class 08 (connection exception), 57P01-03 (admin shutdown,
                // crash shutdown, cannot connect now) mean "try again later".
                match db.code().as_deref() {
                    Some(code) if code.starts_with("08") || code.starts_with("57P") => {
                        StoreError::Unavailable(error)
                    }
                    Some(code) if code.starts_with("22") => StoreError::InvalidValue(error),
                    _ => StoreError::Database(error),
                }
            }
            _ => StoreError::Database(error),
        }
    }
}

/// Handle to the PostgreSQL store. Cheap to clone. It seals signing secrets
/// and custom header values on the way in and opens them on the way out, so
/// its callers only ever see plaintext.
#[derive(Clone)]
pub struct Store {
    pool: PgPool,
    keys: Arc<Keyring>,
}

impl Store {
    /// A store without keys: values are stored as given.
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            keys: Arc::new(Keyring::default()),
        }
    }

    /// The same store, sealing with `keys` (`secrets.keys`).
    pub fn with_secrets(self, keys: Keyring) -> Self {
        Self {
            keys: Arc::new(keys),
            ..self
        }
    }

    pub fn keys(&self) -> &Keyring {
        &self.keys
    }

    /// Connects (failing fast when the database is unreachable) and, when
    /// configured, applies migrations.
    pub async fn connect(settings: &DatabaseSettings) -> Result<Self, StoreError> {
        let options: PgConnectOptions = settings
            .url
            .expose()
            .parse()
            .map_err(|e| StoreError::Database(sqlx::Error::Configuration(Box::new(e))))?;
        let pool = pool_options(settings)
            .connect_with(options.application_name("hookd"))
            .await?;
        let store = Self::new(pool);
        if settings.migrate {
            store.migrate().await?;
        }
        Ok(store)
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        MIGRATOR.run(&self.pool).await.map_err(|e| match e {
            sqlx::migrate::MigrateError::Execute(inner) => StoreError::from(inner),
            other => StoreError::Database(sqlx::Error::Migrate(Box::new(other))),
        })
    }

    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

/// How hookd's pools are set up (`Store::connect`; the benchmark's floor
/// dispatcher too, so that it pays what hookd pays per statement).
pub fn pool_options(settings: &DatabaseSettings) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(settings.max_connections)
        // Opened at start and kept (see `database.min_connections`).
        .min_connections(settings.min_connections.min(settings.max_connections))
        // sqlx pings a connection when it goes back to the pool (a round
        // trip that flushes anything a cancelled query left), so a
        // second ping when it is taken out again only doubles those
        // round trips (together ~0.8 per notification at 4,000/s, one
        // per statement). A connection that broke while idle fails its next
        // statement, which answers 503 like any failure of PostgreSQL.
        .test_before_acquire(false)
        .after_connect(|conn, _| {
            Box::pin(async move {
                // hookd's statements are prepared once per connection;
                // by default PostgreSQL still plans each execution anew
                // while the plan for its parameters looks cheaper than
                // the generic one, which for a batch of a few rows is
                // always: planning the recording statement took 0.67 ms
                // of every 0.5 ms execution at 1,000 notifications/s.
                // Every statement is written so its generic plan is the
                // right one: values a partial index's predicate needs
                // are literals, never parameters, and a batch statement
                // is driven by its batch, which a generic plan counts as
                // 10 rows (`recording::RECORD_ATTEMPTS`, `plan_tests`).
                sqlx::Executor::execute(&mut *conn, "SET plan_cache_mode = force_generic_plan")
                    .await
                    .map(|_| ())
            })
        })
        .acquire_timeout(Duration::from_millis(settings.acquire_timeout_ms))
}

/// A PostgreSQL array literal (`{1,2,3}`) of integers: how a batch insert
/// passes each row's schedule as one text value of an array.
pub(super) fn pg_array_literal(values: &[i64]) -> String {
    let inner: Vec<String> = values.iter().map(i64::to_string).collect();
    format!("{{{}}}", inner.join(","))
}
