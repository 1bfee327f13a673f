use super::*;
use crate::store::sqlite::SqliteOptions;

/// Every statement seeks an index: SQLite plans without statistics
/// here, as on a fresh file, and a plan that says SCAN reads the table.
#[tokio::test]
async fn every_endpoint_statement_seeks_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("hookd.db"), &SqliteOptions::migrating())
        .await
        .unwrap();
    let by_id = EndpointRef::Id(Uuid::nil());
    let by_uid = EndpointRef::Uid("orders".into());
    let mut statements = vec![
        format!("SELECT id FROM endpoints WHERE {}", named(&by_id)),
        format!("SELECT id FROM endpoints WHERE {}", named(&by_uid)),
        // Every set-based cancel (`cancel::cancel_pending`).
        super::super::cancel::CANCEL_IDS.to_string(),
        super::super::cancel::CANCEL_KEY.to_string(),
        super::super::cancel::CANCEL_ENDPOINT.to_string(),
        super::super::cancel::CANCEL_EVENT.to_string(),
    ];
    // Without a cursor nor an owner, the newest first is a walk of the
    // primary key from its end, which the plan reports as a SCAN.
    for (cursor, owner) in [(true, false), (false, true), (true, true)] {
        statements.push(list_sql(cursor, owner));
    }
    for sql in statements {
        let params = sql.matches('?').count();
        let mut query = sqlx::query_as::<_, (i64, i64, i64, String)>(AssertSqlSafe(format!(
            "EXPLAIN QUERY PLAN {sql}"
        )));
        for _ in 0..params {
            query = query.bind(None::<i64>);
        }
        let plan = query.fetch_all(store.reader()).await.unwrap();
        assert!(
            // A list of ids bound as JSON is read whole, as it should.
            plan.iter()
                .all(|(.., detail)| !detail.starts_with("SCAN")
                    || detail.starts_with("SCAN json_each")),
            "{sql}: {plan:?}"
        );
    }
}
