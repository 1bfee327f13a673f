//! Lanes (design §17): behind a rate limit, fresh notifications keep
//! their share of the rate while a backlog of retries is due beside them,
//! and a lane alone gets the whole rate.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};
use crate::rate_limit::{kept_up_with_the_rate, never_ahead_of_the_rate};
use crate::receiver::{Receiver, Reply};

const RATE: f64 = 20.0;
const BURST: usize = 2;

/// An app with lanes at half, and `backlog` notifications to `partner`
/// on `/p` that fail their first attempt, unlimited and quickly, and are
/// retried 3 s later; once they have, the endpoint is limited to `RATE`
/// (its bucket full from the time returned).
async fn a_failed_backlog(backend: Backend, backlog: usize) -> (TestApp, Receiver, DateTime<Utc>) {
    let app = backend
        .spawn_with("[dispatcher]\nfresh_share = 0.5\n")
        .await;
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
    let (status, _) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/partner",
            Some(json!({"rate_limit": {"per_second": RATE, "burst": BURST}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
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

async fn fresh_notifications_go_out_at_their_share_beside_a_throttled_backlog(backend: Backend) {
    const BACKLOG: usize = 300;
    const FRESH: usize = 20;
    let (app, receiver, full) = a_failed_backlog(backend, BACKLOG).await;
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
both!(fresh_notifications_go_out_at_their_share_beside_a_throttled_backlog);

/// A lane alone borrows the idle lane's slots, ahead as well as now: a
/// backlog of retries with no fresh work beside it drains at the whole
/// rate, not at its half share (what lending only now-slots gave).
async fn a_backlog_alone_drains_at_the_whole_rate(backend: Backend) {
    const BACKLOG: usize = 200;
    let (_app, receiver, full) = a_failed_backlog(backend, BACKLOG).await;
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
