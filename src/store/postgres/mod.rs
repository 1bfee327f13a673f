//! PostgreSQL, the server mode's source of truth: endpoints, notifications,
//! attempts, events and pull leases. Functions over one pool; every query
//! is written for the index it uses. `PgStore` implements the store's seams
//! (`seams.rs`); what it decides, it takes from `domain/`.

mod attempts;
mod backlog;
#[cfg(test)]
mod bounded_plan_tests;
mod breaker;
mod cancel;
mod consumer_tokens;
#[cfg(test)]
mod deadlock_tests;
mod delivery;
mod due_age;
mod endpoints;
mod events;
mod health;
mod housekeeping;
mod index_owner;
#[cfg(test)]
mod list_plan_tests;
mod list_queries;
mod most_attempted;
mod notifications;
mod operations;
mod operator;
mod ordering;
#[cfg(test)]
mod ordering_plan_tests;
mod ordering_retention;
#[cfg(test)]
mod partition_plan_tests;
mod partitions;
#[cfg(test)]
mod plan_tests;
mod portal;
mod pull;
mod pull_due;
mod recent_types;
mod recording;
mod releasing;
mod reseal;
mod rows;
mod seams;
mod stats;
#[cfg(test)]
mod store_error_tests;
mod writes;

use std::sync::LazyLock;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

use super::StoreError;
use crate::clock::Clock;
use crate::config::DatabaseSettings;

/// The schema's migrations (`./migrations`, embedded by `build.rs`).
pub static MIGRATOR: LazyLock<Migrator> =
    LazyLock::new(|| super::migrations::migrator(super::migrations::POSTGRES));

/// A driver error, kept as the neutral error's cause.
fn cause(error: sqlx::Error) -> super::Cause {
    Box::new(error)
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        match &error {
            // `Protocol`: what answered is not speaking PostgreSQL's
            // protocol as it should, as when another server took the
            // address of one that stopped (`unexpected response from
            // SSLRequest`), which was a 500 with PostgreSQL down.
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_) => StoreError::Unavailable(cause(error)),
            sqlx::Error::Database(db) => {
                if db.is_unique_violation() {
                    return StoreError::Conflict(db.constraint().unwrap_or("unique").to_string());
                }
                match db.code().as_deref() {
                    Some(code) if try_again_later(code) => StoreError::Unavailable(cause(error)),
                    // A value the column cannot hold (a NUL byte in a
                    // text), or one a CHECK refuses (23514): the request
                    // carried it, as SQLite's `SQLITE_CONSTRAINT` says.
                    Some(code) if code.starts_with("22") || code == "23514" => {
                        StoreError::InvalidValue(cause(error))
                    }
                    _ => StoreError::Database(cause(error)),
                }
            }
            _ => StoreError::Database(cause(error)),
        }
    }
}

/// Why the first connections could not be made, in one line naming the
/// server (never the password): the pool says only that it timed out
/// waiting, so one connection is tried on its own for its error (refused,
/// no such database, a password refused). `None` when that one connects.
pub(crate) async fn why_unreachable(
    options: &PgConnectOptions,
    wait: std::time::Duration,
) -> Option<String> {
    use sqlx::Connection;
    let server = format!(
        "PostgreSQL at {}:{} (database {})",
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or("of the user's name")
    );
    let why = match tokio::time::timeout(wait, sqlx::PgConnection::connect_with(options)).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            return None;
        }
        Ok(Err(sqlx::Error::Database(db))) => db.message().to_string(),
        Ok(Err(error)) => error.to_string(),
        Err(_) => format!(
            "no answer within {} ms (database.acquire_timeout_ms)",
            wait.as_millis()
        ),
    };
    Some(format!("cannot connect to {server}: {why}"))
}

/// Whether an error with this SQLSTATE passes, so the caller answers 503
/// and tries again later, as for SQLite's busy, locked and full
/// (`sqlite::errors`): class 08 (connection exception); 57P01-03
/// (admin shutdown, crash shutdown, cannot connect now); 40001 and 40P01
/// (a serialization failure, a deadlock PostgreSQL broke by failing this
/// transaction: `store::ordering` says where two ends can wait for each
/// other); class 53 (insufficient resources: a full disk, out of memory,
/// too many connections). 55P03 (`lock_timeout`) stays a database error:
/// the partition maintenance that sets it retries it itself.
fn try_again_later(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("57P")
        || code.starts_with("53")
        || code == "40001"
        || code == "40P01"
}

/// How many times a transaction runs at most when PostgreSQL keeps
/// failing it to break deadlocks (`try_again_after`).
const DEADLOCK_TRIES: u32 = 3;

/// Whether a transaction that failed with `error` on its `tries`th run
/// runs again (and counts it): when PostgreSQL failed it to break a
/// deadlock or a serialization conflict (`lost_a_deadlock`), up to
/// `DEADLOCK_TRIES` runs. The other side went on, and is done or nearly
/// when the transaction takes its locks again.
pub(super) fn try_again_after(error: &StoreError, tries: &mut u32) -> bool {
    if *tries >= DEADLOCK_TRIES || !lost_a_deadlock(error) {
        return false;
    }
    *tries += 1;
    tracing::debug!(%error, tries = *tries, "lost a deadlock; trying again");
    true
}

/// Whether PostgreSQL failed the transaction to break a deadlock (40P01)
/// or a serialization conflict (40001): the other side goes on, and the
/// same work tried again does not meet it.
fn lost_a_deadlock(error: &StoreError) -> bool {
    let StoreError::Unavailable(cause) = error else {
        return false;
    };
    cause
        .downcast_ref::<sqlx::Error>()
        .and_then(sqlx::Error::as_database_error)
        .and_then(|db| db.code())
        .is_some_and(|code| code == "40P01" || code == "40001")
}

/// Handle to the PostgreSQL store. Cheap to clone. It stores values exactly
/// as given and returns them as stored: sealing at rest is a wrapper over
/// any store (`store::sealing::Sealing`).
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    /// Whether recorded attempts add to the per-minute counts
    /// (`stats.count_minutes`).
    count_minutes: bool,
    /// The clock every rule reads: its time is bound into the statements,
    /// and PostgreSQL's own `now()` decides nothing (`crate::clock`).
    clock: Clock,
}

impl PgStore {
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            count_minutes: true,
            clock: Clock::system(),
        }
    }

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

    /// Connects (failing fast when the database is unreachable) and, when
    /// configured, applies migrations.
    pub async fn connect(settings: &DatabaseSettings) -> Result<Self, StoreError> {
        let options: PgConnectOptions =
            settings.url.expose().parse().map_err(|e| {
                StoreError::Database(cause(sqlx::Error::Configuration(Box::new(e))))
            })?;
        let options = options.application_name("hookd");
        let pool = match pool_options(settings).connect_with(options.clone()).await {
            Ok(pool) => pool,
            Err(error) => {
                let wait = std::time::Duration::from_millis(settings.acquire_timeout_ms);
                return Err(match why_unreachable(&options, wait).await {
                    Some(why) => StoreError::Unavailable(why.into()),
                    None => error.into(),
                });
            }
        };
        let store = Self::new(pool);
        if settings.migrate {
            store.migrate().await?;
        } else {
            store.schema_mismatch(false).await?;
        }
        Ok(store)
    }

    /// A pool on `database.read_url` (the API's replica), `None` when it
    /// is not set. Lazy: hookd starts while the replica is down, and reads
    /// go to the primary until it is back (`store::replica`).
    pub fn replica(settings: &DatabaseSettings) -> Result<Option<Self>, StoreError> {
        if settings.read_url.expose().is_empty() {
            return Ok(None);
        }
        let options: PgConnectOptions =
            settings.read_url.expose().parse().map_err(|e| {
                StoreError::Database(cause(sqlx::Error::Configuration(Box::new(e))))
            })?;
        // A replica that does not answer costs at most a second before the
        // primary is asked (and then none for a while: `store::replica`).
        let wait = std::time::Duration::from_millis(settings.acquire_timeout_ms.min(1000));
        let pool = pool_options(settings)
            .acquire_timeout(wait)
            .connect_lazy_with(options.application_name("hookd"));
        Ok(Some(Self::new(pool)))
    }

    /// Applies the migrations not applied yet, after refusing a schema
    /// another build left (`migrations::mismatch`).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        self.schema_mismatch(true).await?;
        MIGRATOR.run(&self.pool).await.map_err(|e| match e {
            sqlx::migrate::MigrateError::Execute(inner) => StoreError::from(inner),
            other => StoreError::Database(cause(sqlx::Error::Migrate(Box::new(other)))),
        })
    }

    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Refuses a schema this build must not run against (or, `migrating`,
    /// migrate): `migrations::mismatch` of the versions applied.
    async fn schema_mismatch(&self, migrating: bool) -> Result<(), StoreError> {
        let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
            .fetch_one(&self.pool)
            .await?;
        let applied: Vec<(i64, bool)> = if exists {
            sqlx::query_as(super::migrations::APPLIED)
                .fetch_all(&self.pool)
                .await?
        } else {
            Vec::new()
        };
        match super::migrations::mismatch(&applied, &MIGRATOR, migrating) {
            Some(mismatch) => Err(StoreError::Database(Box::new(mismatch))),
            None => Ok(()),
        }
    }
}

/// How hookd's pools are set up (`PgStore::connect`; the benchmark's floor
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
                //
                // JIT is off: PostgreSQL decides it from the plan's cost,
                // and a generic plan over the partitioned history (one
                // index scan per day, ~40 days) is costed as if each day
                // were read, so a list of 50 rows by endpoint with 10 M
                // stored spent 130 ms compiling expressions to run in
                // 1 ms. hookd's statements are all short; none gains
                // from JIT.
                sqlx::Executor::execute(
                    &mut *conn,
                    "SET plan_cache_mode = force_generic_plan; SET jit = off",
                )
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
