//! How a pull notification's time runs out (docs/design.md §10): a lease that
//! runs out is an attempt that ended with the lease, however late hookd
//! notices, and the next pull takes the notification back once the
//! schedule's wait after that has passed; a notification no consumer takes
//! within `pull.max_wait` fails `not_pulled`. On each backend.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};
use crate::pull::{ids, notify, pull, pull_endpoint};

const DEADLINE: Duration = Duration::from_secs(20);

fn time(value: &Value) -> DateTime<Utc> {
    value.as_str().unwrap().parse().unwrap()
}

/// The notification's attempts, oldest first.
async fn attempts(app: &TestApp, id: &str) -> Vec<Value> {
    let (_, attempts) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
    let mut list = attempts["data"].as_array().unwrap().clone();
    list.sort_by_key(|a| a["number"].as_i64());
    list
}

/// The attempt a lease ended by running out: `lease_expired`, started when
/// the lease was taken and ended when it ran out (`lease_until`, as the
/// pull answered it), not when hookd noticed.
fn assert_ended_with_its_lease(attempt: &Value, lease_until: DateTime<Utc>) {
    assert_eq!(attempt["error"]["code"], "lease_expired", "{attempt}");
    assert_eq!(attempt["outcome"], "retry", "{attempt}");
    let took = attempt["duration_ms"].as_i64().unwrap();
    assert!(
        (1000..1100).contains(&took),
        "a 1 s lease is an attempt of 1 s, not {took} ms: {attempt}"
    );
    let ended = time(&attempt["started_at"]) + chrono::Duration::milliseconds(took);
    assert!(
        (ended - lease_until).num_milliseconds().abs() <= 1,
        "the attempt ended at {ended}, its lease at {lease_until}"
    );
}

async fn a_lease_that_ran_out_unnoticed_is_an_attempt_that_ended_with_its_lease(backend: Backend) {
    let first = backend.spawn().await;
    let endpoint = pull_endpoint(&first, json!({"schedule": ["0s", "300ms", "1h"]})).await;
    let id = notify(&first, &endpoint, json!({})).await;
    let taken = pull(&first, &endpoint, json!({"lease": "1s"})).await;
    assert_eq!(ids(&taken), [id.as_str()]);
    let lease_until = time(&taken[0]["lease_until"]);
    // No hookd runs while the lease runs out, nor for a second after: the
    // next one notices it late.
    drop(first);
    eventually(DEADLINE, "a second past the lease's end", || async {
        (Utc::now() > lease_until + chrono::Duration::seconds(1)).then_some(())
    })
    .await;

    let second = backend.spawn().await;
    let again = pull(&second, &endpoint, json!({"wait": "15s", "lease": "1m"})).await;
    assert_eq!(ids(&again), [id.as_str()]);
    assert_eq!(again[0]["attempt"], 2);
    let attempts = attempts(&second, &id).await;
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_ended_with_its_lease(&attempts[0], lease_until);
}
both!(a_lease_that_ran_out_unnoticed_is_an_attempt_that_ended_with_its_lease);

async fn a_consumer_polling_without_a_wait_gets_an_expired_lease_back_after_the_lease_and_the_next_wait(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "300ms", "1h"]})).await;
    let id = notify(&app, &endpoint, json!({})).await;
    let taken = pull(&app, &endpoint, json!({"lease": "1s"})).await;
    assert_eq!(ids(&taken), [id.as_str()]);
    let lease_until = time(&taken[0]["lease_until"]);

    // A consumer that polls without waiting never notices a lease run out
    // itself: the pull does. When each empty poll began is kept.
    let last_empty: Mutex<Option<DateTime<Utc>>> = Mutex::new(None);
    let again = eventually(DEADLINE, "the notification to come back", || async {
        let began = Utc::now();
        let again = pull(&app, &endpoint, json!({"max": 1, "lease": "1m"})).await;
        if again.is_empty() {
            *last_empty.lock().unwrap() = Some(began);
        }
        (!again.is_empty()).then_some(again)
    })
    .await;
    assert_eq!(ids(&again), [id.as_str()]);
    assert_eq!(again[0]["attempt"], 2);
    // When each lease was taken, by the store's clock: the answers carry
    // their ends.
    let first_taken = lease_until - chrono::Duration::seconds(1);
    let taken_again = time(&again[0]["lease_until"]) - chrono::Duration::minutes(1);
    let back_after = (taken_again - first_taken).to_std().unwrap();
    // Due 1.3 s after the take (the lease, then the schedule's 300 ms), and
    // not before.
    let due = first_taken + chrono::Duration::milliseconds(1300);
    assert!(
        back_after >= Duration::from_millis(1300),
        "taken again {back_after:?} after the take, before its 1.3 s"
    );
    // And the first pull that began once it was due took it: no poll that
    // began after that came back empty (a poll begins, by the same clock,
    // before the store reads it). Not "back within 1.8 s": a loaded
    // machine's poll may take longer than the 0.5 s that left. A pull that
    // left the lease to hookd's once-a-second sweep would come back empty
    // until the sweep, up to 0.7 s past the due time.
    let last_empty = last_empty.lock().unwrap().unwrap_or(first_taken);
    assert!(
        last_empty <= due + chrono::Duration::milliseconds(5),
        "a pull that began {} ms after the notification was due took nothing",
        (last_empty - due).num_milliseconds()
    );
    let attempts = attempts(&app, &id).await;
    assert_ended_with_its_lease(&attempts[0], lease_until);
}
both!(
    a_consumer_polling_without_a_wait_gets_an_expired_lease_back_after_the_lease_and_the_next_wait
);

async fn a_pull_notification_no_consumer_takes_within_max_wait_fails_not_pulled(backend: Backend) {
    let app = backend.spawn_with("[pull]\nmax_wait = \"1s\"\n").await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "1h"]})).await;
    let held = notify(&app, &endpoint, json!({})).await;
    let taken = pull(&app, &endpoint, json!({"lease": "1m"})).await;
    assert_eq!(ids(&taken), [held.as_str()]);
    let forgotten = notify(&app, &endpoint, json!({})).await;
    let later = notify(&app, &endpoint, json!({"delay": "1h"})).await;

    let failed = eventually(DEADLINE, "the untaken notification to fail", || async {
        let (_, read) = app.get(&format!("/v1/notifications/{forgotten}")).await;
        (read["status"] == "failed").then_some(read)
    })
    .await;
    let attempts = attempts(&app, &forgotten).await;
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0]["error"]["code"], "not_pulled", "{attempts:?}");
    assert_eq!(attempts[0]["outcome"], "failed");
    assert_eq!(
        failed["last_attempt"]["error"]
            .as_str()
            .map(|e| e.starts_with("not_pulled")),
        Some(true),
        "{failed}"
    );
    // It waited from its due time (its creation) for a second: the attempt
    // spans that wait, however late the check noticed it had passed.
    let due = time(&failed["deliver_at"]);
    assert!(
        (time(&attempts[0]["started_at"]) - due)
            .num_milliseconds()
            .abs()
            <= 1,
        "due at {due}: {attempts:?}"
    );
    assert_eq!(attempts[0]["duration_ms"], 1000, "{attempts:?}");
    assert!(
        pull(&app, &endpoint, json!({})).await.is_empty(),
        "a failed notification is not taken"
    );

    // One under a lease was taken, and one not yet due has time left.
    for id in [&held, &later] {
        let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
        assert_eq!(read["status"], "pending", "{read}");
    }
    let (status, acked) = app
        .post(
            &format!("/v1/notifications/{held}/ack"),
            json!({"receipt": taken[0]["receipt"]}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{acked}");
}
both!(a_pull_notification_no_consumer_takes_within_max_wait_fails_not_pulled);
