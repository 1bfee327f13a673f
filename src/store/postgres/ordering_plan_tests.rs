//! The plans of the statements of ordered delivery that go in by id or by
//! key (issue #48), made as hookd's connections make them (generic, once)
//! on statistics taken before any ordered row existed: the partial indexes
//! of waiting, ordered and marked rows then look empty, and a plan that
//! walks one of them whole looks free. In the ordering bench such plans
//! took 0.1-1.9 s a statement once 20,000 ordered rows were pending.

use sqlx::PgPool;

use super::plan_tests::{generic_plan, live_table};

/// The plan's lines whose work grows with the table or the batch rather
/// than with the rows asked for: a walk of an index of waiting, marked or
/// pending rows, of the primary key over a span of ids, or a join that
/// compares rows one by one.
fn unbounded(plan: &[String]) -> Vec<&String> {
    let spans = plan
        .iter()
        .filter(|line| line.trim() == "Index Cond: ((id >= $2) AND (id <= $3))");
    partial_index_reads(plan)
        .into_iter()
        .chain(spans)
        .chain(compared_joins(plan))
        .collect()
}

/// The plan's joins that match rows by comparing each with every other:
/// on a generic plan's guess of one row each side, a batch of 1,000 made
/// a million comparisons.
fn compared_joins(plan: &[String]) -> Vec<&String> {
    plan.iter()
        .filter(|line| line.contains("Join Filter:") && line.contains(".id ="))
        .collect()
}

/// Asserts that each of `probes` is an index condition of `plan`.
fn assert_probes(plan: &[String], probes: &[&str]) {
    for probe in probes {
        assert!(
            plan.iter()
                .any(|line| line.contains("Index Cond:") && line.contains(probe)),
            "{probe} is an index probe:\n{}",
            plan.join("\n")
        );
    }
}

/// The plan's lines that read an index of waiting, marked or pending rows.
fn partial_index_reads(plan: &[String]) -> Vec<&String> {
    plan.iter()
        .filter(|line| line.contains(" using "))
        .filter(|line| {
            ["behind", "needs_index", "pending_due"]
                .iter()
                .any(|index| line.contains(index))
        })
        .collect()
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn writing_a_batchs_ended_keys_probes_each_ended_one_and_its_keys_row(pool: PgPool) {
    live_table(&pool, 5_000).await;
    let plan = generic_plan(&pool, super::releasing::ENDED_KEYS, 7).await;
    let text = plan.join("\n");
    assert_eq!(
        unbounded(&plan),
        Vec::<&String>::new(),
        "no index of waiting or pending rows, nor a span of ids, is walked:\n{text}"
    );
    assert_probes(&plan, &["(id = ANY ($1))", "(endpoint_id = x.endpoint_id)"]);
    for walk in ["notifications_order", "Seq Scan on order_keys"] {
        assert!(
            !plan.iter().any(|line| line.contains(walk)),
            "nothing reads {walk}:\n{text}"
        );
    }
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn once_its_keys_are_analyzed_writing_a_batchs_ended_keys_reaches_each_row_by_its_key(
    pool: PgPool,
) {
    // Planned while `order_keys` looked empty (the test above), the
    // update reads every key of the batch's endpoints (a bitmap scan by
    // `endpoint_id`) and filters them. PostgreSQL plans a prepared
    // statement again once the statistics of a table it reads change, so
    // that plan lasts until the table's first analyze (autovacuum's, at 50
    // rows and 10 % of them changed). With the keys of one endpoint
    // analyzed, the rows are reached by both columns: by the batch's
    // keys, or by each keyed row's (a plan of real statistics in the
    // ordering bench probed each row, memoized by its key).
    live_table(&pool, 5_000).await;
    sqlx::raw_sql(
        "INSERT INTO order_keys (endpoint_id, order_key, last_sequence) \
         SELECT '00000000-0000-7000-8000-000000000001', 'k' || n, 1 \
         FROM generate_series(1, 20000) AS n; \
         ANALYZE order_keys",
    )
    .execute(&pool)
    .await
    .unwrap();
    let plan = generic_plan(&pool, super::releasing::ENDED_KEYS, 7).await;
    let text = plan.join("\n");
    assert!(
        !plan.iter().any(|line| line.contains("Bitmap")),
        "no key row is read by its endpoint alone:\n{text}"
    );
    assert!(
        plan.iter().any(|line| line.contains("Index Cond:")
            && line.contains("(endpoint_id = ")
            && (line.contains("order_key = y.order_key") || line.contains("order_key = ANY"))),
        "the update reaches the key rows by their endpoints and keys:\n{text}"
    );
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn releasing_a_batchs_ends_probes_each_ended_one_and_its_successors(pool: PgPool) {
    live_table(&pool, 5_000).await;
    let plan = generic_plan(&pool, super::releasing::RELEASE_ENDED, 7).await;
    let text = plan.join("\n");
    assert_probes(&plan, &["(id = ANY ($1))", "(behind = ANY"]);
    assert_behind_only_probed(&plan);
    for walk in [
        "order_key_sequence",
        "notifications_order",
        "Seq Scan on order_keys",
    ] {
        assert!(
            !plan.iter().any(|line| line.contains(walk)),
            "nothing reads {walk}:\n{text}"
        );
    }
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn a_requeued_keys_tail_is_found_by_probing_whether_one_waits_for_each_candidate(
    pool: PgPool,
) {
    live_table(&pool, 5_000).await;
    let plan = generic_plan(&pool, super::ordering::KEY_TAIL, 3).await;
    let text = plan.join("\n");
    assert!(
        !plan.iter().any(|line| line.contains("Anti Join")),
        "the waiting ones are not read whole and joined with the candidates:\n{text}"
    );
    assert!(
        plan.iter()
            .any(|line| line.contains("Index Cond:") && line.contains("(behind = n")),
        "whether one waits is a probe by the candidate's id:\n{text}"
    );
    assert!(
        plan.iter().any(|line| line.contains("Index Cond:")
            && line.contains("endpoint_id = k.endpoint_id")
            && line.contains("order_key = k.order_key")),
        "the key's candidates are probed by its key:\n{text}"
    );
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn clearing_index_marks_reads_only_the_primary_key(pool: PgPool) {
    live_table(&pool, 5_000).await;
    let plan = generic_plan(&pool, super::housekeeping::CLEAR_NEEDS_INDEX, 3).await;
    let text = plan.join("\n");
    assert_eq!(
        unbounded(&plan),
        Vec::<&String>::new(),
        "neither the index of marked rows nor a span of ids is walked:\n{text}"
    );
    assert!(
        plan.iter()
            .any(|line| line.contains("Sort Key: notifications") || line.contains("Sort Key: id")),
        "the rows are locked in id order:\n{text}"
    );
}

/// Asserts that `plan` reads the index of waiting rows only by probes
/// (`behind = ANY (<the ended ones>)`), never whole: a walk of it is a
/// read of every waiting notification. And that what it finds is matched
/// with what each waited for by a hash, not by comparing every successor
/// with every ended one.
fn assert_behind_only_probed(plan: &[String]) {
    let text = plan.join("\n");
    assert!(
        !plan
            .iter()
            .any(|line| line.contains("Join Filter:") && line.contains("behind")),
        "no successor is compared with every ended one:\n{text}"
    );
    for (at, line) in plan.iter().enumerate() {
        if line.contains(" using ") && line.contains("behind") {
            let probed = plan
                .get(at + 1)
                .is_some_and(|next| next.contains("Index Cond: (behind = "));
            assert!(
                probed,
                "the index of waiting rows is probed, not walked:\n{text}"
            );
        }
    }
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn releasing_a_batchs_ends_probes_the_successors_even_when_nothing_waited_at_the_last_analyze(
    pool: PgPool,
) {
    // The ordering bench's table: settled history only, analyzed. The
    // index of waiting rows looked empty, and a plan that hashed all of it
    // against the batch looked cheaper than a probe per ended one: once
    // 8,000 waited, each batch's release read them all to find its 500.
    live_table(&pool, 5_000).await;
    sqlx::raw_sql(
        "UPDATE notifications SET status = 'succeeded', next_attempt_at = NULL, \
             completed_at = now(), attempts = 1; \
         ANALYZE notifications",
    )
    .execute(&pool)
    .await
    .unwrap();
    let plan = generic_plan(&pool, super::releasing::RELEASE_ENDED, 7).await;
    assert_behind_only_probed(&plan);
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn housekeepings_walk_over_waiting_notifications_reads_one_span_of_them(pool: PgPool) {
    // As the drain bench's table: many pending, none waiting.
    live_table(&pool, 50_000).await;
    for (statement, parameters) in [
        (super::ordering::WAITING_PAGE_END, 2),
        (super::ordering_retention::ORPHANED, 3),
        (super::ordering::STRANDED, 4),
    ] {
        let plan = generic_plan(&pool, statement, parameters).await;
        let text = plan.join("\n");
        assert!(
            plan.iter()
                .any(|line| line.contains("Index Cond:") && line.contains("(behind > $")),
            "the waiting ones are read from where the walk is:\n{text}"
        );
        assert!(
            !plan
                .iter()
                .any(|line| line.contains("Seq Scan on notifications_legacy")),
            "nothing else is read whole:\n{text}"
        );
    }
}
