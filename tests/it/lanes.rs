//! Lanes (design §17): behind a rate limit, fresh notifications keep
//! their share of the rate while a backlog of retries is due beside them.

use std::collections::HashSet;
use std::time::Duration;

use chrono::Utc;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::eventually;
use crate::rate_limit::never_ahead_of_the_rate;
use crate::receiver::{Receiver, Reply};

async fn fresh_notifications_go_out_at_their_share_beside_a_throttled_backlog(backend: Backend) {
    const BACKLOG: usize = 300;
    const FRESH: usize = 20;
    const RATE: f64 = 20.0;
    const BURST: usize = 2;
    let app = backend
        .spawn_with("[dispatcher]\nfresh_share = 0.5\n")
        .await;
    let receiver = Receiver::start().await;
    receiver.reply("/p", vec![Reply::status(503); BACKLOG]);
    // Unlimited while the backlog fails its first attempt, quickly.
    app.endpoint(json!({"uid": "partner", "url": receiver.url("/p"),
        "schedule": ["0s", "3s"], "breaker": null}))
        .await;
    let items: Vec<Value> = (0..BACKLOG)
        .map(|n| json!({"endpoint": "partner", "payload": {"n": n}}))
        .collect();
    let (status, _) = app
        .post("/v1/notifications/batch", json!({"notifications": items}))
        .await;
    assert!(status.is_success(), "{status}");
    receiver
        .wait_for("/p", BACKLOG, Duration::from_secs(30))
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
    let mut times: Vec<_> = receiver
        .received("/p")
        .iter()
        .map(|r| r.at)
        .filter(|at| *at > full)
        .collect();
    times.sort();
    never_ahead_of_the_rate(&times, full, RATE, BURST);
}
both!(fresh_notifications_go_out_at_their_share_beside_a_throttled_backlog);
