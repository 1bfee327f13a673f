//! What a recorded batch's ordered ends release, in PostgreSQL: the key
//! rows they leave (`ENDED_KEYS`), then the successors they let go
//! (`RELEASE_ENDED`), in the recording's transaction, after the recording
//! statement (`recording::RECORD_ATTEMPTS`), which returns the successes
//! with their keys so that neither statement reads them again.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::postgres::PgArguments;
use sqlx::{Arguments, PgConnection};
use uuid::Uuid;

use super::ordering::released;
use super::partitions::id_span;
use super::recording::Moved;
use crate::store::recording::{ended_by, AttemptRecord, EndedBy};
use crate::store::StoreError;

/// Says that this transaction releases the successors of the ordered
/// notifications it ends itself (`release_ended`), so that the release
/// trigger stands aside for it (migration `20261208000054`).
const RELEASE_IN_BATCH: &str = "SELECT set_config('hookd.release', 'batch', true)";

/// The ordered ones of a batch that ended, in (endpoint, key) order, the
/// order a create takes key rows in, each with what it waited for by the
/// rule (`behind`, NULL for its key's head: `ordering::released`) and what
/// its end does to its key: `holds` for a head that ended otherwise than
/// succeeded on an endpoint that holds its keys (`ordering_on_failure =
/// 'hold'`).
/// - The successes (`$4`, with their endpoints `$5` and keys `$6`) are
///   known in full from the recording: a success waits for nothing (the
///   recording cleared its `behind`), holds nothing, and was stamped `$7`.
///   Reading them again was a third of what the two statements cost an
///   ordered round of the bench, and over half the buffers they touched
///   (`BENCHMARKS.md`).
/// - The others (`$1`, ids from `$2` to `$3`) are read, each reached by
///   its primary key (not through `sequence IS NOT NULL`, which offers
///   `notifications_order` to a generic plan: the caller passes only
///   ordered ones).
macro_rules! ended_ordered {
    () => {
        concat!(
            "WITH ended AS MATERIALIZED ( \
                 SELECT * FROM ( \
                     SELECT s.id, s.endpoint_id, s.order_key, $7::timestamptz AS updated_at, \
                         true AS succeeded, NULL::uuid AS behind, false AS holds \
                     FROM UNNEST($4::uuid[], $5::uuid[], $6::text[]) AS s(id, endpoint_id, order_key) \
                     UNION ALL \
                     SELECT n.id, n.endpoint_id, n.order_key, n.updated_at, \
                         n.status = 'succeeded' AS succeeded, \
                         CASE WHEN NOT ",
            released!("n"),
            " THEN n.behind END AS behind, \
                         (n.status <> 'succeeded' AND ",
            released!("n"),
            " AND e.ordering_on_failure = 'hold') AS holds \
                     FROM notifications n JOIN endpoints e ON e.id = n.endpoint_id \
                     WHERE n.id = ANY($1) AND n.id BETWEEN $2 AND $3 \
                       AND n.order_key IS NOT NULL AND n.status <> 'pending' \
                 ) u ORDER BY u.endpoint_id, u.order_key \
             )"
        )
    };
}

/// `release_ended`'s first statement, the release trigger's rule
/// (`hookd_release_order`, migration `20261209000055`) for the key rows
/// of every notification of `$1` that ended ordered:
/// - the key's tail, ended, leaves the key its predecessor as tail (none
///   if it holds the key);
/// - one that succeeded frees its key if it held it;
/// - one that `holds` names itself on its key's row;
/// - each row it writes is stamped with the end's time (`emptied_at`,
///   which retention reads once the line is empty: migration
///   `20261217000063`).
///
/// Each key's row is read by its key in a lateral read that `OFFSET 0`
/// keeps from becoming a join over every key, and locked there, in the
/// ended ones' (endpoint, key) order; a row a create holds is waited for,
/// and read again as the create left it (its tail moved on: the row is
/// left alone). The update probes each row by its keyed row's key
/// (`ordering_plan_tests`). It once also took the batch's endpoints and
/// keys as `ANY` lists: a plan then read the rows through the lists and
/// compared each with every keyed row, quadratic in the batch (46 ms for
/// 1,000 ended tails against 5 ms), or, on statistics of a nearly empty
/// table, read every key of the endpoints (179 ms beside 20,000 keys).
pub(super) const ENDED_KEYS: &str = concat!(
    ended_ordered!(),
    ", keyed AS MATERIALIZED ( \
         SELECT x.endpoint_id, x.order_key, x.id, x.behind, x.succeeded, x.holds, x.updated_at \
         FROM ended x CROSS JOIN LATERAL (SELECT 1 FROM order_keys k \
             WHERE k.endpoint_id = x.endpoint_id AND k.order_key = x.order_key \
               AND (x.holds OR k.tail = x.id OR (x.succeeded AND k.held_by = x.id)) \
             FOR UPDATE OFFSET 0) k \
     ) UPDATE order_keys k SET \
         held_by = CASE WHEN y.holds THEN y.id \
             WHEN y.succeeded AND k.held_by = y.id THEN NULL ELSE k.held_by END, \
         tail = CASE WHEN k.tail = y.id THEN CASE WHEN y.holds THEN NULL ELSE y.behind END \
             ELSE k.tail END, \
         emptied_at = GREATEST(k.emptied_at, y.updated_at) \
     FROM keyed y \
     WHERE k.endpoint_id = y.endpoint_id AND k.order_key = y.order_key"
);

/// `release_ended`'s second statement, in a snapshot taken once the key
/// rows are written (`ENDED_KEYS`): the successors of each of `$1` that
/// ended ordered and does not hold its key.
/// - A success's push successors wait for nothing now, by the rule
///   (migration `20261210000056`), and are only read: each is returned
///   for the caller to index (its mark for the housekeeper is left clear:
///   the caller indexes it after the commit, and the overdue sweep if that
///   fails). Nothing is written on them.
/// - Every other successor is passed over, as the release trigger does: it
///   now waits for what the ended one waited for, and a pull one that waits
///   for nothing starts its wait for a consumer then. Those are locked in
///   id order before any is written, as `clear_needs_index` locks the rows
///   it clears: two transactions taking the same rows in opposite orders
///   deadlocked.
///
/// The successors are found by one read of `notifications_behind` per
/// partition, probed with the list of ended ones (`behind = ANY`), and
/// matched with what each waited for by a hash. A join on `behind` alone,
/// on statistics taken while nothing waited (the index looks empty), made
/// a generic plan hash the whole index against the batch, reading every
/// waiting notification per batch; a probe per ended one in a lateral
/// read ran on every partition once per ended one, the day partitions
/// made ahead and still empty included (`ordering_plan_tests`).
pub(super) const RELEASE_ENDED: &str = concat!(
    ended_ordered!(),
    ", waiting AS MATERIALIZED ( \
         SELECT s.id, s.pull, s.next_attempt_at, x.succeeded, x.behind, x.updated_at \
         FROM notifications s JOIN ended x ON x.id = s.behind \
         WHERE s.behind = ANY(ARRAY(SELECT x.id FROM ended x WHERE NOT x.holds)) \
           AND (s.status = 'pending') IS TRUE \
     ), locked AS ( \
         SELECT s.id, w.behind, w.updated_at FROM waiting w \
         JOIN notifications s ON s.id = w.id \
         WHERE NOT (w.succeeded AND NOT w.pull) \
         ORDER BY s.id FOR UPDATE OF s \
     ), passed AS ( \
         UPDATE notifications s SET \
             behind = w.behind, \
             next_attempt_at = CASE WHEN w.behind IS NULL AND s.pull \
                 THEN GREATEST(s.next_attempt_at, w.updated_at) ELSE s.next_attempt_at END \
         FROM locked w WHERE s.id = w.id \
         RETURNING s.id, s.next_attempt_at, w.behind IS NULL AND NOT s.pull AS released \
     ) \
     SELECT id, next_attempt_at FROM passed WHERE released \
     UNION ALL \
     SELECT id, next_attempt_at FROM waiting WHERE succeeded AND NOT pull"
);

/// Readies a recording transaction to release the successors of what it
/// ends (`release_ended`) instead of the trigger doing it row by row.
pub(super) async fn release_in_batch(conn: &mut PgConnection) -> Result<(), StoreError> {
    sqlx::query(RELEASE_IN_BATCH).execute(conn).await?;
    Ok(())
}

/// Hands the release back to the trigger for the rest of the transaction
/// (`release_in_batch`'s setting cleared).
const RELEASE_BY_TRIGGER: &str = "SELECT set_config('hookd.release', '', true)";

/// Releases what a set-based end that is not a recording (a cancel of
/// many, the breaker's fail of held ones) let go, after
/// `release_in_batch` and its update: `ended`, the ordered ones it ended.
/// As `release_ended` does for a recording: their key rows taken in a
/// create's order, (endpoint, key), where the trigger took them in the
/// order the update's rows came and could deadlock with a create of two
/// of the keys (`store::ordering`); a push successor that waits for
/// nothing now is marked for the housekeeper to index, as the trigger
/// marks it. Then the trigger releases again whatever the rest of the
/// caller's transaction ends.
pub(super) async fn release_ended_apart(
    conn: &mut PgConnection,
    ended: Vec<Uuid>,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let ends = Ends {
        others: ended,
        ..Ends::default()
    };
    let released: Vec<Uuid> = release_ended(conn, &ends, now)
        .await?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    if !released.is_empty() {
        let (low, high) = id_span(&released);
        sqlx::query(
            "UPDATE notifications SET needs_index = true \
             WHERE id = ANY($1) AND id BETWEEN $2 AND $3",
        )
        .bind(&released)
        .bind(low)
        .bind(high)
        .execute(&mut *conn)
        .await?;
    }
    sqlx::query(RELEASE_BY_TRIGGER).execute(conn).await?;
    Ok(())
}

/// The ordered ends of a recorded batch, as `ended_ordered!` takes them:
/// the successes with their endpoints and keys, and the others' ids.
#[derive(Debug, Default)]
pub(super) struct Ends {
    succeeded: Vec<Uuid>,
    endpoints: Vec<Uuid>,
    keys: Vec<String>,
    others: Vec<Uuid>,
}

impl Ends {
    /// The ends among `records` of those the recording `moved`
    /// (`recording::ended_by`): a success by its record (it moved, so its
    /// row is as decided) and the key the recording returned; any other
    /// end by id, and so is one whose row says how it ended.
    pub(super) fn of(records: &[AttemptRecord], moved: &Moved) -> Ends {
        let keys: HashMap<Uuid, &String> = moved
            .ids
            .iter()
            .zip(&moved.order_keys)
            .filter_map(|(id, key)| Some((*id, key.as_ref()?)))
            .collect();
        let mut ends = Ends::default();
        for (id, by) in ended_by(records, &moved.ids) {
            match (by, keys.get(&id)) {
                (EndedBy::Record(record), Some(key)) if by.succeeded() == Some(true) => {
                    ends.succeeded.push(id);
                    ends.endpoints.push(record.endpoint_id);
                    ends.keys.push((*key).clone());
                }
                _ => ends.others.push(id),
            }
        }
        ends
    }

    /// The seven values both statements take (`ended_ordered!`), encoded
    /// once: the others with the span of their ids, the successes with
    /// their endpoints and keys, and the recording's time.
    fn arguments(&self, now: DateTime<Utc>) -> Result<PgArguments, sqlx::error::BoxDynError> {
        let (low, high) = id_span(&self.others);
        let mut arguments = PgArguments::default();
        arguments.add(&self.others)?;
        arguments.add(low)?;
        arguments.add(high)?;
        arguments.add(&self.succeeded)?;
        arguments.add(&self.endpoints)?;
        arguments.add(&self.keys)?;
        arguments.add(now)?;
        Ok(arguments)
    }

    fn is_empty(&self) -> bool {
        self.succeeded.is_empty() && self.others.is_empty()
    }
}

/// Releases the successors of what the batch ended ordered (`Ends`),
/// after `release_in_batch` (`ENDED_KEYS`, then `RELEASE_ENDED`); returns
/// the heads it released, to be indexed (`Recorded::released`).
pub(super) async fn release_ended(
    conn: &mut PgConnection,
    ends: &Ends,
    now: DateTime<Utc>,
) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
    if ends.is_empty() {
        return Ok(Vec::new());
    }
    let arguments = ends.arguments(now).map_err(sqlx::Error::Encode)?;
    // Two statements: the second's snapshot sees every create that held
    // a key row the first waited for (`store::ordering`).
    sqlx::query_with(ENDED_KEYS, arguments.clone())
        .execute(&mut *conn)
        .await?;
    Ok(sqlx::query_as_with(RELEASE_ENDED, arguments)
        .fetch_all(conn)
        .await?)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use uuid::Uuid;

    use super::super::recording::Moved;
    use super::Ends;
    use crate::domain::outcome::{FailReason, Outcome};
    use crate::domain::status::{after_attempt, expected, Keeping};
    use crate::store::recording::AttemptRecord;

    /// An attempt at ordered notification `id` that ends it with `outcome`.
    fn ending(id: Uuid, endpoint_id: Uuid, outcome: Outcome) -> AttemptRecord {
        AttemptRecord {
            notification_id: id,
            endpoint_id,
            number: 1,
            expected: expected(0, 0, None, false),
            keep: Keeping {
                inline: false,
                when_refused: false,
            },
            started_at: Utc::now(),
            due_at: None,
            duration_ms: 1,
            status_code: Some(200),
            response_body: None,
            response_headers: None,
            sent_headers: None,
            error_code: None,
            error_message: None,
            next: after_attempt(&outcome, None),
            outcome,
            tells_of_endpoint: true,
            event: None,
            ordered: true,
        }
    }

    #[test]
    fn a_moved_success_is_taken_from_its_record_and_every_other_end_is_read_by_id() {
        let endpoint = Uuid::now_v7();
        let [success, failure, twice, unmoved, unkeyed] = [(); 5].map(|_| Uuid::now_v7());
        let records = vec![
            ending(success, endpoint, Outcome::Succeeded),
            ending(failure, endpoint, Outcome::Failed(FailReason::Exhausted)),
            ending(twice, endpoint, Outcome::Succeeded),
            ending(twice, endpoint, Outcome::Failed(FailReason::Exhausted)),
            ending(unmoved, endpoint, Outcome::Succeeded),
            ending(unkeyed, endpoint, Outcome::Succeeded),
        ];
        let key = |k: &str| Some(k.to_string());
        let moved = Moved {
            ids: vec![success, failure, twice, unkeyed],
            order_keys: vec![key("a"), key("b"), key("c"), None],
        };
        let ends = Ends::of(&records, &moved);
        assert_eq!(ends.succeeded, vec![success]);
        assert_eq!(ends.endpoints, vec![endpoint]);
        assert_eq!(ends.keys, vec!["a".to_string()]);
        assert_eq!(ends.others, vec![failure, twice, unkeyed]);
    }
}
