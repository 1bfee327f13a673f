//! The partitions a query reads (migration 20261204000040): a lookup by id
//! and a list bounded in creation time read their days only, in the
//! generic plans hookd's connections make, pruned as the executor starts
//! with the parameters' values (`Subplans Removed`).

use chrono::{Days, NaiveDate, Utc};
use sqlx::PgPool;

use super::delivery::LOAD_CLAIMED;
use super::housekeeping::STILL_PENDING;
use super::notifications::{columns_with_body, list_query};
use super::partitions::id_span;
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

/// `plan` reads the `notifications` partitions of `days` after pruning
/// the others, and none of `not` nor the legacy and DEFAULT partitions.
fn assert_reads(plan: &str, days: &[NaiveDate], not: &[NaiveDate]) {
    assert!(plan.contains("Subplans Removed"), "{plan}");
    for day in days {
        let name = partition_name("notifications", *day);
        assert!(plan.contains(&name), "{name} is read:\n{plan}");
    }
    let others = not.iter().map(|day| partition_name("notifications", *day));
    for other in others.chain([
        "notifications_legacy".into(),
        "notifications_default".into(),
    ]) {
        assert!(!plan.contains(&other), "{other} is not read:\n{plan}");
    }
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
    assert_reads(&plan, &[day(5)], &[day(4)]);

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
    assert_reads(&plan, &[day(5)], &[day(3), day(7)]);
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn a_claim_s_rows_loaded_by_a_list_of_ids_are_read_from_their_days_only(pool: PgPool) {
    let today = day_of(Utc::now());
    let day = |n: u64| today.checked_add_days(Days::new(n)).unwrap();
    let (first, last) = (day_bound(day(5)), day_bound(day(6)));
    let ids = [first, last];
    let (low, high) = id_span(&ids);
    let values = [format!("'{{{first},{last}}}'"), literal(low), literal(high)];
    for sql in [LOAD_CLAIMED, STILL_PENDING] {
        let plan = plan_with(&pool, sql, &values).await;
        // What an ordered row waits for may be of any day: the load's probe
        // of it (`pred`, `ordering::released`) is one primary key lookup
        // per ordered row, pruned as it runs; the claim's own rows are not.
        let rows: Vec<&str> = plan.lines().filter(|l| !l.contains(" pred")).collect();
        assert_reads(&rows.join("\n"), &[day(5), day(6)], &[day(4), day(7)]);
        if sql == LOAD_CLAIMED {
            assert!(plan.contains("Index Cond: (id = n_1.behind)"), "{plan}");
        }
    }
    // Without the span, `= ANY($1)` alone is not pruned: every day is read.
    let unbounded = "SELECT id FROM notifications WHERE id = ANY($1)";
    let plan = plan_with(&pool, unbounded, &values[..1]).await;
    assert!(
        plan.contains(&partition_name("notifications", day(4))),
        "{plan}"
    );
}
