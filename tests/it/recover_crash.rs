//! kill -9 during a recover (issue #35), with the real binary in each mode:
//! a restarted process finishes the operation, and only what was in flight
//! at the kill may reach the receiver twice. Embedded, the restart takes
//! the dead process's operation over at once (the file lock says no other
//! process holds it); in server mode, once the dead process's lease runs
//! out.

use std::path::PathBuf;
use std::time::Duration;

use chrono::Utc;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::embedded::{call_at, log_tail, twice_only_from_the_killed_process, Embedded, DEADLINE};
use crate::helpers::{
    database_url, eventually, free_port, http_client, new_prefix, redis_url, HookdProcess, TOKEN,
};
use crate::receiver::{Receiver, Reply};

const COUNT: usize = 3000;
/// A server-mode operation a dead process held is taken over when its
/// lease (30 s) runs out.
const TAKEOVER: Duration = Duration::from_secs(90);
/// How long each bulk phase (3,000 failures, 3,000 recovered) may take: a
/// few seconds alone, but a debug build beside the rest of the suite on
/// two cores can be many times slower. A deadline for the machine's load,
/// not for hookd.
const BULK: Duration = Duration::from_secs(180);

/// A hookd process that a test can kill and start again on the same data.
trait Restartable {
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value);
    async fn kill_9(&mut self);
    async fn restart(&mut self);
}

impl Restartable for Embedded {
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        Embedded::call(self, method, path, body).await
    }
    async fn kill_9(&mut self) {
        Embedded::kill_9(self).await
    }
    async fn restart(&mut self) {
        Embedded::restart(self).await
    }
}

/// `hookd serve` in server mode, on the test's PostgreSQL database and a
/// Redis prefix of its own.
struct Served {
    database_url: String,
    prefix: String,
    base: String,
    process: HookdProcess,
    log: PathBuf,
}

impl Served {
    async fn start(database_url: String) -> Self {
        let prefix = new_prefix();
        let log = std::env::temp_dir().join(format!("hookd-served-{prefix}.log"));
        let (process, base) = Self::spawn(&database_url, &prefix, &log);
        let served = Self {
            database_url,
            prefix,
            base,
            process,
            log,
        };
        served.wait_ready().await;
        served
    }

    fn spawn(database_url: &str, prefix: &str, log: &std::path::Path) -> (HookdProcess, String) {
        let listen = format!("127.0.0.1:{}", free_port());
        let tokens = format!("[\"{TOKEN}\"]");
        let env = [
            ("HOOKD_API__TOKENS", tokens.as_str()),
            ("HOOKD_DATABASE__MIGRATE", "true"),
            // What the dead process had in flight comes back sooner.
            ("HOOKD_SENDER__TIMEOUT_MS", "1000"),
            ("HOOKD_DISPATCHER__LEASE_MS", "6000"),
        ];
        let process =
            HookdProcess::start_logged(database_url, &redis_url(), prefix, &env, &listen, log);
        (process, format!("http://{listen}"))
    }

    async fn wait_ready(&self) {
        let ready = tokio::time::timeout(DEADLINE, HookdProcess::wait_ready(&self.base, DEADLINE));
        if ready.await.is_err() {
            panic!("hookd not ready; its log ends:\n{}", log_tail(&self.log()));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Restartable for Served {
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        call_at(&http_client(), &self.base, method, path, body).await
    }
    async fn kill_9(&mut self) {
        self.process.signal("KILL");
        self.process.wait(DEADLINE).await;
    }
    async fn restart(&mut self) {
        let (process, base) = Self::spawn(&self.database_url, &self.prefix, &self.log);
        self.process = process;
        self.base = base;
        self.wait_ready().await;
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("the end of hookd's log:\n{}", log_tail(&self.log()));
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Failed notifications of the endpoint still pending (none once every one
/// has failed).
async fn any_pending(hookd: &impl Restartable) -> bool {
    let (_, page) = hookd
        .call(
            Method::GET,
            "/v1/notifications?endpoint=shop&status=pending&limit=1",
            None,
        )
        .await;
    !page["data"].as_array().unwrap().is_empty()
}

/// The guarantee, whichever the mode: `COUNT` failed, the receiver is
/// back, a recover runs, the process is killed 50 deliveries in and
/// started again.
async fn a_recover_survives_kill_9(hookd: &mut impl Restartable, takeover: Duration) {
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(503)]);
    receiver.reply("/back", vec![Reply::Slow(Duration::from_millis(20))]);
    // No breaker: every notification is to reach the receiver that is
    // down and fail, not to be held after the fifth (the binary runs with
    // the default `[dispatcher.breaker]`).
    let fields = json!({"uid": "shop", "url": receiver.url("/down"),
        "schedule": ["0s"], "max_in_flight": 32, "breaker": null});
    let (status, created) = hookd
        .call(Method::POST, "/v1/endpoints", Some(fields))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    for _ in 0..COUNT / 1000 {
        let items: Vec<Value> = (0..1000)
            .map(|_| json!({"endpoint": "shop", "payload": {}}))
            .collect();
        let batch = json!({"notifications": items});
        let (status, body) = hookd
            .call(Method::POST, "/v1/notifications/batch", Some(batch))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    receiver.wait_distinct("/down", COUNT, BULK).await;
    eventually(BULK, "every notification to fail", || async {
        (!any_pending(hookd).await).then_some(())
    })
    .await;
    let back = json!({"url": receiver.url("/back")});
    let (status, _) = hookd
        .call(Method::PATCH, "/v1/endpoints/shop", Some(back))
        .await;
    assert_eq!(status, StatusCode::OK);

    let since = (Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let (status, started) = hookd
        .call(
            Method::POST,
            "/v1/endpoints/shop/recover",
            Some(json!({"since": since})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let id = started["id"].as_str().unwrap().to_string();
    let operation_path = format!("/v1/operations/{id}");
    receiver.wait_for("/back", 50, DEADLINE).await;
    let (_, before) = hookd.call(Method::GET, &operation_path, None).await;
    hookd.kill_9().await;
    println!(
        "recover kill -9: the operation was {} with {} restarted at the kill",
        before["status"], before["started"]
    );

    let restarted = Utc::now();
    hookd.restart().await;
    let operation = eventually(takeover + BULK, "the recover to end", || async {
        let (_, operation) = hookd.call(Method::GET, &operation_path, None).await;
        (operation["status"] != json!("running")).then_some(operation)
    })
    .await;
    assert_eq!(operation["status"], json!("done"), "{operation}");
    assert_eq!(operation["matched"], json!(COUNT), "{operation}");
    assert_eq!(operation["started"], json!(COUNT), "{operation}");
    let (distinct, total) = receiver.wait_distinct("/back", COUNT, BULK).await;
    assert_eq!(distinct, COUNT);
    twice_only_from_the_killed_process(&receiver, "/back", restarted);
    println!("recover kill -9: {} duplicate deliveries", total - distinct);
}

#[tokio::test]
async fn kill_9_during_an_embedded_recover_then_restart_finishes_it_sending_twice_only_what_was_in_flight(
) {
    let dir = tempfile::tempdir().unwrap();
    let mut hookd = Embedded::start(dir.path(), &[]).await;
    a_recover_survives_kill_9(&mut hookd, DEADLINE).await;
}

#[sqlx::test]
async fn kill_9_during_a_server_mode_recover_then_restart_finishes_it_sending_twice_only_what_was_in_flight(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let mut hookd = Served::start(database_url(&pool)).await;
    a_recover_survives_kill_9(&mut hookd, TAKEOVER).await;
}
