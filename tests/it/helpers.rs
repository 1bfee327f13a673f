//! Test harness: hookd on port 0 against the real PostgreSQL (a database per
//! test, from `#[sqlx::test]`, on a pool of the test's own: `test_pool`) and
//! the real Redis (a key prefix per test) that `scripts/test` starts;
//! private servers for tests that stop one (`servers`); the real binary as
//! a process of its own (`process`).

use std::future::Future;
use std::net::TcpListener as StdListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hookd::config::Settings;
use hookd::due::redis::RedisIndex;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio::sync::oneshot;

use crate::backends::Backend;

mod process;
mod servers;
pub use process::HookdProcess;
pub use servers::{as_postgres, is_root, PgServer, RedisServer};

pub const TOKEN: &str = "test-token-0123456789abcdef";

pub fn redis_url() -> String {
    std::env::var("REDIS_URL").expect("REDIS_URL is set: run the suite with scripts/test")
}

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub state: hookd::api::AppState,
    /// The app's due index when it is Redis (server mode).
    redis: Option<RedisIndex>,
    stop: Option<oneshot::Sender<()>>,
}

/// Settings for a test: its own Redis prefix, loopback receivers allowed,
/// a bearer token, and `overrides` (TOML) on top. The circuit breaker
/// opens only after 1000 failures, so that tests of other things can fail
/// an endpoint many times (tests/it/circuit_breaker.rs sets its own).
pub fn test_settings(redis_url: &str, overrides: &str) -> Settings {
    test_settings_with_prefix(redis_url, &new_prefix(), overrides)
}

pub fn new_prefix() -> String {
    format!("test-{}", uuid::Uuid::now_v7().simple())
}

pub fn test_settings_with_prefix(redis_url: &str, prefix: &str, overrides: &str) -> Settings {
    let base = format!(
        "[redis]\nurl = \"{redis_url}\"\nprefix = \"{prefix}\"\n\
         [api]\ntokens = [\"{TOKEN}\"]\n\
         [sender]\nallow_networks = [\"127.0.0.0/8\"]\n\
         [dispatcher.breaker]\nfailures = 1000\n"
    );
    Settings::from_toml_layers(&[&base, overrides]).expect("test settings are valid")
}

pub async fn spawn_app(pool: PgPool) -> TestApp {
    spawn_app_with(pool, &redis_url(), "").await
}

pub async fn spawn_app_with(pool: PgPool, redis_url: &str, overrides: &str) -> TestApp {
    spawn_app_settings(pool, test_settings(redis_url, overrides)).await
}

pub async fn spawn_app_settings(pool: PgPool, settings: Settings) -> TestApp {
    Backend::postgres(pool).spawn_settings(settings).await
}

impl TestApp {
    pub fn new(
        base: String,
        client: reqwest::Client,
        state: hookd::api::AppState,
        redis: Option<RedisIndex>,
        stop: oneshot::Sender<()>,
    ) -> Self {
        Self {
            base,
            client,
            state,
            redis,
            stop: Some(stop),
        }
    }

    /// The Redis index of a server-mode app.
    pub fn index(&self) -> &RedisIndex {
        self.redis
            .as_ref()
            .expect("this test looks at Redis: run it in server mode only")
    }

    /// Sends a request with the test token; returns the status and the JSON
    /// body (`Value::Null` when the body is not JSON).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(TOKEN);
        if let Some(body) = body {
            request = request.json(&body);
        }
        read(request.send().await.expect("hookd answers")).await
    }

    /// Sends raw bytes as the body.
    pub async fn call_raw(
        &self,
        method: Method,
        path: &str,
        body: impl Into<reqwest::Body>,
    ) -> (StatusCode, Value) {
        let response = self
            .client
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("hookd answers");
        read(response).await
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body)).await
    }

    /// Creates an endpoint and returns its JSON.
    pub async fn endpoint(&self, fields: Value) -> Value {
        let mut body = json!({"url": "http://127.0.0.1:9/hook"});
        merge(&mut body, fields);
        let (status, endpoint) = self.post("/v1/endpoints", body).await;
        assert_eq!(status, StatusCode::CREATED, "{endpoint}");
        endpoint
    }

    /// Creates a notification and returns its id.
    pub async fn notify(&self, body: Value) -> String {
        let (status, created) = self.post("/v1/notifications", body).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        created["id"].as_str().unwrap().to_string()
    }

    /// Creates `items` in one batch (one transaction); their ids, in order.
    pub async fn notify_batch(&self, items: Vec<Value>) -> Vec<String> {
        let body = serde_json::json!({ "notifications": items });
        let (status, batch) = self.post("/v1/notifications/batch", body).await;
        assert_eq!(status, StatusCode::OK, "{batch}");
        batch["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["notification"]["id"].as_str().unwrap().to_string())
            .collect()
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn read(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let bytes = response.bytes().await.unwrap_or_default();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A builder for the tests' own HTTP clients. reqwest is built without a
/// crypto provider (hookd's sender configures ring itself), so the test
/// process names one, ring, before its first client.
impl TestApp {
    /// Waits until the first start's rebuild has marked the due index
    /// complete: it clears the due set first, so a test that looks at the
    /// index must not look before.
    pub async fn index_built(&self) {
        eventually(Duration::from_secs(10), "the index marker", || async {
            self.index().is_indexed().await.ok().filter(|built| *built)
        })
        .await;
    }

    /// The first attempt of notification `id`, polled for until
    /// `deadline`. A test that times out says where the notification
    /// stands (status, attempts, next attempt, why it waits), since in CI
    /// the in-process app's log is not kept: a failure then tells one that
    /// waits for something (`waiting`), one due and not yet tried, and one
    /// that ended without an attempt row apart.
    pub async fn first_attempt(&self, id: &str, deadline: Duration) -> Value {
        let attempts = format!("/v1/notifications/{id}/attempts");
        let start = Instant::now();
        loop {
            let (_, page) = self.get(&attempts).await;
            if let Some(first) = page["data"].as_array().and_then(|a| a.first()) {
                return first.clone();
            }
            if start.elapsed() > deadline {
                let (_, notification) = self.get(&format!("/v1/notifications/{id}")).await;
                panic!(
                    "timed out after {deadline:?} waiting for an attempt of {id}; \
                     the notification now: {notification}"
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

pub fn http_client_builder() -> reqwest::ClientBuilder {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

/// What `http_client()` was before reqwest 0.13.
pub fn http_client() -> reqwest::Client {
    http_client_builder().build().unwrap()
}

/// A process's `/metrics`, as text.
pub async fn scrape_metrics(client: &reqwest::Client, base: &str) -> String {
    client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The value of a metric line that starts with `prefix` (labels included).
pub fn metric(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

pub fn merge(base: &mut Value, extra: Value) {
    if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
        base.extend(extra);
    }
}

/// Polls `check` until it returns `Some`, or panics after `deadline`.
pub async fn eventually<T, F, Fut>(deadline: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if start.elapsed() > deadline {
            panic!("timed out after {deadline:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Empties a `#[sqlx::test(migrations = false)]` database, for a test that
/// migrates it itself: scripts/test migrates template1 once, so that every
/// test database is created with hookd's schema instead of applying each
/// migration again (run without scripts/test, there is nothing to drop).
pub async fn empty_database(pool: &PgPool) {
    sqlx::raw_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        .execute(pool)
        .await
        .expect("the test database empties");
}

/// A pool of the test's own on the database `#[sqlx::test]` made for it
/// (its tests take `PgPoolOptions, PgConnectOptions` and call this), and
/// what closes that pool once the test is over: keep it until the end.
///
/// The pool sqlx would hand a test borrows its connections, up to five,
/// from one pool the whole test process shares (twenty, sqlx's own limit),
/// which also creates and drops every test's database. Four tests at a time
/// each holding five left none to drop a finished test's database with:
/// every running test then waited out that pool's 30 s timeout, about three
/// times a run (BENCHMARKS.md, "a 30 s stall in the test suite"). This pool
/// is the test's alone.
pub async fn test_pool(connect: sqlx::postgres::PgConnectOptions) -> (PgPool, ClosesPool) {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(5)
        .idle_timeout(Duration::from_secs(1))
        .connect_with(connect)
        .await
        .expect("the test's database accepts connections");
    (pool.clone(), ClosesPool::new(pool))
}

/// Closes a test's pool when dropped, at the end of the test. sqlx drops
/// the test's database right after, and PostgreSQL's DROP DATABASE waits
/// (up to 5 s) for every connection to it to go: closed, the pool hands
/// out no more and lets each go as it comes back, where an open one kept
/// them idle for a second or two (each PostgreSQL test took 2.1 s instead
/// of 0.4). The close runs on the test's runtime, which sqlx goes on
/// driving while it drops the database.
pub struct ClosesPool(PgPool);

impl ClosesPool {
    /// Closes `pool` (a test's own, beside `test_pool`'s) once dropped.
    pub fn new(pool: PgPool) -> Self {
        Self(pool)
    }
}

impl Drop for ClosesPool {
    fn drop(&mut self) {
        let pool = self.0.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { pool.close().await });
        }
    }
}

/// The URL of the database `#[sqlx::test]` made for this test.
pub fn database_url(pool: &PgPool) -> String {
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let database = pool
        .connect_options()
        .get_database()
        .unwrap_or("postgres")
        .to_string();
    let mut url = url::Url::parse(&base).unwrap();
    url.set_path(&database);
    url.to_string()
}
