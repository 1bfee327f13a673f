//! What hookd writes to its logs: the real binary at debug level, its output
//! captured, after a session that touches every secret it holds.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::helpers::{database_url, free_port, new_prefix, redis_url, HookdProcess};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(20);
const API_TOKEN: &str = "api-token-hunter2-0001";
const WRONG_TOKEN: &str = "wrong-token-hunter2-0002";
const ENDPOINT_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OPERATOR_SECRET: &str = "whsec_c2VjcmV0LW9wZXJhdG9yLWh1bnRlcjItMDAwMw==";
const DB_PASSWORD: &str = "db-password-hunter2-0004";

#[sqlx::test]
async fn no_secret_or_token_reaches_the_logs_even_at_debug_level(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    // The test cluster trusts local connections, so the password is carried
    // (and could leak) but is not needed.
    let mut db = url::Url::parse(&database_url(&pool)).unwrap();
    db.set_password(Some(DB_PASSWORD)).unwrap();
    no_secret_in_the_logs(|env, listen, log| {
        HookdProcess::start_logged(db.as_str(), &redis_url(), &new_prefix(), env, listen, log)
    })
    .await;
}

#[tokio::test]
async fn no_secret_or_token_reaches_the_logs_even_at_debug_level_embedded() {
    let dir = tempfile::tempdir().unwrap();
    no_secret_in_the_logs(|env, listen, log| HookdProcess::embedded(dir.path(), env, listen, log))
        .await;
}

/// A session that touches every secret hookd holds, with the process
/// `start` makes from (env, listen, log); then reads its log.
async fn no_secret_in_the_logs(
    start: impl FnOnce(&[(&str, &str)], &str, &std::path::Path) -> HookdProcess,
) {
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::body(500, "no")]);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let log = std::env::temp_dir().join(format!("hookd-log-test-{}.log", new_prefix()));
    let operator_url = receiver.url("/ops");
    let tokens = format!("[\"{API_TOKEN}\"]");
    let env = [
        ("HOOKD_LOG__FILTER", "debug"),
        ("HOOKD_LOG__FORMAT", "json"),
        ("HOOKD_API__TOKENS", tokens.as_str()),
        ("HOOKD_OPERATOR__URL", operator_url.as_str()),
        ("HOOKD_OPERATOR__SECRET", OPERATOR_SECRET),
    ];
    let mut hookd = start(&env, &listen, &log);
    let base = format!("http://{listen}");
    let client = crate::helpers::http_client();
    HookdProcess::wait_ready(&base, DEADLINE).await;

    let call = |method: reqwest::Method, path: &str, token: &str, body: Option<Value>| {
        let mut request = client
            .request(method, format!("{base}{path}"))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send()
    };
    // A refused token, an endpoint with a given secret, a rotation, a
    // delivery that succeeds and one that fails to the end.
    let refused = call(reqwest::Method::GET, "/v1/endpoints", WRONG_TOKEN, None)
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    for (uid, path) in [("ok", "/ok"), ("down", "/down")] {
        let created = call(
            reqwest::Method::POST,
            "/v1/endpoints",
            API_TOKEN,
            Some(json!({"uid": uid, "url": receiver.url(path), "secret": ENDPOINT_SECRET, "schedule": ["0s", "100ms"]})),
        )
        .await
        .unwrap();
        assert_eq!(created.status(), StatusCode::CREATED);
    }
    let rotated = call(
        reqwest::Method::POST,
        "/v1/endpoints/ok/secret/rotate",
        API_TOKEN,
        Some(json!({})),
    )
    .await
    .unwrap();
    assert_eq!(rotated.status(), StatusCode::OK);
    let rotated: Value = rotated.json().await.unwrap();
    let new_secret = rotated["secret"].as_str().unwrap().to_string();
    for uid in ["ok", "down"] {
        let created = call(
            reqwest::Method::POST,
            "/v1/notifications",
            API_TOKEN,
            Some(json!({"endpoint": uid, "payload": {"n": 1}})),
        )
        .await
        .unwrap();
        assert_eq!(created.status(), StatusCode::CREATED);
    }
    receiver.wait_for("/ok", 1, DEADLINE).await;
    receiver.wait_for("/ops", 1, DEADLINE).await;
    hookd.signal("TERM");
    assert_eq!(hookd.wait(DEADLINE).await, Some(0));

    let logs = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    // The capture worked: debug lines of the delivery path are there.
    assert!(
        logs.contains("delivery attempt"),
        "no delivery logged:\n{logs}"
    );
    assert!(logs.lines().count() > 10, "too little logged:\n{logs}");
    // Each delivery is logged with what identifies and describes it, inside
    // a span that carries the same.
    let delivery: Value = logs
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["message"] == json!("delivery attempt"))
        .expect("a JSON delivery line");
    for field in [
        "notification_id",
        "endpoint_id",
        "attempt",
        "outcome",
        "status_code",
        "duration_ms",
    ] {
        assert!(!delivery[field].is_null(), "{field} missing: {delivery}");
        assert!(
            !delivery["span"][field].is_null(),
            "{field} missing in the span: {delivery}"
        );
    }
    let secrets = [
        API_TOKEN,
        WRONG_TOKEN,
        ENDPOINT_SECRET,
        &ENDPOINT_SECRET["whsec_".len()..],
        &new_secret,
        &new_secret["whsec_".len()..],
        OPERATOR_SECRET,
        &OPERATOR_SECRET["whsec_".len()..],
        DB_PASSWORD,
    ];
    for secret in secrets {
        let line = logs.lines().find(|line| line.contains(secret));
        assert!(line.is_none(), "{secret} was logged: {}", line.unwrap());
    }
}

/// A log nobody reads any more (its collector's pipe closed) costs hookd no
/// answer and no shutdown: a line that cannot be written is dropped. The
/// subscriber used to report the failure on the same broken stderr, which
/// panicked the task that logged: a handler's committed write went
/// unanswered, an operation stayed `running`, and SIGTERM's own log line
/// killed the shutdown. The writer is the same in both modes.
#[tokio::test]
async fn a_log_nobody_reads_any_more_costs_no_answer_and_sigterm_still_stops_hookd() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start().await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut command =
        crate::embedded::embedded_command(dir.path(), &[("HOOKD_LOG__FILTER", "info")]);
    command
        .env("HOOKD_SERVER__LISTEN", format!("127.0.0.1:{port}"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut hookd = HookdProcess {
        child: command.spawn().expect("the hookd binary starts"),
    };
    HookdProcess::wait_ready(&base, DEADLINE).await;
    // The reader goes: every write from now on fails (EPIPE).
    drop(hookd.child.stdout.take());
    drop(hookd.child.stderr.take());

    let client = crate::helpers::http_client();
    let call = |method: reqwest::Method, path: &str, body: Value| {
        client
            .request(method, format!("{base}{path}"))
            .bearer_auth(crate::helpers::TOKEN)
            .json(&body)
            .timeout(DEADLINE)
            .send()
    };
    let answered = |what: &str, response: reqwest::Result<reqwest::Response>| {
        let response = response.unwrap_or_else(|e| panic!("{what}: no answer: {e}"));
        response.status()
    };
    let url = receiver.url("/hook");
    let created = call(
        reqwest::Method::POST,
        "/v1/endpoints",
        json!({"uid": "shop", "url": url, "schedule": ["0s", "1h"]}),
    )
    .await;
    assert_eq!(answered("create an endpoint", created), StatusCode::CREATED);
    receiver.reply("/hook", vec![Reply::status(500)]);
    let notified = call(
        reqwest::Method::POST,
        "/v1/notifications",
        json!({"endpoint": "shop", "payload": {}}),
    )
    .await;
    assert_eq!(
        answered("create a notification", notified),
        StatusCode::CREATED
    );
    receiver.wait_for("/hook", 1, DEADLINE).await;
    let changed = call(
        reqwest::Method::PATCH,
        "/v1/endpoints/shop",
        json!({"description": "still answered"}),
    )
    .await;
    assert_eq!(answered("change the endpoint", changed), StatusCode::OK);

    hookd.signal("TERM");
    assert_eq!(hookd.wait(DEADLINE).await, Some(0), "SIGTERM stops hookd");
}
