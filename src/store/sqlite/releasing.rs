//! What a SQLite recording's ordered ends release (#48,
//! docs/design.md §17), in the recording's transaction: the successors
//! read before the move (`successors_releasing`), what its successes
//! release besides them, written with its last statements
//! (`SUCCESSES_RELEASE`, `SuccessWrites`), and the successors it then
//! names for the due index (`released`). PostgreSQL does the same in its
//! own statements (`postgres::releasing::release_ended`).

use std::collections::HashSet;
use std::sync::LazyLock;

use sqlx::SqliteConnection;
use uuid::Uuid;

use super::columns::{self, id_list, IN_ID_LIST};
use super::store_error;
use crate::store::recording::{ended_by, AttemptRecord};
use crate::store::StoreError;

/// What the successes a recording moved release, besides the pushed
/// successors it returns to be indexed (`released`), written set-based
/// (migration `0025_recorded_successes_set_based.sql`), each over a list
/// of ids (`columns::id_list`, `SuccessWrites`):
/// - a success nothing waited for loses its key's tail if it was it (its
///   key's row found by the success's own row), the row stamped with the
///   success's time (`emptied_at`, for retention);
/// - a success frees the key it held (`order_keys_held_by`);
/// - its pull successors wait for nothing, and for a consumer from the
///   recording's `now` (the move's `updated_at`).
pub(super) static SUCCESSES_RELEASE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE order_keys AS k SET tail = NULL, \
             emptied_at = max(ifnull(k.emptied_at, 0), s.updated_at) \
         FROM (SELECT n.id, n.endpoint_id, n.order_key, n.updated_at FROM notifications n \
               WHERE n.id IN {IN_ID_LIST} AND n.sequence IS NOT NULL) AS s \
         WHERE k.endpoint_id = s.endpoint_id AND k.order_key = s.order_key AND k.tail = s.id; \
         UPDATE order_keys SET held_by = NULL WHERE held_by IN {IN_ID_LIST}; \
         UPDATE notifications SET behind = NULL, next_attempt_at = max(next_attempt_at, ?) \
         WHERE id IN {IN_ID_LIST} AND status = 'pending' AND pull = 1"
    )
});

/// `release_by_recorder`'s two writes.
pub(super) const RECORDER_ON: &str = "UPDATE release_by SET recorder = 1";
pub(super) const RECORDER_OFF: &str = "UPDATE release_by SET recorder = 0";

/// The notifications waiting behind any of a list of ids, with what they
/// wait for, their due times and whether they are pulled, read as one
/// (`columns::json_rows`).
pub(super) static SUCCESSORS: LazyLock<String> = LazyLock::new(|| {
    columns::json_rows(
        "hex(id), hex(behind), next_attempt_at, iif(pull, json('true'), json('false'))",
        &format!(
            "FROM notifications \
             WHERE behind IN {IN_ID_LIST} AND status = 'pending'"
        ),
    )
});

/// Of a list of ids, the ones released and marked for the index, with
/// their due times, read as one (`columns::json_rows`); `UNMARK` then
/// takes their marks.
pub(super) static RELEASED: LazyLock<String> = LazyLock::new(|| {
    columns::json_rows(
        "hex(id), next_attempt_at",
        &format!(
            "FROM notifications \
             WHERE id IN {IN_ID_LIST} AND needs_index = 1 AND status = 'pending' \
               AND behind IS NULL AND pull = 0"
        ),
    )
});

/// Takes the marks of a list of ids (`RELEASED`'s).
static UNMARK: LazyLock<String> =
    LazyLock::new(|| format!("UPDATE notifications SET needs_index = 0 WHERE id IN {IN_ID_LIST}"));

/// The recording transaction releases what its successes release itself
/// while `release_by.recorder` is on: the release trigger then stands
/// aside for them; their pushed successors are left unwritten and
/// returned to be indexed (`released`), and their key rows and pull
/// successors are written with the recording's last statements
/// (`SUCCESSES_RELEASE`; migrations `0018_success_releases_unwritten.sql`,
/// `0023_recorded_successes_apart.sql`,
/// `0025_recorded_successes_set_based.sql`). Switched on before the move with
/// the read of the successors (`RECORDER_ON`, `SUCCESSORS_RELEASING`) and
/// off with the recording's last statements (`FINISH_RELEASING`), before
/// the commit; a transaction that fails rolls it back. Only the move's
/// status changes read it.
static SUCCESSORS_RELEASING: LazyLock<String> =
    LazyLock::new(|| format!("{RECORDER_ON}; {}", SUCCESSORS.as_str()));

/// A notification waiting behind one a batch may end: its id, what it
/// waits for, its due time, whether it is pulled.
pub(super) type Successor = (Uuid, Uuid, i64, bool);

/// What the successes a recording moved release besides their pushed
/// successors (`SUCCESSES_RELEASE`), as lists of ids (`columns::id_list`): the ordered
/// successes nothing waited for (`tails`, each maybe its key's tail), all
/// of its ordered successes (`holders`, each maybe holding its key), and
/// their pull successors (`pulled`).
pub(super) struct SuccessWrites {
    pub tails: String,
    pub holders: String,
    pub pulled: String,
}

impl SuccessWrites {
    /// Of the recording's ordered successes (`moved_to_succeeded`), and the
    /// `successors` read before it.
    pub fn of(succeeded: &HashSet<Uuid>, successors: &[Successor]) -> Self {
        let waited_for: HashSet<Uuid> = successors.iter().map(|(_, behind, ..)| *behind).collect();
        let tails: Vec<Uuid> = succeeded.difference(&waited_for).copied().collect();
        let holders: Vec<Uuid> = succeeded.iter().copied().collect();
        let pulled: Vec<Uuid> = successors
            .iter()
            .filter(|(_, behind, _, pull)| *pull && succeeded.contains(behind))
            .map(|(id, ..)| *id)
            .collect();
        SuccessWrites {
            tails: id_list(&tails),
            holders: id_list(&holders),
            pulled: id_list(&pulled),
        }
    }
}

/// Of a list of ids, those that succeeded, read as one
/// (`columns::json_rows`).
static SUCCEEDED_ROWS: LazyLock<String> = LazyLock::new(|| {
    columns::json_rows(
        "hex(id)",
        &format!("FROM notifications WHERE id IN {IN_ID_LIST} AND status = 'succeeded'"),
    )
});

/// The ordered notifications of `records` that the recording moved to
/// succeeded (`recording::ended_by`): by their records, and, for one the
/// batch held two records of, by its row, read in the recording's
/// transaction (a read nearly no batch needs). Once per recording: what
/// it writes (`SuccessWrites`) and what it returns (`released`) take it.
pub(super) async fn moved_to_succeeded(
    conn: &mut SqliteConnection,
    records: &[AttemptRecord],
    moved: &[Uuid],
) -> Result<HashSet<Uuid>, StoreError> {
    let mut succeeded = HashSet::new();
    let mut by_row = Vec::new();
    for (id, by) in ended_by(records, moved) {
        match by.succeeded() {
            Some(true) => {
                succeeded.insert(id);
            }
            Some(false) => {}
            None => by_row.push(id),
        }
    }
    if !by_row.is_empty() {
        let text: String = sqlx::query_scalar(sqlx::AssertSqlSafe(SUCCEEDED_ROWS.as_str()))
            .bind(id_list(&by_row))
            .fetch_one(&mut *conn)
            .await
            .map_err(store_error)?;
        let rows: Vec<(Uuid,)> = columns::rows_of(&text).map_err(store_error)?;
        succeeded.extend(rows.into_iter().map(|(id,)| id));
    }
    Ok(succeeded)
}

/// The successors waiting behind `ending` (notifications whose records
/// end them, should they move): read before the recording moves them, as
/// the release trigger then clears the `behind` of those a failure or a
/// cancel passes over. One probe of `notifications_behind` per end. With
/// any, the recorder's release is switched on in the same go
/// (`SUCCESSORS_RELEASING`).
pub(super) async fn successors_releasing(
    conn: &mut SqliteConnection,
    ending: &[Uuid],
) -> Result<Vec<Successor>, StoreError> {
    if ending.is_empty() {
        return Ok(Vec::new());
    }
    let text: String = sqlx::query_scalar(sqlx::AssertSqlSafe(SUCCESSORS_RELEASING.as_str()))
        .bind(id_list(ending))
        .fetch_one(&mut *conn)
        .await
        .map_err(store_error)?;
    columns::rows_of(&text).map_err(store_error)
}

/// What a recording released, in SQLite (PostgreSQL releases them in the
/// recording's statement, `postgres::releasing::release_ended`), in its
/// transaction, of the `successors` read before it, with their due times:
/// - those behind a success it recorded, as they were (the success
///   released them; migration `0018_success_releases_unwritten.sql`);
/// - of the rest, those an end it recorded passed over and released (the
///   trigger cleared their `behind` and marked them): read by their ids
///   and unmarked.
pub(super) async fn released(
    conn: &mut SqliteConnection,
    succeeded: &HashSet<Uuid>,
    successors: Vec<Successor>,
) -> Result<Vec<(Uuid, chrono::DateTime<chrono::Utc>)>, StoreError> {
    if successors.is_empty() {
        return Ok(Vec::new());
    }
    // Pull successors are not indexed: a success's are written with the
    // recording (`SUCCESSES_RELEASE`), anything else's by the trigger.
    let (by_success, others): (Vec<Successor>, Vec<Successor>) = successors
        .into_iter()
        .filter(|(.., pull)| !pull)
        .partition(|(_, behind, ..)| succeeded.contains(behind));
    let mut released: Vec<(Uuid, i64)> = by_success
        .into_iter()
        .map(|(id, _, at, _)| (id, at))
        .collect();
    if !others.is_empty() {
        let others: Vec<Uuid> = others.iter().map(|(id, ..)| *id).collect();
        let text: String = sqlx::query_scalar(sqlx::AssertSqlSafe(RELEASED.as_str()))
            .bind(id_list(&others))
            .fetch_one(&mut *conn)
            .await
            .map_err(store_error)?;
        let passed: Vec<(Uuid, i64)> = columns::rows_of(&text).map_err(store_error)?;
        if !passed.is_empty() {
            let ids: Vec<Uuid> = passed.iter().map(|(id, _)| *id).collect();
            sqlx::query(sqlx::AssertSqlSafe(UNMARK.as_str()))
                .bind(id_list(&ids))
                .execute(&mut *conn)
                .await
                .map_err(store_error)?;
        }
        released.extend(passed);
    }
    released
        .into_iter()
        .map(|(id, at)| {
            let at = columns::time_of("next_attempt_at", at).map_err(store_error)?;
            Ok((id, at))
        })
        .collect()
}
