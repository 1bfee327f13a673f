//! The partitions a query reads (migration 20261204000040): a lookup by id
//! and a list bounded in creation time read their days only, in the
//! generic plans hookd's connections make, pruned as the executor starts
//! with the parameters' values (`Subplans Removed`).

use chrono::{Days, Utc};
use sqlx::PgPool;

use super::notifications::{columns_with_body, list_query};
use crate::domain::created::CreatedWindow;
use crate::domain::partition::{day_bound, day_of, partition_name};
use crate::store::notifications::NotificationFilter;

/// The generic plan of `sql` run with these literal values.
async fn plan_with(pool: &PgPool, sql: &str, values: &[String]) -> String {
    let mut conn = pool.acquire().await.unwrap();
    sqlx::query("SET plan_cache_mode = force_generic_plan")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("PREPARE pruned AS {sql}")))
        .execute(&mut *conn)
        .await
        .unwrap();
    let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "EXPLAIN EXECUTE pruned({})",
        values.join(", ")
    )))
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    sqlx::raw_sql("DEALLOCATE pruned")
        .execute(&mut *conn)
        .await
        .unwrap();
    plan.join("\n")
}

fn literal(value: impl std::fmt::Display) -> String {
    format!("'{value}'")
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn a_lookup_by_id_and_a_time_bounded_list_read_only_their_days(pool: PgPool) {
    // The migration made the days from today + 2 to a week ahead.
    let today = day_of(Utc::now());
    let day = |n: u64| today.checked_add_days(Days::new(n)).unwrap();

    let by_id = format!(
        "SELECT {} FROM notifications WHERE id = $1",
        columns_with_body()
    );
    let plan = plan_with(&pool, &by_id, &[literal(day_bound(day(5)))]).await;
    assert!(
        plan.contains(&partition_name("notifications", day(5))),
        "{plan}"
    );
    assert!(plan.contains("Subplans Removed"), "{plan}");
    for other in [
        partition_name("notifications", day(4)),
        "notifications_legacy".into(),
        "notifications_default".into(),
    ] {
        assert!(!plan.contains(&other), "{other} is not read:\n{plan}");
    }

    // Newest first in a window of one day: that day's partition and the
    // neighbours its clock margin reaches, not the others.
    let window = CreatedWindow {
        after: Some(day(5).and_hms_opt(0, 0, 0).unwrap().and_utc()),
        before: Some(day(6).and_hms_opt(0, 0, 0).unwrap().and_utc()),
    };
    let filter = NotificationFilter {
        created: window,
        limit: 51,
        ..NotificationFilter::default()
    };
    let (low, high) = window.id_range();
    let values = [
        literal(window.after.unwrap().to_rfc3339()),
        literal(low.unwrap()),
        literal(window.before.unwrap().to_rfc3339()),
        literal(high.unwrap()),
        "51".to_string(),
    ];
    let plan = plan_with(&pool, &list_query(&filter).into_string(), &values).await;
    assert!(
        plan.contains(&partition_name("notifications", day(5))),
        "{plan}"
    );
    assert!(plan.contains("Subplans Removed"), "{plan}");
    for other in [
        partition_name("notifications", day(3)),
        partition_name("notifications", day(7)),
        "notifications_legacy".into(),
        "notifications_default".into(),
    ] {
        assert!(!plan.contains(&other), "{other} is not read:\n{plan}");
    }
}
