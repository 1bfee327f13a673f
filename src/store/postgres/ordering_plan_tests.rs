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
async fn passing_over_ended_predecessors_reads_each_row_by_its_primary_key(pool: PgPool) {
    live_table(&pool, 5_000).await;
    let plan = generic_plan(&pool, super::ordering::PASS_ENDED, 3).await;
    let text = plan.join("\n");
    assert_eq!(
        unbounded(&plan),
        Vec::<&String>::new(),
        "no index of waiting or pending rows, nor a span of ids, is walked:\n{text}"
    );
    for probe in [
        "(id = ANY ($1))",
        "(id = COALESCE(w.behind, w.id))",
        "(id = f.waiting)",
    ] {
        assert!(
            plan.iter()
                .any(|line| line.contains("Index Cond:") && line.contains(probe)),
            "{probe} is a primary-key probe:\n{text}"
        );
    }
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn the_released_heads_are_found_by_probing_each_key(pool: PgPool) {
    live_table(&pool, 5_000).await;
    let plan = generic_plan(&pool, super::ordering::RELEASED, 3).await;
    let text = plan.join("\n");
    assert_eq!(
        unbounded(&plan),
        Vec::<&String>::new(),
        "no index of marked or pending rows, nor a span of ids, is walked:\n{text}"
    );
    assert!(
        plan.iter().any(|line| line.contains("Index Cond:")
            && line.contains("endpoint_id = k.endpoint_id")
            && line.contains("order_key = k.order_key")),
        "each key's head is probed by its key:\n{text}"
    );
    assert!(
        !plan
            .iter()
            .any(|line| line.trim() == "Index Cond: (sequence IS NOT NULL)"),
        "the index of ordered rows is not read whole:\n{text}"
    );
    assert!(
        plan.iter()
            .any(|line| line.contains("Index Cond:") && line.contains("(id = ANY ($1))")),
        "the ended ones are read by their primary key:\n{text}"
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
