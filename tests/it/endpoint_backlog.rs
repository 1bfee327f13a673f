//! `GET /v1/endpoints/{id}/backlog` on each backend: what is pending, what
//! is due and not sent, what a pull consumer holds under a lease.

use reqwest::StatusCode;
use serde_json::json;

use crate::backends::Backend;
use crate::pull::{notify, pull, pull_endpoint};

async fn a_backlog_counts_pending_due_and_leased_notifications(backend: Backend) {
    let app = backend.spawn().await;
    let endpoint = pull_endpoint(&app, json!({"uid": "queue"})).await;
    for _ in 0..5 {
        notify(&app, &endpoint, json!({})).await;
    }
    let later = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    notify(&app, &endpoint, json!({"deliver_at": later})).await;

    let (status, backlog) = app.get("/v1/endpoints/queue/backlog").await;
    assert_eq!(status, StatusCode::OK, "{backlog}");
    assert_eq!(
        backlog,
        json!({"pending": 6, "due": 5, "leased": 0, "capped": false})
    );

    let taken = pull(&app, &endpoint, json!({"max": 2})).await;
    assert_eq!(taken.len(), 2);
    let (_, backlog) = app.get(&format!("/v1/endpoints/{endpoint}/backlog")).await;
    assert_eq!(
        backlog,
        json!({"pending": 6, "due": 3, "leased": 2, "capped": false})
    );

    let (status, missing) = app.get("/v1/endpoints/nowhere/backlog").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    assert_eq!(missing["error"]["code"], json!("not_found"));
}
both!(a_backlog_counts_pending_due_and_leased_notifications);
