//! One behaviour test, both backends. A test is written once as
//! `async fn sentence(backend: Backend)`, and one `both!(sentence);` line
//! below it stamps out `sentence::postgres` (a database of its own from
//! `#[sqlx::test]`, the Redis index under a prefix of its own) and
//! `sentence::sqlite` (the embedded store in a temp dir, the in-process
//! index), so `scripts/test --test it -- sentence` runs both.

use std::sync::Arc;
use std::time::Duration;

use hookd::config::Settings;
use hookd::due::memory::MemoryIndex;
use hookd::due::redis::RedisIndex;
use hookd::due::SharedIndex;
use hookd::startup::{App, Role};
use hookd::store::postgres::PgStore;
use hookd::store::sqlite::{SqliteOptions, SqliteStore};
use sqlx::PgPool;
use tempfile::TempDir;
use tokio::sync::oneshot;

use crate::helpers::{
    http_client, new_prefix, redis_url, test_settings, test_settings_with_prefix, TestApp,
};

/// The store (and, with it, the due index) a test runs against.
pub enum Backend {
    /// Server mode: PostgreSQL and Redis, the index under one prefix for
    /// every process the test starts on the database, as a deployment's
    /// processes share one (`domain::index_owner`: a dispatcher on
    /// another index pauses).
    Postgres { pool: PgPool, prefix: String },
    /// Embedded mode: a SQLite file and an index in the app's process.
    Sqlite { store: SqliteStore, _dir: TempDir },
}

impl Backend {
    pub fn postgres(pool: PgPool) -> Self {
        Self::Postgres {
            pool,
            prefix: new_prefix(),
        }
    }

    /// A fresh, migrated database file in a temp dir of its own.
    pub async fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let store = SqliteStore::open(&dir.path().join("hookd.db"), &SqliteOptions::migrating())
            .await
            .expect("a fresh database file opens");
        Self::Sqlite { store, _dir: dir }
    }

    pub fn is_embedded(&self) -> bool {
        matches!(self, Self::Sqlite { .. })
    }

    /// A count from SQL both dialects read alike (no times: PostgreSQL
    /// stores timestamps, SQLite integers of microseconds).
    pub async fn count(&self, sql: &'static str) -> i64 {
        match self {
            Self::Postgres { pool, .. } => sqlx::query_scalar(sql).fetch_one(pool).await,
            Self::Sqlite { store, .. } => sqlx::query_scalar(sql).fetch_one(store.reader()).await,
        }
        .expect("the count runs")
    }

    /// `count` with `$1` bound to `id` (a uuid in PostgreSQL, its 16 bytes
    /// in SQLite).
    pub async fn count_for(&self, sql: &'static str, id: uuid::Uuid) -> i64 {
        match self {
            Self::Postgres { pool, .. } => sqlx::query_scalar(sql).bind(id).fetch_one(pool).await,
            Self::Sqlite { store, .. } => {
                sqlx::query_scalar(sql)
                    .bind(id)
                    .fetch_one(store.reader())
                    .await
            }
        }
        .expect("the count runs")
    }

    /// hookd on port 0 with the test settings (`overrides` on top).
    pub async fn spawn(&self) -> TestApp {
        self.spawn_with("").await
    }

    /// In server mode, on the test's index (every process the test
    /// starts shares it, before or beside another, as after a restart).
    pub async fn spawn_with(&self, overrides: &str) -> TestApp {
        let settings = match self {
            Self::Postgres { prefix, .. } => {
                test_settings_with_prefix(&redis_url(), prefix, overrides)
            }
            Self::Sqlite { .. } => test_settings(&redis_url(), overrides),
        };
        self.spawn_settings(settings).await
    }

    /// A second process beside `first`, as a deployment runs one: on the
    /// same store and, in server mode, the same Redis index (its prefix).
    /// Two processes on one database with indexes of their own would each
    /// refill theirs with every pending row, and deliver each twice.
    pub async fn spawn_beside(&self, first: &TestApp, overrides: &str) -> TestApp {
        let prefix = &first.state.settings.redis.prefix;
        self.spawn_settings(test_settings_with_prefix(&redis_url(), prefix, overrides))
            .await
    }

    pub async fn spawn_settings(&self, settings: Settings) -> TestApp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (app, redis) = match self {
            Self::Postgres { pool, .. } => {
                let index = RedisIndex::new(&settings.redis).unwrap();
                let due: SharedIndex = Arc::new(index.clone());
                let app = App::with_parts(
                    settings,
                    PgStore::new(pool.clone()),
                    due,
                    listener,
                    Role::All,
                );
                (app, Some(index))
            }
            Self::Sqlite { store, .. } => {
                let due: SharedIndex = Arc::new(MemoryIndex::new());
                let app = App::with_parts(settings, store.clone(), due, listener, Role::All);
                (app, None)
            }
        };
        start(app, redis).await
    }

    // Added for events.rs and pull*.rs.
    /// The store as housekeeping sees it (retention, sweeps), unsealed.
    pub fn housekeeping(&self) -> Box<dyn hookd::store::seams::HousekeepingStore> {
        match self {
            Self::Postgres { pool, .. } => Box::new(PgStore::new(pool.clone())),
            Self::Sqlite { store, .. } => Box::new(store.clone()),
        }
    }

    // Added for handoff.rs.
    /// A service on this backend's store and `due` beside the app's, as a
    /// second process's would be (its committer and hand-off, no API).
    pub fn service(&self, due: SharedIndex, settings: Settings) -> hookd::service::Service {
        let settings = Arc::new(settings);
        match self {
            Self::Postgres { pool, .. } => {
                let store = PgStore::new(pool.clone());
                hookd::service::Service::start(
                    Arc::new(store.clone()),
                    Arc::new(store),
                    due,
                    settings,
                )
            }
            Self::Sqlite { store, .. } => hookd::service::Service::start(
                Arc::new(store.clone()),
                Arc::new(store.clone()),
                due,
                settings,
            ),
        }
    }

    // Added for delivery.rs.

    /// Runs a statement both dialects read alike, `$1`, `$2`… bound to
    /// `texts`: a change made as another process (or an older hookd, or
    /// someone with write access to the database) would make it, behind
    /// the back of this app's caches. The rows it changed.
    pub async fn execute(&self, sql: &'static str, texts: &[&str]) -> u64 {
        match self {
            Self::Postgres { pool, .. } => {
                let mut query = sqlx::query(sql);
                for text in texts {
                    query = query.bind(*text);
                }
                query.execute(pool).await.map(|done| done.rows_affected())
            }
            Self::Sqlite { store, .. } => {
                let mut query = sqlx::query(sql);
                for text in texts {
                    query = query.bind(*text);
                }
                query
                    .execute(store.writer())
                    .await
                    .map(|done| done.rows_affected())
            }
        }
        .expect("the statement runs")
    }

    // For tests/it/{operator,endpoint_health,secrets,secrets_at_rest}.rs
    // (and `execute` above):
    // writes around hookd (a planted value, a back-dated failure) and raw
    // reads of what a backend stored.

    /// The text column `sql` reads (both dialects alike), as stored.
    pub async fn texts(&self, sql: &'static str) -> Vec<String> {
        match self {
            Self::Postgres { pool, .. } => sqlx::query_scalar(sql).fetch_all(pool).await,
            Self::Sqlite { store, .. } => sqlx::query_scalar(sql).fetch_all(store.reader()).await,
        }
        .expect("the read runs")
    }

    /// Endpoint `id` failing since `at`, without waiting for it.
    pub async fn fail_since(&self, id: uuid::Uuid, at: chrono::DateTime<chrono::Utc>) {
        let sql = "UPDATE endpoints SET failing_since = $1 WHERE id = $2";
        match self {
            Self::Postgres { pool, .. } => sqlx::query(sql)
                .bind(at)
                .bind(id)
                .execute(pool)
                .await
                .map(drop),
            Self::Sqlite { store, .. } => sqlx::query(sql)
                .bind(at.timestamp_micros())
                .bind(id)
                .execute(store.writer())
                .await
                .map(drop),
        }
        .expect("the update runs");
    }

    // Added for recover.rs (recover after an outage).

    /// The store's operations seam, unsealed (operations hold nothing
    /// sealed): what a runner of another process, or one that crashed,
    /// does.
    pub fn operations(&self) -> Box<dyn hookd::store::seams::OperationStore> {
        match self {
            Self::Postgres { pool, .. } => Box::new(PgStore::new(pool.clone())),
            Self::Sqlite { store, .. } => Box::new(store.clone()),
        }
    }

    /// Back-dates when each notification ended (`completed_at`).
    pub async fn ended_at(&self, rows: &[(uuid::Uuid, chrono::DateTime<chrono::Utc>)]) {
        let sql = "UPDATE notifications SET completed_at = $1 WHERE id = $2";
        for &(id, at) in rows {
            match self {
                Self::Postgres { pool, .. } => sqlx::query(sql)
                    .bind(at)
                    .bind(id)
                    .execute(pool)
                    .await
                    .map(drop),
                Self::Sqlite { store, .. } => sqlx::query(sql)
                    .bind(at.timestamp_micros())
                    .bind(id)
                    .execute(store.writer())
                    .await
                    .map(drop),
            }
            .expect("the update runs");
        }
    }
}

/// Runs `app` until the returned `TestApp` is dropped.
/// Runs `app` and waits until it serves: in server mode its first beat
/// (`domain::index_owner`) comes before, so a test that uses the index
/// directly finds it open.
pub async fn start(app: App, redis: Option<RedisIndex>) -> TestApp {
    keep_the_log();
    let base = format!("http://{}", app.local_addr());
    let state = app.state().clone();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(app.run(async {
        let _ = stopped.await;
    }));
    let client = http_client();
    crate::helpers::eventually(Duration::from_secs(30), "the app to serve", || async {
        let answer = client.get(format!("{base}/healthz")).send().await.ok()?;
        answer.status().is_success().then_some(())
    })
    .await;
    TestApp::new(base, client, state, redis, stop)
}

/// Sends what in-process apps log at `warn` and above (`HOOKD_TEST_LOG`
/// overrides the filter) to the test harness's captured output, so a
/// failing test prints its app's log: a 500's cause, a task that gave up.
/// A passing test's is dropped with the rest of its output.
fn keep_the_log() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let filter = std::env::var("HOOKD_TEST_LOG").unwrap_or_else(|_| "hookd=warn".into());
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_ansi(false)
            .with_test_writer()
            .try_init();
    });
}

/// Stamps out, for each named `async fn name(backend: Backend)`, the tests
/// `name::postgres` and `name::sqlite` (`#[macro_use]` in main.rs makes it
/// visible to every test module).
macro_rules! both {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[sqlx::test]
            async fn postgres(
                _: sqlx::postgres::PgPoolOptions,
                connect: sqlx::postgres::PgConnectOptions,
            ) {
                let (pool, _closes) = crate::helpers::test_pool(connect).await;
                super::$name(crate::backends::Backend::postgres(pool)).await
            }

            #[tokio::test]
            async fn sqlite() {
                super::$name(crate::backends::Backend::sqlite().await).await
            }
        }
    )+};
}
