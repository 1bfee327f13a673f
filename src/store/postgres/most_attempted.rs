//! One endpoint's notifications attempted more than once, most attempts
//! first, then newest, in PostgreSQL (`GET /v1/notifications?order=attempts`):
//! `notifications_endpoint_most_attempts` walked backwards from the cursor.

use sqlx::{Postgres, QueryBuilder};
use uuid::Uuid;

use super::notifications::columns_without_body;
use super::PgStore;
use crate::store::notifications::{MostAttempted, Notification, MAX_EXAMINED};
use crate::store::StoreError;

impl PgStore {
    pub async fn most_attempted(
        &self,
        filter: &MostAttempted,
    ) -> Result<Vec<Notification>, StoreError> {
        Ok(most_attempted_query(filter)
            .build_query_as::<Notification>()
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn most_attempted_frontier(
        &self,
        filter: &MostAttempted,
    ) -> Result<Option<(i32, Uuid)>, StoreError> {
        Ok(frontier_query(filter)
            .build_query_as::<(i32, Uuid)>()
            .fetch_optional(&self.pool)
            .await?)
    }
}

/// `most_attempted`'s statement. With a status, the endpoint's rows past
/// the cursor up to the frontier are read in a subquery the status cannot
/// reach (its `LIMIT` keeps it out), then checked on those rows only: the
/// index of failed and cancelled rows would read the endpoint's every one.
pub(super) fn most_attempted_query(filter: &MostAttempted) -> QueryBuilder<Postgres> {
    let mut query = QueryBuilder::new(format!("SELECT {} FROM ", columns_without_body()));
    match filter.status {
        Some(status) => {
            query.push("(SELECT * FROM notifications WHERE ");
            push_walk(&mut query, filter);
            query
                .push(" ORDER BY attempts DESC, id DESC LIMIT ")
                .push_bind(MAX_EXAMINED.max(filter.limit))
                // A literal, as `list_query` writes it.
                .push(format_args!(
                    ") notifications WHERE status = '{}'",
                    status.as_str()
                ));
        }
        None => {
            query.push("notifications WHERE ");
            push_walk(&mut query, filter);
        }
    }
    query
        .push(" ORDER BY attempts DESC, id DESC LIMIT ")
        .push_bind(filter.limit);
    query
}

/// `most_attempted_frontier`'s statement: the `MAX_EXAMINED`th row past
/// the cursor, on the index's columns alone.
pub(super) fn frontier_query(filter: &MostAttempted) -> QueryBuilder<Postgres> {
    let mut query = QueryBuilder::new("SELECT attempts, id FROM notifications WHERE ");
    push_walk(&mut query, filter);
    query
        .push(" ORDER BY attempts DESC, id DESC OFFSET ")
        .push_bind(MAX_EXAMINED - 1)
        .push(" LIMIT 1");
    query
}

/// The endpoint's rows of the index (its predicate stated as written, so
/// that a generic plan may use it) past the cursor and up to the frontier,
/// as row comparisons the index takes as its bounds.
fn push_walk(query: &mut QueryBuilder<Postgres>, filter: &MostAttempted) {
    query
        .push("endpoint_id = ")
        .push_bind(filter.endpoint_id)
        .push(" AND attempts > 1");
    if let Some((attempts, id)) = filter.cursor {
        query
            .push(" AND (attempts, id) < (")
            .push_bind(attempts)
            .push(", ")
            .push_bind(id)
            .push(")");
    }
    if let Some((attempts, id)) = filter.from {
        query
            .push(" AND (attempts, id) >= (")
            .push_bind(attempts)
            .push(", ")
            .push_bind(id)
            .push(")");
    }
}

#[cfg(test)]
mod tests {
    use sqlx::PgPool;

    use super::*;
    use crate::domain::status::Status;

    /// 20 endpoints, 1,000 notifications each, every tenth attempted more
    /// than once, analyzed.
    async fn table(pool: &PgPool) {
        sqlx::raw_sql(
            "INSERT INTO endpoints (id, url, secret, schedule_ms) \
             SELECT hookd_uuid_v7(), 'http://receiver.test/', \
                 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', '{0}' FROM generate_series(1, 20); \
             INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
                 deliver_at, attempts) \
             SELECT hookd_uuid_v7(), e.id, 'application/json', '\\x7b7d', '{0}', 'failed', now(), \
                 CASE WHEN g % 10 = 0 THEN 2 + g % 7 ELSE 1 END \
             FROM generate_series(1, 1000) g, endpoints e; \
             ANALYZE endpoints, notifications_legacy;",
        )
        .execute(pool)
        .await
        .unwrap();
    }

    #[sqlx::test(migrator = "super::super::MIGRATOR")]
    async fn a_page_of_the_most_attempted_walks_their_index_from_its_cursor(pool: PgPool) {
        table(&pool).await;
        for status in [None, Some(Status::Failed)] {
            for cursor in [None, Some((3, Uuid::max()))] {
                let filter = MostAttempted {
                    endpoint_id: Uuid::nil(),
                    status,
                    cursor,
                    from: status.and(Some((2, Uuid::nil()))),
                    limit: 51,
                };
                for sql in [
                    most_attempted_query(&filter).into_string(),
                    frontier_query(&filter).into_string(),
                ] {
                    let parameters = sql.matches('$').count();
                    let plan = super::super::plan_tests::generic_plan(&pool, &sql, parameters)
                        .await
                        .join("\n");
                    // Each partition's copy of the index (named for its
                    // columns), merged in its order, never sorted.
                    assert!(
                        plan.contains("_endpoint_id_attempts_id_idx"),
                        "{sql}\n{plan}"
                    );
                    assert!(!plan.contains("Seq Scan"), "{sql}\n{plan}");
                    assert!(
                        !plan.lines().any(|line| line.contains("Sort  (")),
                        "in the index's order:\n{plan}"
                    );
                    if cursor.is_some() {
                        assert!(
                            plan.contains("ROW(attempts, id) < ROW("),
                            "the cursor bounds the scan:\n{plan}"
                        );
                    }
                }
            }
        }
    }
}
