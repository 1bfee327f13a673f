//! The plans PostgreSQL makes for hookd's batch statements, read with
//! `EXPLAIN` as hookd's connections run them (generic plans, beside a table
//! with statistics). A plan that compares every row of a batch with every
//! other passes every functional test on a small table and is quadratic in
//! production, so its shape is tested here.

use sqlx::PgPool;

use super::recording::RECORD_ATTEMPTS;

/// The plan of `sql` as a generic plan (every parameter NULL: a generic plan
/// does not look at them), one line per node or detail. The statement is
/// deallocated after: the pool may hand the same connection to the next
/// call, where a second `PREPARE planned` would fail.
pub(super) async fn generic_plan(pool: &PgPool, sql: &str, parameters: usize) -> Vec<String> {
    let mut conn = pool.acquire().await.unwrap();
    sqlx::query("SET plan_cache_mode = force_generic_plan")
        .execute(&mut *conn)
        .await
        .unwrap();
    // With every parameter NULL, the executor's pruning would remove every
    // partition of a range bounded by a parameter (a NULL bound matches
    // none) and leave no plan to read: these tests read each partition's
    // plan, `partition_plan_tests` that the partitions are pruned.
    sqlx::query("SET enable_partition_pruning = off")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("PREPARE planned AS {sql}")))
        .execute(&mut *conn)
        .await
        .unwrap();
    let nulls = vec!["NULL"; parameters].join(", ");
    let plan = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "EXPLAIN EXECUTE planned({nulls})"
    )))
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    sqlx::raw_sql("DEALLOCATE planned; RESET enable_partition_pruning")
        .execute(&mut *conn)
        .await
        .unwrap();
    plan
}

/// Pending notifications of one endpoint, analyzed, as autovacuum leaves a
/// live table.
pub(super) async fn live_table(pool: &PgPool, count: i64) {
    sqlx::raw_sql(
        "INSERT INTO endpoints (id, url, secret, schedule_ms) \
         VALUES ('00000000-0000-7000-8000-000000000001', 'http://receiver.test/', \
                 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', '{0}')",
    )
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             attempts, deliver_at, next_attempt_at) \
         SELECT hookd_uuid_v7(), '00000000-0000-7000-8000-000000000001', 'application/json', \
             '\\x7b7d', '{0,60000}', 'pending', 0, now(), now() FROM generate_series(1, $1)",
    )
    .bind(count)
    .execute(pool)
    .await
    .unwrap();
    sqlx::raw_sql("ANALYZE endpoints, notifications, attempts")
        .execute(pool)
        .await
        .unwrap();
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn the_recording_statement_probes_the_primary_key_per_attempt(pool: PgPool) {
    live_table(&pool, 5_000).await;
    let plan = generic_plan(&pool, RECORD_ATTEMPTS, 32).await;
    let text = plan.join("\n");
    assert!(
        plan.iter()
            .any(|line| line.contains("Index Cond: (id = i.id)")),
        "the update probes notifications' primary key once per attempt:\n{text}"
    );
    assert!(
        !plan
            .iter()
            .any(|line| line.contains("Join Filter") && line.contains("i.id")),
        "no attempt is matched by comparing it with every notification of the batch:\n{text}"
    );
    // Which attempts get a row: two lookups in the moved rows (moved and
    // not a first-attempt success; not moved), each a hash, not a scan of
    // the moved rows per attempt.
    let which = plan
        .iter()
        .find(|line| line.contains("Filter:") && line.contains("SubPlan"))
        .unwrap_or_else(|| panic!("the filter of the attempts written:\n{text}"));
    assert_eq!(
        which.matches("hashed SubPlan").count(),
        2,
        "the attempts written look the moved rows up in a hash:\n{text}"
    );
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn a_page_of_pending_rows_starts_at_its_cursor_in_the_index(pool: PgPool) {
    live_table(&pool, 50_000).await;
    let plan = generic_plan(&pool, super::housekeeping::PENDING_PAGE, 4).await;
    let text = plan.join("\n");
    assert!(
        plan.iter()
            .any(|line| line.contains("notifications_pending_due")),
        "the page walks the pending rows' index:\n{text}"
    );
    assert!(
        plan.iter().any(|line| line.contains("Index Cond:")
            && line.contains("next_attempt_at, id) > ROW($1, $2)")),
        "the cursor bounds the index scan, so a page does not read the index from its start:\n{text}"
    );
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn the_consumer_token_refresh_reads_only_what_changed_through_indexes(pool: PgPool) {
    // Every process runs it each second: on 20,000 endpoints it must not
    // read them all.
    sqlx::raw_sql(
        "INSERT INTO endpoints (id, url, secret, schedule_ms, updated_at) \
         SELECT hookd_uuid_v7(), 'http://receiver.test/', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', \
                '{0}', now() - make_interval(secs => n) FROM generate_series(1, 20000) AS n; \
         INSERT INTO consumer_tokens (endpoint_id, digest, created_at) \
         SELECT id, sha256(id::text::bytea), updated_at FROM endpoints LIMIT 5000; \
         ANALYZE endpoints, consumer_tokens",
    )
    .execute(&pool)
    .await
    .unwrap();
    let plan = generic_plan(&pool, super::consumer_tokens::CHANGED, 2).await;
    let text = plan.join("\n");
    for index in ["endpoints_changed", "consumer_tokens_issued"] {
        assert!(
            plan.iter().any(|line| line.contains(index)),
            "the changes are found through {index}:\n{text}"
        );
    }
    assert!(
        !plan.iter().any(|line| line.contains("Seq Scan")),
        "no table is read in full:\n{text}"
    );
}

// Added for recover (docs/design.md §16).
#[sqlx::test(migrator = "super::MIGRATOR")]
async fn a_recover_page_reads_the_failed_index_from_its_cursor(pool: PgPool) {
    live_table(&pool, 5_000).await;
    sqlx::raw_sql(
        "UPDATE notifications SET status = 'failed', completed_at = now(), next_attempt_at = NULL \
         WHERE id IN (SELECT id FROM notifications ORDER BY id LIMIT 1000); \
         ANALYZE notifications",
    )
    .execute(&pool)
    .await
    .unwrap();
    let page = format!("{} FOR UPDATE OF n", super::operations::FAILED_PAGE);
    let plan = generic_plan(&pool, &page, 5).await;
    let text = plan.join("\n");
    assert!(
        plan.iter()
            .any(|line| line.contains("notifications_failed_by_endpoint")),
        "the page walks the failed rows' index:\n{text}"
    );
    assert!(
        plan.iter()
            .any(|line| line.contains("Index Cond") && line.contains("ROW(completed_at, id) >")),
        "from the cursor, not from the window's start:\n{text}"
    );
    assert!(
        !plan.iter().any(|line| line.contains("Sort  (")),
        "in the index's order, without sorting the window:\n{text}"
    );
}

// Issue #48: housekeeping reads it once a minute in every process.
#[sqlx::test(migrator = "super::MIGRATOR")]
async fn the_due_backlog_walks_the_pending_index_in_due_order_up_to_its_bound(pool: PgPool) {
    // 100,000 pending rows over 100 endpoints, half of them attempted, a
    // third due.
    sqlx::raw_sql(
        "INSERT INTO endpoints (id, url, secret, schedule_ms) \
         SELECT hookd_uuid_v7(), 'http://receiver.test/', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', \
             '{0}' FROM generate_series(1, 100); \
         INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             attempts, deliver_at, next_attempt_at) \
         SELECT hookd_uuid_v7(), e.id, 'application/json', '\\x7b7d', '{0,60000}', 'pending', \
             g % 2, now(), now() + make_interval(secs => g - 333) \
         FROM generate_series(1, 1000) g, endpoints e; \
         ANALYZE endpoints, notifications, attempts",
    )
    .execute(&pool)
    .await
    .unwrap();
    let plan = generic_plan(&pool, super::due_age::DUE_BACKLOG, 2).await;
    let text = plan.join("\n");
    assert!(
        plan.iter()
            .any(|line| line.contains("notifications_pending_due")),
        "each kind walks the pending rows' index:\n{text}"
    );
    assert!(
        !plan.iter().any(|line| line
            .trim_start()
            .trim_start_matches("->  ")
            .starts_with("Sort  (")),
        "in the index's order, without sorting what is due:\n{text}"
    );
    assert!(
        plan.iter()
            .any(|line| line.contains("Index Cond: (next_attempt_at <= $1)")),
        "from the oldest due row, not past what is due:\n{text}"
    );
    assert_eq!(
        plan.iter().filter(|line| line.contains("Limit")).count(),
        2,
        "each walk stops at its bound:\n{text}"
    );
    assert!(
        !plan.iter().any(|line| line.contains("Seq Scan")),
        "no table is read in full:\n{text}"
    );
}

// Issue #48: retention walks every ordering key, a page at a time.
#[sqlx::test(migrator = "super::MIGRATOR")]
async fn a_page_of_ordering_keys_reads_the_key_rows_from_its_cursor_and_only_their_holders(
    pool: PgPool,
) {
    live_table(&pool, 1).await;
    // 20,000 keys of one endpoint, each with five notifications, one in a
    // hundred held by its first.
    sqlx::raw_sql(
        "INSERT INTO order_keys (endpoint_id, order_key, last_sequence) \
         SELECT '00000000-0000-7000-8000-000000000001', 'order-' || g, 5 \
         FROM generate_series(1, 20000) g; \
         INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             attempts, deliver_at, next_attempt_at, order_key, sequence) \
         SELECT hookd_uuid_v7(), endpoint_id, 'application/json', '\\x7b7d', '{0}', 'pending', \
             0, now(), now(), order_key, s \
         FROM order_keys, generate_series(1, 5) s; \
         UPDATE order_keys k SET held_by = n.id FROM notifications n \
         WHERE n.endpoint_id = k.endpoint_id AND n.order_key = k.order_key AND n.sequence = 1 \
           AND k.order_key LIKE '%00'; \
         ANALYZE order_keys, notifications",
    )
    .execute(&pool)
    .await
    .unwrap();
    let page = generic_plan(&pool, super::ordering_retention::KEY_PAGE, 3).await;
    let text = page.join("\n");
    assert!(
        page.iter().any(|line| line.contains("Index Cond:")
            && line.contains("ROW(endpoint_id, order_key) > ROW($1, $2)")),
        "the page starts at its cursor in order_keys' primary key:\n{text}"
    );
    assert!(
        page.iter()
            .any(|line| line.contains("Index Cond:") && line.contains("(id = k.held_by)")),
        "a holder is probed by its id:\n{text}"
    );
    assert!(
        !page
            .iter()
            .any(|line| line.contains("order_key = k.order_key")),
        "no key's notifications are read:\n{text}"
    );
    let delete = generic_plan(&pool, super::ordering_retention::DELETE_UNUSED_KEYS, 3).await;
    let text = delete.join("\n");
    assert!(
        !delete.iter().any(|line| line.contains("notifications")),
        "the delete reads the key rows alone:\n{text}"
    );
    for plan in [page, delete] {
        let text = plan.join("\n");
        // Only an empty partition (a day to come) is scanned: at no cost.
        let full = |line: &String| {
            (line.contains("Seq Scan on notifications") && !line.contains("..0.00 rows"))
                || line.contains("Hash")
        };
        assert!(
            !plan.iter().any(full),
            "the notifications are not read in full:\n{text}"
        );
    }
}

// Issue #48: housekeeping looks every second, a page at a time, for what
// waits for a notification retention removed.
#[sqlx::test(migrator = "super::MIGRATOR")]
async fn what_waits_for_a_removed_notification_is_found_through_the_behind_index(pool: PgPool) {
    live_table(&pool, 1).await;
    // 20,000 keys of one endpoint, each with five notifications; those of
    // one key in a hundred wait.
    sqlx::raw_sql(
        "INSERT INTO order_keys (endpoint_id, order_key, last_sequence) \
         SELECT '00000000-0000-7000-8000-000000000001', 'order-' || g, 5 \
         FROM generate_series(1, 20000) g; \
         INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             attempts, deliver_at, next_attempt_at, order_key, sequence, behind) \
         SELECT hookd_uuid_v7(), endpoint_id, 'application/json', '\\x7b7d', '{0}', 'pending', \
             0, now(), now(), order_key, s, \
             CASE WHEN s > 1 AND order_key LIKE '%00' THEN hookd_uuid_v7() END \
         FROM order_keys, generate_series(1, 5) s; \
         ANALYZE order_keys, notifications",
    )
    .execute(&pool)
    .await
    .unwrap();
    let orphaned = generic_plan(&pool, super::ordering_retention::ORPHANED, 3).await;
    let locked = generic_plan(&pool, super::ordering_retention::LOCK_KEYS, 2).await;
    let orphans = generic_plan(&pool, super::ordering_retention::ORPHANS, 2).await;
    for plan in [&orphaned, &orphans] {
        let text = plan.join("\n");
        assert!(
            plan.iter()
                .any(|line| line.contains("Index Scan using") && line.contains("behind")),
            "the waiting rows are read through notifications_behind:\n{text}"
        );
    }
    // Only an empty partition (a day to come) is scanned: at no cost; the
    // keys' rows are probed by their primary key.
    let full = |line: &String| line.contains("Seq Scan") && !line.contains("..0.00 rows");
    for plan in [&orphaned, &locked, &orphans] {
        let text = plan.join("\n");
        assert!(!plan.iter().any(full), "no table is read in full:\n{text}");
    }
    let text = locked.join("\n");
    assert!(!locked.iter().any(|line| line.contains("Hash")), "{text}");
}

// Issue #49: a portal's event types, read on each visit of its endpoint.
#[sqlx::test(migrator = "super::MIGRATOR")]
async fn the_recent_event_types_read_each_source_newest_first_on_its_index(pool: PgPool) {
    live_table(&pool, 5_000).await;
    for statement in super::recent_types::RECENT_EVENT_TYPES {
        let plan = generic_plan(&pool, statement, 4).await;
        let text = plan.join("\n");
        assert!(text.contains("events_owner_newest"), "{text}");
        assert!(text.contains("endpoint"), "{text}");
        assert!(!text.contains("Seq Scan"), "{text}");
        // One sort, the DISTINCT's, over at most twice the limit: each
        // source is read newest first on its index, its limit applied there.
        assert_eq!(text.matches("Sort  (").count(), 1, "{text}");
        assert!(text.find("Sort  (") < text.find("Append"), "{text}");
        assert!(text.contains("Merge Append"), "{text}");
    }
}
