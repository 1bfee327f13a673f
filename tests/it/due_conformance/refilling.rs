//! The shared refill over every due index: an empty index filled from a
//! real PostgreSQL's pending rows, each once, final and pull rows left out.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use hookd::dispatcher::refill;
use hookd::domain::id::new_id;
use hookd::due::DueIndex;
use hookd::store::postgres::PgStore;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Pending rows the refill must find (more than one page of them), and
/// rows it must not: final ones and pull ones.
pub(super) async fn the_shared_refill_fills_an_empty_index_with_every_pending_row_once(
    index: impl DueIndex,
    pool: PgPool,
) {
    let now = Utc::now();
    let pending: Vec<(Uuid, DateTime<Utc>)> = (0..12_000)
        .map(|i| (new_id(), now - Duration::seconds(i % 500)))
        .collect();
    insert(&pool, &pending, "pending", false).await;
    let others: Vec<(Uuid, DateTime<Utc>)> = (0..50).map(|_| (new_id(), now)).collect();
    insert(&pool, &others[..25], "succeeded", false).await;
    insert(&pool, &others[25..], "pending", true).await;
    let store = PgStore::new(pool);
    let shutdown = CancellationToken::new();

    let filled = refill::fill(&index, &store, &shutdown).await.unwrap();
    assert_eq!(filled.map(|f| f.added), Some(pending.len()));
    assert_eq!(index.depth().await.unwrap(), (pending.len() as u64, 0));
    let again = refill::fill(&index, &store, &shutdown).await.unwrap();
    assert_eq!(again.map(|f| f.added), Some(0), "nothing is added twice");

    let mut claimed = Vec::new();
    loop {
        let claim = index
            .claim(now, now, 1000, now + Duration::minutes(5))
            .await
            .unwrap();
        if claim.ids.is_empty() {
            break;
        }
        claimed.extend(claim.ids);
    }
    assert_eq!(
        claimed.iter().copied().collect::<HashSet<_>>(),
        pending.iter().map(|(id, _)| *id).collect::<HashSet<_>>()
    );
    assert_eq!(claimed.len(), pending.len(), "each once");
}

/// Notifications with these ids and due times, in `status` (final ones
/// have no due time), for a push endpoint or a `pull` one.
async fn insert(pool: &PgPool, rows: &[(Uuid, DateTime<Utc>)], status: &str, pull: bool) {
    let (ids, due): (Vec<Uuid>, Vec<DateTime<Utc>>) = rows.iter().copied().unzip();
    sqlx::query(
        "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             deliver_at, next_attempt_at, pull) \
         SELECT id, $3, 'application/json', '\\x7b7d', '{0}', $4, at, \
             CASE WHEN $4 = 'pending' THEN at END, $5 \
         FROM unnest($1::uuid[], $2::timestamptz[]) AS r(id, at)",
    )
    .bind(&ids)
    .bind(&due)
    .bind(new_id())
    .bind(status)
    .bind(pull)
    .execute(pool)
    .await
    .unwrap();
}
