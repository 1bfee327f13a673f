//! One endpoint's notifications attempted more than once, most attempts
//! first, then newest, on SQLite: `notifications_endpoint_most_attempts`
//! walked backwards from the cursor, as PostgreSQL's.

use sqlx::{QueryBuilder, Sqlite};
use uuid::Uuid;

use super::columns::NOTIFICATION_COLUMNS;
use super::{store_error, SqliteStore};
use crate::store::notifications::{MostAttempted, Notification, MAX_EXAMINED};
use crate::store::StoreError;

impl SqliteStore {
    pub async fn most_attempted(
        &self,
        filter: &MostAttempted,
    ) -> Result<Vec<Notification>, StoreError> {
        self.notification_rows(most_attempted_query(filter)).await
    }

    pub async fn most_attempted_frontier(
        &self,
        filter: &MostAttempted,
    ) -> Result<Option<(i32, Uuid)>, StoreError> {
        frontier_query(filter)
            .build_query_as::<(i32, Uuid)>()
            .fetch_optional(&self.reader)
            .await
            .map_err(store_error)
    }
}

/// `most_attempted`'s statement. A status is stated with a unary `+`, so
/// that SQLite reads this index (up to the frontier) and checks it on
/// those rows, never reading an index of the status's.
pub(super) fn most_attempted_query(filter: &MostAttempted) -> QueryBuilder<Sqlite> {
    let mut query = QueryBuilder::<Sqlite>::new(format!(
        "SELECT {NOTIFICATION_COLUMNS}, x'' AS body FROM notifications WHERE "
    ));
    push_walk(&mut query, filter);
    if let Some(status) = filter.status {
        query.push(format_args!(" AND +status = '{}'", status.as_str()));
    }
    query
        .push(" ORDER BY attempts DESC, id DESC LIMIT ")
        .push_bind(filter.limit);
    query
}

/// `most_attempted_frontier`'s statement: the `MAX_EXAMINED`th row past
/// the cursor, on the index alone.
pub(super) fn frontier_query(filter: &MostAttempted) -> QueryBuilder<Sqlite> {
    let mut query = QueryBuilder::<Sqlite>::new("SELECT attempts, id FROM notifications WHERE ");
    push_walk(&mut query, filter);
    query
        .push(" ORDER BY attempts DESC, id DESC LIMIT 1 OFFSET ")
        .push_bind(MAX_EXAMINED - 1);
    query
}

/// The endpoint's rows of the index (its predicate stated as written,
/// which SQLite needs to use a partial index) past the cursor and up to
/// the frontier, as row values the index takes as its bounds.
fn push_walk(query: &mut QueryBuilder<Sqlite>, filter: &MostAttempted) {
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
    use super::*;
    use crate::domain::status::Status;

    #[tokio::test]
    async fn a_page_of_the_most_attempted_walks_their_index_from_its_cursor() {
        let (_dir, store) = super::super::plans::migrated().await;
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
                    let plan = super::super::plans::plan(&store, &sql).await;
                    assert!(
                        plan.contains("INDEX notifications_endpoint_most_attempts"),
                        "{sql}\n{plan}"
                    );
                    assert!(!plan.contains("TEMP B-TREE"), "sorts:\n{plan}");
                    if cursor.is_some() {
                        assert!(
                            plan.contains("(attempts,id)<(?,?)"),
                            "the cursor bounds the scan:\n{plan}"
                        );
                    }
                }
            }
        }
    }
}
