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

/// The plan's joins that match rows by comparing each with every other,
/// by id or by key: on a generic plan's guess of one row each side, a
/// batch of 1,000 made a million comparisons (46 ms for 1,000 ended tails
/// in `ENDED_KEYS`' update, against 5 ms probing each key row).
fn compared_joins(plan: &[String]) -> Vec<&String> {
    plan.iter()
        .filter(|line| {
            line.contains("Join Filter:")
                && (line.contains(".id =") || line.contains(".order_key ="))
        })
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
    // `order_keys` itself may be read whole here: never analyzed and
    // empty, it is nothing to read, and the plan is made again at its
    // first analyze (at 50 rows), after which each row is reached by its
    // key (the tests below).
    assert!(
        !plan.iter().any(|line| line.contains("notifications_order")),
        "nothing reads notifications_order:\n{text}"
    );
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn once_its_keys_are_analyzed_writing_a_batchs_ended_keys_reaches_each_row_by_its_key(
    pool: PgPool,
) {
    // The steady state: PostgreSQL plans a prepared statement again once
    // the statistics of a table it reads change (autovacuum's analyze, at
    // 50 rows and then 10 % changed). With the keys of one endpoint
    // analyzed, each key row is probed by the keyed row's key. With the
    // batch's keys also given as `ANY` lists (as they were), the plan read
    // the batch's rows through the lists once and compared each with every
    // keyed row: 499,500 comparisons, 46 ms, for 1,000 ended tails.
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
    assert_reaches_each_key_row_by_its_key(&plan);
}

/// Asserts that `ENDED_KEYS`' update reaches each key row by its key, and
/// compares no row with every other.
fn assert_reaches_each_key_row_by_its_key(plan: &[String]) {
    let text = plan.join("\n");
    assert_eq!(
        unbounded(plan),
        Vec::<&String>::new(),
        "nothing grows with the table, nor rows compared one by one:\n{text}"
    );
    assert!(
        plan.iter().any(|line| line.contains("Index Cond:")
            && line.contains("(endpoint_id = y.endpoint_id)")
            && line.contains("(order_key = y.order_key)")),
        "the update reaches each key row by its key:\n{text}"
    );
    for walk in ["Bitmap", "Seq Scan on order_keys"] {
        assert!(
            !plan.iter().any(|line| line.contains(walk)),
            "no {walk} of the key rows:\n{text}"
        );
    }
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn keys_analyzed_while_few_then_grown_are_still_each_reached_by_its_key(pool: PgPool) {
    // autovacuum's first analyze can find `order_keys` nearly empty; until
    // the next, the planner reads its size from the file. The update once
    // took every key of the batch's endpoints in that state (a bitmap scan
    // by endpoint filtered down to the batch: 179 ms for 1,000 ended tails
    // beside 20,000 keys).
    live_table(&pool, 5_000).await;
    sqlx::raw_sql(
        "ANALYZE order_keys; \
         INSERT INTO order_keys (endpoint_id, order_key, last_sequence) \
         SELECT '00000000-0000-7000-8000-000000000001', 'k' || n, 1 \
         FROM generate_series(1, 20000) AS n",
    )
    .execute(&pool)
    .await
    .unwrap();
    let plan = generic_plan(&pool, super::releasing::ENDED_KEYS, 7).await;
    assert_reaches_each_key_row_by_its_key(&plan);
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
