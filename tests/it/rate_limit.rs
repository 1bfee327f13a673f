//! Rate limits per endpoint (docs/design.md §16) on each backend: a burst, then
//! the rate, measured at a real receiver, with two hookd processes sharing
//! PostgreSQL and Redis (one in embedded mode) at the 10/s with a
//! burst of 20; a throttled notification costs no attempt; bad limits are
//! refused naming the field; and the Redis script decides exactly as the
//! rule in `domain::rate` does.

use std::time::Duration;

use chrono::{DateTime, Utc};
use hookd::domain::lane::Lane;
use hookd::domain::rate::{Decision, RateLimit};
use hookd::due::memory::MemoryIndex;
use hookd::due::redis::RedisIndex;
use hookd::limiter::Ask;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::backends::Backend;
use crate::helpers::{eventually, new_prefix, redis_url, test_settings_with_prefix, TestApp};
use crate::receiver::Receiver;

const PER_SECOND: f64 = 10.0;
const BURST: usize = 20;
const COUNT: usize = 300;
/// `dispatcher.claim_ahead_ms` of the test settings (the default): how
/// much before its due time a notification may be claimed and given a slot.
const CLAIM_AHEAD_MS: i64 = 10;

/// hookd twice on PostgreSQL (two processes sharing it and Redis), once
/// embedded, with `overrides` (TOML) on the test settings.
pub(crate) async fn instances(backend: &Backend, overrides: &str) -> Vec<TestApp> {
    let prefix = new_prefix();
    let settings = || test_settings_with_prefix(&redis_url(), &prefix, overrides);
    let mut apps = vec![backend.spawn_settings(settings()).await];
    if !backend.is_embedded() {
        apps.push(backend.spawn_settings(settings()).await);
    }
    apps
}

/// Asserts that the arrivals `times` (sorted) never ran ahead of the limit
/// with its bucket full at `from` (no slot can be earlier): by each
/// arrival, at most `burst` plus `rate` a second since `from` had arrived,
/// and one more for a slot's rounding. A busy machine only delays
/// arrivals, which never breaks this; a limiter that lets more through
/// than its rate runs ahead of it once the excess passes one request (5 %
/// too many at 10/s: after 20 s).
pub(crate) fn never_ahead_of_the_rate(
    times: &[DateTime<Utc>],
    from: DateTime<Utc>,
    rate: f64,
    burst: usize,
) {
    for (n, at) in times.iter().enumerate() {
        let since = (*at - from).num_microseconds().unwrap() as f64 / 1e6;
        let allowed = burst as f64 + rate * since.max(0.0) + 1.0;
        assert!(
            (n + 1) as f64 <= allowed,
            "{} arrived {since:.3} s after the bucket was full: the limit allows {allowed:.1}",
            n + 1
        );
    }
}

/// Asserts that the arrivals `times` (sorted) kept up with the limit on
/// average: after the burst, at least three quarters of `rate` from the
/// first arrival to the last (a loaded machine sends late, but each at its
/// slot, so its lag does not add up; a late first arrival only shortens
/// the run). A limiter that gives slots far slower than its rate falls
/// below it.
pub(crate) fn kept_up_with_the_rate(times: &[DateTime<Utc>], rate: f64, burst: usize) {
    let took = (times[times.len() - 1] - times[0]).num_milliseconds() as f64 / 1000.0;
    let paced = times.len().saturating_sub(burst) as f64;
    let most = paced / (rate * 0.75);
    assert!(
        took <= most,
        "{} arrivals took {took:.1} s: a mean under three quarters of {rate}/s (at most {most:.1} s)",
        times.len()
    );
}

async fn a_burst_arrives_together_then_the_rate_holds_over_any_window(backend: Backend) {
    let apps = instances(&backend, "").await;
    let app = &apps[0];
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "partner", "url": receiver.url("/partner"),
        "rate_limit": {"per_second": PER_SECOND, "burst": BURST}}))
        .await;
    // All due at the same instant, a little ahead, so that both processes
    // find them due together.
    let at_time = Utc::now() + chrono::Duration::seconds(2);
    let at = at_time.to_rfc3339();
    let items: Vec<Value> = (0..COUNT)
        .map(|n| json!({"endpoint": "partner", "payload": {"n": n}, "deliver_at": at}))
        .collect();
    let (status, _) = app
        .post("/v1/notifications/batch", json!({"notifications": items}))
        .await;
    assert!(status.is_success(), "{status}");

    let (distinct, total) = receiver
        .wait_distinct("/partner", COUNT, Duration::from_secs(90))
        .await;
    assert_eq!((distinct, total), (COUNT, COUNT), "none sent twice");
    let mut times: Vec<DateTime<Utc>> =
        receiver.received("/partner").iter().map(|r| r.at).collect();
    times.sort();

    // The burst together: the first 20 in under half the time the rate
    // alone would space them (1.9 s at 10/s), so a loaded machine's lag
    // does not read as no burst.
    let half = chrono::Duration::milliseconds((500.0 * (BURST - 1) as f64 / PER_SECOND) as i64);
    assert!(
        times[BURST - 1] - times[0] < half,
        "the burst spread over {}",
        times[BURST - 1] - times[0]
    );
    // Then the rate, counted from when the bucket was full: no slot is
    // before the notifications' due time less the claim-ahead (10 ms).
    // Counted in total since then rather than per window: a window from an
    // arrival a busy machine delayed holds the ones the rate spaced after
    // it plus those the delay bunched behind it.
    let full = at_time - chrono::Duration::milliseconds(CLAIM_AHEAD_MS);
    never_ahead_of_the_rate(&times, full, PER_SECOND, BURST);
    kept_up_with_the_rate(&times, PER_SECOND, BURST);

    // Each exactly one attempt: throttling is none.
    eventually(
        Duration::from_secs(20),
        "every outcome recorded",
        || async {
            let done = backend
                .count("SELECT count(*) FROM notifications WHERE status = 'succeeded'")
                .await;
            (done == COUNT as i64).then_some(())
        },
    )
    .await;
    // (A first attempt that succeeds is kept in the notification's row.)
    let over = backend
        .count("SELECT count(*) FROM notifications WHERE attempts <> 1 OR status <> 'succeeded'")
        .await;
    assert_eq!(over, 0);
}
both!(a_burst_arrives_together_then_the_rate_holds_over_any_window);

async fn a_throttled_notification_stays_pending_with_no_attempt_until_sent(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "slow", "url": receiver.url("/slow"),
        "rate_limit": {"per_second": 0.5, "burst": 1}}))
        .await;
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(
            app.notify(json!({"endpoint": "slow", "payload": {"n": n}}))
                .await,
        );
    }
    let first = receiver.wait_for("/slow", 1, Duration::from_secs(10)).await;
    let sent = first[0].header("webhook-id").unwrap().to_string();
    // The next slot is 2 s after the first: the two others wait, unsent.
    for id in ids.iter().filter(|id| **id != sent) {
        let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
        assert_eq!(n["status"], json!("pending"), "{n}");
        assert_eq!(n["attempts"], json!(0), "{n}");
        let (_, page) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
        assert_eq!(page["data"], json!([]), "{page}");
    }
    assert_eq!(receiver.received("/slow").len(), 1);
    receiver
        .wait_distinct("/slow", 3, Duration::from_secs(15))
        .await;
    for id in &ids {
        let n = eventually(Duration::from_secs(10), "the outcome recorded", || async {
            let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
            (n["status"] == json!("succeeded")).then_some(n)
        })
        .await;
        assert_eq!(n["attempts"], json!(1), "{n}");
    }
}
both!(a_throttled_notification_stays_pending_with_no_attempt_until_sent);

pub(crate) async fn patch(app: &TestApp, uid: &str, body: Value) -> (StatusCode, Value) {
    app.call(Method::PATCH, &format!("/v1/endpoints/{uid}"), Some(body))
        .await
}

async fn rate_limit_is_set_shown_kept_and_reset_and_bad_ones_are_refused_naming_the_field(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let created = app
        .endpoint(json!({"uid": "shop", "rate_limit": {"per_second": 10, "burst": 20}}))
        .await;
    assert_eq!(
        created["rate_limit"],
        json!({"per_second": 10.0, "burst": 20})
    );
    let bad = [
        (
            json!({"per_second": 0, "burst": 1}),
            "rate_limit.per_second",
        ),
        (
            json!({"per_second": -1, "burst": 1}),
            "rate_limit.per_second",
        ),
        (
            json!({"per_second": 100000.5, "burst": 1}),
            "rate_limit.per_second",
        ),
        (
            json!({"per_second": "10", "burst": 1}),
            "rate_limit.per_second",
        ),
        (json!({"burst": 1}), "rate_limit.per_second"),
        (json!({"per_second": 1, "burst": 0}), "rate_limit.burst"),
        (
            json!({"per_second": 1, "burst": 100001}),
            "rate_limit.burst",
        ),
        (json!({"per_second": 1, "burst": 1.5}), "rate_limit.burst"),
        (json!({"per_second": 1, "burst": -1}), "rate_limit.burst"),
        (json!({"per_second": 1}), "rate_limit.burst"),
        (json!("10/s"), "rate_limit"),
        (json!([10, 20]), "rate_limit"),
        (json!(10), "rate_limit"),
        (
            json!({"per_second": 1, "burst": 1, "window": 1}),
            "rate_limit",
        ),
    ];
    for (limit, field) in bad {
        let (status, body) = app
            .post(
                "/v1/endpoints",
                json!({"url": "http://127.0.0.1:9/hook", "rate_limit": limit}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{limit}: {body}");
        assert_eq!(body["error"]["field"], json!(field), "{limit}: {body}");
        let (status, body) = patch(
            &app,
            "shop",
            json!({"rate_limit": limit, "description": "x"}),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{limit}: {body}");
        assert_eq!(body["error"]["field"], json!(field), "{limit}: {body}");
    }
    let (_, kept) = app.get("/v1/endpoints/shop").await;
    assert_eq!(kept["rate_limit"], created["rate_limit"], "nothing changed");
    assert_eq!(
        kept["description"], created["description"],
        "nothing changed"
    );
    assert_eq!(
        backend.count("SELECT count(*) FROM endpoints").await,
        1,
        "no bad one created"
    );

    let (status, set) = patch(
        &app,
        "shop",
        json!({"rate_limit": {"per_second": 0.5, "burst": 100000}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!(
        set["rate_limit"],
        json!({"per_second": 0.5, "burst": 100000})
    );
    let (_, kept) = patch(&app, "shop", json!({"description": "partner"})).await;
    assert_eq!(kept["rate_limit"], set["rate_limit"], "absent: unchanged");
    let (status, reset) = patch(&app, "shop", json!({"rate_limit": null})).await;
    assert_eq!(status, StatusCode::OK, "{reset}");
    assert_eq!(reset["rate_limit"], Value::Null);
    let (_, read) = app.get("/v1/endpoints/shop").await;
    assert_eq!(read["rate_limit"], Value::Null);

    let (_, document) = app.get("/openapi.json").await;
    let schemas = &document["components"]["schemas"];
    assert!(
        schemas["RateLimit"]["properties"]["burst"].is_object(),
        "{}",
        schemas["RateLimit"]
    );
    for schema in ["EndpointView", "EndpointFields"] {
        assert!(
            schemas[schema]["properties"]["rate_limit"].is_object(),
            "{schema}"
        );
    }
}
both!(rate_limit_is_set_shown_kept_and_reset_and_bad_ones_are_refused_naming_the_field);

/// The same asks, in the same order and at the same times, to both
/// limiters: the Redis script must decide exactly as `domain::rate` does
/// (the in-process limiter is that rule over two maps).
#[tokio::test]
async fn the_redis_script_decides_exactly_as_the_rule() {
    let settings = test_settings_with_prefix(&redis_url(), &new_prefix(), "");
    let redis = hookd::limiter::beside(&RedisIndex::new(&settings.redis).unwrap());
    let memory = hookd::limiter::beside(&MemoryIndex::new());
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let ids: Vec<Uuid> = (0..12).map(|_| Uuid::now_v7()).collect();
    let t0 = Utc::now();
    let at = |ms: i64| t0 + chrono::Duration::milliseconds(ms);
    let limit = |per_second, burst| RateLimit::new(per_second, burst).unwrap();
    let ask = |endpoint, l, room, from: usize, to: usize| Ask {
        endpoint,
        limit: l,
        share: 0.0,
        room,
        notifications: ids[from..to].iter().map(|id| (*id, Lane::Fresh)).collect(),
    };
    // Lanes: `c`'s notifications, the first `backlog` of them retries.
    let c = Uuid::now_v7();
    let laned: Vec<Uuid> = (0..12).map(|_| Uuid::now_v7()).collect();
    let lanes = |share, room, from: usize, to: usize, backlog: usize| Ask {
        endpoint: c,
        limit: limit(10.0, 4),
        share,
        room,
        notifications: (from..to)
            .map(|n| {
                let lane = if n < backlog {
                    Lane::Backlog
                } else {
                    Lane::Fresh
                };
                (laned[n], lane)
            })
            .collect(),
    };
    let steps: Vec<(i64, i64, Vec<Ask>)> = vec![
        // A burst of 3 and reservations, two endpoints in one call.
        (
            0,
            0,
            vec![
                ask(a, limit(10.0, 3), 100, 0, 6),
                ask(b, limit(3.0, 1), 100, 6, 9),
            ],
        ),
        // Reserved ones back early, then on time (claim-ahead included).
        (50, 60, vec![ask(a, limit(10.0, 3), 100, 3, 6)]),
        (100, 110, vec![ask(a, limit(10.0, 3), 100, 3, 6)]),
        // Past the cap's room: the slot is kept, not spent.
        (400, 400, vec![ask(a, limit(10.0, 3), 1, 9, 12)]),
        (450, 450, vec![ask(a, limit(10.0, 3), 2, 10, 12)]),
        // A changed limit voids b's reservations.
        (500, 500, vec![ask(b, limit(5.0, 2), 100, 7, 9)]),
        // Lanes: a backlog takes both lanes' bursts, then books its own
        // slots and fresh's in turn; fresh takes its future back and
        // books one fresh interval on.
        (0, 0, vec![lanes(0.5, 100, 0, 8, 8)]),
        (10, 10, vec![lanes(0.5, 100, 8, 10, 8)]),
        // Back on their slots: own ones hold, those fresh took back
        // decide again; the cap's room counts what was lent.
        (200, 210, vec![lanes(0.5, 100, 4, 10, 8)]),
        (400, 400, vec![lanes(0.5, 1, 4, 12, 8)]),
        (600, 800, vec![lanes(0.5, 3, 2, 12, 8)]),
        // Fresh idle a while: the backlog borrows its slots, now and
        // ahead; a borrowed one is sent, then fresh takes the rest back.
        (3_000, 3_000, vec![lanes(0.5, 100, 0, 8, 8)]),
        (3_190, 3_400, vec![lanes(0.5, 100, 0, 8, 8)]),
        (3_200, 3_200, vec![lanes(0.5, 100, 9, 12, 8)]),
        (3_400, 3_600, vec![lanes(0.5, 100, 0, 12, 8)]),
        // Another share starts both lanes' buckets again.
        (3_700, 3_700, vec![lanes(0.25, 100, 0, 12, 6)]),
        // Lanes off: the one bucket, as before.
        (3_800, 3_800, vec![lanes(0.0, 100, 0, 12, 6)]),
    ];
    for (now, due_by, asks) in steps {
        let (now, due_by) = (at(now), at(due_by));
        let by_redis: Vec<Decision> = redis.admit(now, due_by, &asks).await.unwrap();
        let by_rule: Vec<Decision> = memory.admit(now, due_by, &asks).await.unwrap();
        assert_eq!(by_redis, by_rule, "at {now}");
        assert_eq!(
            by_redis.len(),
            asks.iter().map(|a| a.notifications.len()).sum::<usize>()
        );
    }
}

/// A recover after an outage is released no faster than the endpoint's
/// rate limit: the restarted backlog goes out as a burst, then at the rate.
async fn a_recovered_backlog_is_released_at_the_rate_limit(backend: Backend) {
    const FAILED: usize = 60;
    const RATE: f64 = 20.0;
    const RECOVER_BURST: usize = 5;
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![crate::receiver::Reply::status(503)]);
    // One attempt each, no breaker: every one fails at the receiver.
    app.endpoint(json!({"uid": "partner", "url": receiver.url("/down"),
        "schedule": ["0s"], "breaker": null}))
        .await;
    let items: Vec<Value> = (0..FAILED)
        .map(|n| json!({"endpoint": "partner", "payload": {"n": n}}))
        .collect();
    let (status, _) = app
        .post("/v1/notifications/batch", json!({"notifications": items}))
        .await;
    assert!(status.is_success(), "{status}");
    eventually(Duration::from_secs(30), "every one failed", || async {
        let failed = backend
            .count("SELECT count(*) FROM notifications WHERE status = 'failed'")
            .await;
        (failed == FAILED as i64).then_some(())
    })
    .await;
    // The new limit starts the endpoint's bucket anew, full, at the first
    // claim after this.
    let full = Utc::now();
    let (status, _) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/partner",
            Some(json!({"url": receiver.url("/back"),
                "rate_limit": {"per_second": RATE, "burst": RECOVER_BURST}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let since = (Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let (status, operation) = app
        .post("/v1/endpoints/partner/recover", json!({"since": since}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{operation}");

    let (distinct, total) = receiver
        .wait_distinct("/back", FAILED, Duration::from_secs(30))
        .await;
    assert_eq!((distinct, total), (FAILED, FAILED), "each once");
    let mut times: Vec<DateTime<Utc>> = receiver.received("/back").iter().map(|r| r.at).collect();
    times.sort();
    never_ahead_of_the_rate(&times, full, RATE, RECOVER_BURST);
    kept_up_with_the_rate(&times, RATE, RECOVER_BURST);
}
both!(a_recovered_backlog_is_released_at_the_rate_limit);
