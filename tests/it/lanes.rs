//! Lanes (design §17): behind a rate limit, fresh notifications keep
//! their share of the rate while a backlog of retries is due beside them,
//! and a lane alone gets the whole rate; without one, they are not stuck
//! behind the backlog at the endpoint's concurrency cap. What a closing
//! circuit released is backlog, though it was never attempted.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::circuit_breaker::{closed, opened, BREAKER};
use crate::helpers::{eventually, TestApp};
use crate::rate_limit::{kept_up_with_the_rate, never_ahead_of_the_rate, patch};
use crate::receiver::{Received, Receiver, Reply};

const RATE: f64 = 20.0;
const BURST: usize = 2;

/// An app with `config`, and `backlog` notifications to `partner` on
/// `/p` that fail their first attempt, unlimited and quickly, and are
/// retried 3 s later; once they have, the endpoint is limited to `RATE`
/// by a PATCH with `fields` too (its bucket full from the time returned).
async fn a_failed_backlog(
    backend: Backend,
    config: &str,
    backlog: usize,
    fields: Value,
) -> (TestApp, Receiver, DateTime<Utc>) {
    let app = backend.spawn_with(config).await;
    let receiver = Receiver::start().await;
    receiver.reply("/p", vec![Reply::status(503); backlog]);
    app.endpoint(json!({"uid": "partner", "url": receiver.url("/p"),
        "schedule": ["0s", "3s"], "breaker": null}))
        .await;
    let items: Vec<Value> = (0..backlog)
        .map(|n| json!({"endpoint": "partner", "payload": {"n": n}}))
        .collect();
    let (status, _) = app
        .post("/v1/notifications/batch", json!({"notifications": items}))
        .await;
    assert!(status.is_success(), "{status}");
    receiver
        .wait_for("/p", backlog, Duration::from_secs(30))
        .await;
    let full = Utc::now();
    let mut change = json!({"rate_limit": {"per_second": RATE, "burst": BURST}});
    change
        .as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    let (status, body) = app
        .call(Method::PATCH, "/v1/endpoints/partner", Some(change))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (app, receiver, full)
}

/// What `/p` received after `since`, in order.
fn arrivals_since(receiver: &Receiver, since: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let mut times: Vec<_> = receiver
        .received("/p")
        .iter()
        .map(|r| r.at)
        .filter(|at| *at > since)
        .collect();
    times.sort();
    times
}

/// Creates `count` fresh notifications to `partner` and waits until each
/// has arrived at `/p`; their ids.
async fn fresh_ones_delivered(app: &TestApp, receiver: &Receiver, count: usize) -> HashSet<String> {
    let mut fresh = HashSet::new();
    for n in 0..count {
        fresh.insert(
            app.notify(json!({"endpoint": "partner", "payload": {"fresh": n}}))
                .await,
        );
    }
    eventually(Duration::from_secs(60), "every fresh one delivered", || {
        let got = receiver
            .received("/p")
            .iter()
            .filter(|r| is_one_of(r, &fresh))
            .count();
        async move { (got == count).then_some(()) }
    })
    .await;
    fresh
}

fn is_one_of(received: &Received, ids: &HashSet<String>) -> bool {
    received
        .header("webhook-id")
        .is_some_and(|id| ids.contains(id))
}

/// Of `arrivals`, how many not `fresh` arrived before the last fresh one.
fn others_before_the_last_of(mut arrivals: Vec<Received>, fresh: &HashSet<String>) -> usize {
    arrivals.sort_by_key(|r| r.at);
    let last = arrivals.iter().rposition(|r| is_one_of(r, fresh)).unwrap();
    arrivals[..last]
        .iter()
        .filter(|r| !is_one_of(r, fresh))
        .count()
}

/// Behind 20/s with 300 retries throttled, 20 fresh notifications go out
/// at their half share, and the total never runs ahead of the rate.
async fn fresh_ones_go_out_at_half_the_rate(config: &str, fields: Value, backend: Backend) {
    const BACKLOG: usize = 300;
    const FRESH: usize = 20;
    let (app, receiver, full) = a_failed_backlog(backend, config, BACKLOG, fields).await;
    // The retries have started: the backlog is throttled to its slots.
    receiver
        .wait_for("/p", BACKLOG + 5, Duration::from_secs(30))
        .await;
    let mut fresh = HashSet::new();
    for n in 0..FRESH {
        fresh.insert(
            app.notify(json!({"endpoint": "partner", "payload": {"fresh": n}}))
                .await,
        );
    }
    // At half of 20/s, 20 fresh ones take 2 s; behind the backlog (no
    // lanes) they would take the ~15 s its 300 retries need.
    eventually(Duration::from_secs(8), "every fresh one delivered", || {
        let got = receiver
            .received("/p")
            .iter()
            .filter(|r| r.header("webhook-id").is_some_and(|id| fresh.contains(id)))
            .count();
        async move { (got == FRESH).then_some(()) }
    })
    .await;
    never_ahead_of_the_rate(&arrivals_since(&receiver, full), full, RATE, BURST);
}

/// `dispatcher.fresh_share` is 0.5 by default.
async fn fresh_notifications_go_out_at_their_share_beside_a_throttled_backlog(backend: Backend) {
    fresh_ones_go_out_at_half_the_rate("", json!({}), backend).await;
}
both!(fresh_notifications_go_out_at_their_share_beside_a_throttled_backlog);

/// Lanes off for the dispatcher, on for the endpoint: its own share holds.
async fn an_endpoints_own_fresh_share_overrides_the_dispatchers(backend: Backend) {
    let config = "[dispatcher]\nfresh_share = 0\n";
    fresh_ones_go_out_at_half_the_rate(config, json!({"fresh_share": 0.5}), backend).await;
}
both!(an_endpoints_own_fresh_share_overrides_the_dispatchers);

/// A lane alone borrows the idle lane's slots, ahead as well as now: a
/// backlog of retries with no fresh work beside it drains at the whole
/// rate, not at its half share (what lending only now-slots gave).
async fn a_backlog_alone_drains_at_the_whole_rate(backend: Backend) {
    const BACKLOG: usize = 200;
    let (_app, receiver, full) = a_failed_backlog(backend, "", BACKLOG, json!({})).await;
    // At 20/s, 10 s; at the half share, 20 s.
    receiver
        .wait_for("/p", 2 * BACKLOG, Duration::from_secs(40))
        .await;
    let times = arrivals_since(&receiver, full);
    assert_eq!(times.len(), BACKLOG, "each retried once");
    never_ahead_of_the_rate(&times, full, RATE, BURST);
    kept_up_with_the_rate(&times, RATE, BURST);
}
both!(a_backlog_alone_drains_at_the_whole_rate);

/// No rate limit, a cap of 2 and a receiver that takes 40 ms: 300
/// retries due at once take 6 s to drain. Fresh notifications created
/// once they drain go out in a slot of the cap the backlog frees next,
/// not behind the retries (due earlier) nor after their own place in the
/// claimed backlog: each arrives before a quarter of the retries have
/// (4 to 7 of them did; with `fresh_share = 0`, as before lanes, 160 to
/// 169).
async fn fresh_notifications_are_not_stuck_behind_their_endpoints_backlog_at_its_cap(
    backend: Backend,
) {
    const BACKLOG: usize = 300;
    const FRESH: usize = 10;
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let mut replies = vec![Reply::status(503); BACKLOG];
    replies.push(Reply::Slow(Duration::from_millis(40)));
    receiver.reply("/p", replies);
    app.endpoint(json!({"uid": "partner", "url": receiver.url("/p"),
        "schedule": ["0s", "1s"], "breaker": null, "max_in_flight": 2}))
        .await;
    let items: Vec<Value> = (0..BACKLOG)
        .map(|n| json!({"endpoint": "partner", "payload": {"n": n}}))
        .collect();
    let (status, _) = app
        .post("/v1/notifications/batch", json!({"notifications": items}))
        .await;
    assert!(status.is_success(), "{status}");
    // Every first attempt failed, and the retries have started.
    receiver
        .wait_for("/p", BACKLOG + 4, Duration::from_secs(60))
        .await;
    let fresh = fresh_ones_delivered(&app, &receiver, FRESH).await;
    let retries_before = others_before_the_last_of(receiver.received("/p"), &fresh) - BACKLOG;
    assert!(
        retries_before < BACKLOG / 4,
        "the last fresh one arrived after {retries_before} of {BACKLOG} retries"
    );
}
both!(fresh_notifications_are_not_stuck_behind_their_endpoints_backlog_at_its_cap);

/// A receiver down long enough for its circuit to open: five failures
/// open it, and the 300 notifications created then are held, never
/// attempted. Once it is back and the circuit closes, the release moves
/// them back to their due times; 20 fresh notifications created then go
/// out at their half share of 20/s beside them, not behind all of them
/// (15 s at 20/s, what counting them fresh gave).
async fn notifications_a_closing_circuit_released_go_out_on_the_backlog_lane(backend: Backend) {
    const FAILING: usize = 5;
    const HELD: usize = 300;
    const FRESH: usize = 20;
    let app = backend.spawn_with(BREAKER).await;
    let receiver = Receiver::start().await;
    receiver.reply("/p", vec![Reply::status(503)]);
    app.endpoint(json!({"uid": "partner", "url": receiver.url("/p"),
        "schedule": ["0s", "1h"], "rate_limit": {"per_second": RATE, "burst": BURST}}))
        .await;
    let batch = |from: usize, count: usize| {
        let items: Vec<Value> = (from..from + count)
            .map(|n| json!({"endpoint": "partner", "payload": {"n": n}}))
            .collect();
        json!({ "notifications": items })
    };
    let (status, _) = app.post("/v1/notifications/batch", batch(0, FAILING)).await;
    assert!(status.is_success(), "{status}");
    opened(&app, "partner").await;
    let (status, _) = app
        .post("/v1/notifications/batch", batch(FAILING, HELD))
        .await;
    assert!(status.is_success(), "{status}");

    let back = Utc::now();
    receiver.reply("/p", vec![Reply::status(200)]);
    closed(&app, "partner").await;
    // The release is under way: the probe and some released ones landed.
    eventually(Duration::from_secs(30), "the release to start", || {
        let got = arrivals_since(&receiver, back).len();
        async move { (got >= 20).then_some(()) }
    })
    .await;
    let fresh = fresh_ones_delivered(&app, &receiver, FRESH).await;
    let since_back: Vec<Received> = receiver
        .received("/p")
        .into_iter()
        .filter(|r| r.at > back)
        .collect();
    let released_before = others_before_the_last_of(since_back, &fresh);
    // At the half share, about 20 released ones go beside 20 fresh ones
    // (after the 20 or so waited for); behind them all, 300.
    assert!(
        released_before < HELD / 4,
        "the last fresh one arrived after {released_before} of {HELD} released ones"
    );
}
both!(notifications_a_closing_circuit_released_go_out_on_the_backlog_lane);

async fn fresh_share_is_set_shown_kept_and_reset_and_out_of_range_is_refused(backend: Backend) {
    let app = backend.spawn().await;
    let created = app.endpoint(json!({"uid": "shop"})).await;
    assert_eq!(created["fresh_share"], Value::Null);
    for bad in [json!(-0.1), json!(1.5), json!("half")] {
        let (status, body) = app
            .post(
                "/v1/endpoints",
                json!({"url": "http://127.0.0.1:9/hook", "fresh_share": bad}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        assert_eq!(body["error"]["field"], json!("fresh_share"), "{body}");
        let (status, body) = patch(&app, "shop", json!({"fresh_share": bad})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        assert_eq!(body["error"]["field"], json!("fresh_share"), "{body}");
    }
    let id: uuid::Uuid = created["id"].as_str().unwrap().parse().unwrap();
    let version = "SELECT version FROM endpoints WHERE id = $1";
    let before = backend.count_for(version, id).await;
    let (status, set) = patch(&app, "shop", json!({"fresh_share": 0.8})).await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!(set["fresh_share"], json!(0.8));
    // A delivery uses it: the dispatcher's cached plan must be read again.
    assert!(backend.count_for(version, id).await > before);
    let (_, kept) = patch(&app, "shop", json!({"description": "other"})).await;
    assert_eq!(kept["fresh_share"], json!(0.8));
    let (_, read) = app.get("/v1/endpoints/shop").await;
    assert_eq!(read["fresh_share"], json!(0.8));
    let (status, off) = patch(&app, "shop", json!({"fresh_share": 0})).await;
    assert_eq!(status, StatusCode::OK, "{off}");
    assert_eq!(off["fresh_share"], json!(0.0));
    let (status, reset) = patch(&app, "shop", json!({"fresh_share": null})).await;
    assert_eq!(status, StatusCode::OK, "{reset}");
    assert_eq!(reset["fresh_share"], Value::Null);

    let (_, document) = app.get("/openapi.json").await;
    let schemas = &document["components"]["schemas"];
    for schema in ["EndpointView", "EndpointFields"] {
        let field = &schemas[schema]["properties"]["fresh_share"];
        assert_eq!(field["maximum"].as_f64(), Some(1.0), "{schema}: {field}");
    }
}
both!(fresh_share_is_set_shown_kept_and_reset_and_out_of_range_is_refused);
