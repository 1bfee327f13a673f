//! Operations as the store keeps them (`operations` table): a recover's
//! window or a bulk action's filter, its counts, where its next page
//! starts, and who works it until when; and what a page decides of the
//! rows it read, for both backends. What each is for is decided in
//! `domain::operation` and `domain::bulk`.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::StoreError;
use crate::domain::bulk::{BulkFilter, Candidate};
use crate::domain::created::CreatedWindow;
use crate::domain::lease::Lease;
use crate::domain::operation::{
    after_page, restart, OperationKind, OperationStatus, Paged, Window,
};
use crate::domain::status::Status;
use crate::domain::transition::Retried;

/// An operation, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    pub id: Uuid,
    pub kind: OperationKind,
    pub endpoint_id: Uuid,
    pub status: OperationStatus,
    /// The failures a page reads: a recover's window; a retry's from the
    /// beginning to when it started. A cancel's `until` is when it started:
    /// it cancels only notifications created by then.
    pub window: Window,
    /// What a retry or a cancel changes of those (`None` for a recover:
    /// all).
    pub filter: Option<BulkFilter>,
    /// Notifications found so far that it changes: failed ones of the
    /// window (and filter), or a cancel's pending ones its filter holds.
    pub matched: i64,
    /// Of those, restarted as a new series (a cancel's: cancelled).
    pub started: i64,
    /// The (failure time, id) of the last notification paged over.
    pub cursor: Option<(DateTime<Utc>, Uuid)>,
    pub lease_holder: Option<Uuid>,
    pub lease_until: Option<DateTime<Utc>>,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

impl Operation {
    /// A recover of `endpoint_id` over `window`, made at `now`, running,
    /// under no lease yet.
    pub fn recover(endpoint_id: Uuid, window: Window, now: DateTime<Utc>) -> Self {
        Self {
            id: crate::domain::id::new_id(),
            kind: OperationKind::Recover,
            endpoint_id,
            status: OperationStatus::Running,
            window,
            filter: None,
            matched: 0,
            started: 0,
            cursor: None,
            lease_holder: None,
            lease_until: None,
            error: None,
            created_at: now,
            updated_at: now,
            finished_at: None,
        }
    }

    /// A bulk retry of `endpoint_id`'s failed notifications that `filter`
    /// holds, made at `now`: over every failure until `now` (those that
    /// fail again after it, restarted by this one or not, are left).
    /// With `failed_since`, only those that failed at or after it (a
    /// recover's window, with a filter).
    pub fn retry(
        endpoint_id: Uuid,
        filter: BulkFilter,
        failed_since: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Self {
        let window = Window {
            since: failed_since.unwrap_or(DateTime::UNIX_EPOCH),
            ..bulk_window(now)
        };
        Self {
            kind: OperationKind::Retry,
            filter: Some(filter),
            ..Self::recover(endpoint_id, window, now)
        }
    }

    /// A bulk cancel of `endpoint_id`'s pending notifications that
    /// `filter` holds, made at `now`: those created until `now` (later
    /// ones are left).
    pub fn cancel(endpoint_id: Uuid, filter: BulkFilter, now: DateTime<Utc>) -> Self {
        Self {
            kind: OperationKind::Cancel,
            filter: Some(filter),
            ..Self::recover(endpoint_id, bulk_window(now), now)
        }
    }

    /// Whether a failed notification a page read is one this restarts.
    pub fn holds(&self, row: &FailedRow) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|filter| filter.holds(row.candidate()))
    }
}

/// A bulk retry's failures: every one until `now`.
pub fn bulk_window(now: DateTime<Utc>) -> Window {
    Window {
        since: DateTime::UNIX_EPOCH,
        until: now,
    }
}

/// A failed notification as a page reads it: what the restart rule and
/// a bulk retry's filter need.
#[derive(Debug, Clone)]
pub struct FailedRow {
    pub id: Uuid,
    pub status: Status,
    pub attempts: i32,
    pub lease: Option<Lease>,
    pub completed_at: DateTime<Utc>,
    pub pull: bool,
    pub created_at: DateTime<Utc>,
    /// Its own, or its event's.
    pub event_type: Option<String>,
    /// Its own, or its event's.
    pub key: Option<String>,
}

impl FailedRow {
    fn candidate(&self) -> Candidate<'_> {
        Candidate {
            created_at: self.created_at,
            event_type: self.event_type.as_deref(),
            key: self.key.as_deref(),
        }
    }
}

/// A notification of an endpoint as a cancel's page reads it (newest
/// first): what its filter needs, and whether it is pending.
#[derive(Debug, Clone)]
pub struct EndpointRow {
    pub id: Uuid,
    pub status: Status,
    pub created_at: DateTime<Utc>,
    /// Its own, or its event's.
    pub event_type: Option<String>,
    /// Its own, or its event's.
    pub key: Option<String>,
}

/// Where a cancel's walk over its endpoint's notifications (newest first,
/// by id) starts and where it ends, so that it reads only the ids that can
/// hold what it cancels: those created in its filter's window and by the
/// time it started (`CreatedWindow::id_range`). Without a created window,
/// the walk starts at what was created when it started and reads to the
/// oldest row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CancelWalk {
    /// The first page reads ids below this.
    pub from: Uuid,
    /// Ids below this hold no row it cancels.
    pub to: Option<Uuid>,
}

impl CancelWalk {
    pub(crate) fn of(operation: &Operation) -> Self {
        let filter = operation.filter.clone().unwrap_or_default();
        // `created_at <= until`: created before the next microsecond.
        let started = operation.window.until + chrono::Duration::microseconds(1);
        let window = CreatedWindow {
            after: filter.created_after,
            before: Some(filter.created_before.map_or(started, |b| b.min(started))),
        };
        let (to, from) = window.id_range();
        Self {
            from: from.unwrap_or(Uuid::max()),
            to,
        }
    }

    /// Where a page starts: after the operation's cursor, or at the walk's start.
    pub(crate) fn before(&self, cursor: Option<(DateTime<Utc>, Uuid)>) -> Uuid {
        cursor.map_or(self.from, |(_, id)| id)
    }

    /// Whether the walk is over after a page of `rows` of at most `limit`:
    /// a short page, or one that reached ids below the walk's end.
    pub(crate) fn ended(&self, rows: &[EndpointRow], limit: i64) -> bool {
        (rows.len() as i64) < limit
            || rows
                .last()
                .zip(self.to)
                .is_some_and(|(last, to)| last.id < to)
    }

    /// Where a page of `rows` (of at most `limit`), `matched` of them held
    /// and `cancelled` cancelled, leaves the operation.
    pub(crate) fn paged(
        &self,
        cursor: Option<(DateTime<Utc>, Uuid)>,
        rows: &[EndpointRow],
        (matched, cancelled): (usize, usize),
        limit: i64,
    ) -> Paged {
        let last = rows.last().map(|row| (row.created_at, row.id));
        Paged {
            done: self.ended(rows, limit),
            ..after_page(cursor, (rows.len(), matched), last, cancelled, limit)
        }
    }
}

impl EndpointRow {
    fn candidate(&self) -> Candidate<'_> {
        Candidate {
            created_at: self.created_at,
            event_type: self.event_type.as_deref(),
            key: self.key.as_deref(),
        }
    }
}

/// Of the rows a cancel's page read, the ids of those it cancels: pending,
/// created by the time it started, and held by its filter. Both backends'
/// pages, and the dry run's count, decide here.
pub(crate) fn cancels(operation: &Operation, rows: &[EndpointRow]) -> Vec<Uuid> {
    rows.iter()
        .filter(|row| row.status.cancellable() && row.created_at <= operation.window.until)
        .filter(|row| {
            operation
                .filter
                .as_ref()
                .is_none_or(|filter| filter.holds(row.candidate()))
        })
        .map(|row| row.id)
        .collect()
}

/// What a page makes of the failed rows it read (`rows`, in failure
/// order) for `operation` at `now`: how many match it, and those it
/// restarts with what each becomes (the single retry's rule, `restart`).
/// Both backends' pages, and the dry run's count, decide here.
pub(crate) fn restarts<'a>(
    operation: &Operation,
    rows: &'a [FailedRow],
    now: DateTime<Utc>,
) -> (usize, Vec<(&'a FailedRow, Retried)>) {
    let matching: Vec<&FailedRow> = rows.iter().filter(|row| operation.holds(row)).collect();
    let restarted = matching
        .iter()
        .filter_map(|row| {
            restart(row.status, row.attempts, row.lease, now, now).map(|retried| (*row, retried))
        })
        .collect();
    (matching.len(), restarted)
}

/// What starting an operation did.
#[derive(Debug)]
pub enum Started {
    /// Stored, running.
    Started(Operation),
    /// One of the same kind already runs for the endpoint: this one.
    Running(Operation),
}

/// What one page of an operation did.
#[derive(Debug, Default)]
pub struct OperationPage {
    /// A cancel's: the notifications cancelled (nothing left to index).
    pub cancelled: Vec<Uuid>,
    /// The notifications restarted (pending, due `at`), and whether each is
    /// a pull endpoint's (its consumers take it: nothing to index).
    pub restarted: Vec<(Uuid, bool)>,
    /// Those of `restarted` back in their key's line behind an earlier one
    /// (`store::ordering`): its end releases them; nothing to index.
    pub waiting: Vec<Uuid>,
    /// When they are due.
    pub at: Option<DateTime<Utc>>,
    /// The operation after the page (its counts, its cursor, its status).
    pub operation: Option<Operation>,
}

/// A backend's side of the operations' retention (`purge_operations`): the
/// candidates read and a delete fenced by what decided it.
#[async_trait::async_trait]
pub(crate) trait OperationRetention: Sync {
    /// Up to `limit` operations finished before `before`: (id, status as
    /// stored, finished at).
    async fn finished_before(
        &self,
        before: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, String, Option<DateTime<Utc>>)>, super::StoreError>;
    /// Deletes those of `ids` that still do not run (none runs again
    /// meanwhile); how many.
    async fn delete_finished(&self, ids: &[Uuid]) -> Result<u64, super::StoreError>;
}

/// Deletes up to `limit` of the operations finished before `before`, as
/// `domain::retention::operation_expired` decides, for both backends; how
/// many.
pub(crate) async fn purge_operations(
    store: &impl OperationRetention,
    before: DateTime<Utc>,
    limit: i64,
) -> Result<u64, super::StoreError> {
    let candidates = store.finished_before(before, limit).await?;
    let expired = expired(candidates, before);
    if expired.is_empty() {
        return Ok(0);
    }
    store.delete_finished(&expired).await
}

/// The ids among `candidates` (id, status as stored, finished at) that a
/// purge of what finished before `before` deletes:
/// `domain::retention::operation_expired` on each. A status neither
/// backend writes is kept.
fn expired(
    candidates: Vec<(uuid::Uuid, String, Option<chrono::DateTime<chrono::Utc>>)>,
    before: chrono::DateTime<chrono::Utc>,
) -> Vec<uuid::Uuid> {
    candidates
        .into_iter()
        .filter(|(_, status, finished_at)| {
            crate::domain::operation::OperationStatus::parse(status).is_some_and(|status| {
                crate::domain::retention::operation_expired(status, *finished_at, before)
            })
        })
        .map(|(id, ..)| id)
        .collect()
}

/// How many running operations a lease looks at, oldest first: few run.
pub(crate) const LEASE_CANDIDATES: i64 = 100;

/// The operation lease loop, written once for both backends: among the
/// running operations (`running`, as read, oldest first), the first
/// `domain::operation::leasable` at `now` that the backend's
/// compare-and-set (`take`: written only over the holder and lease end it
/// was read with) gives to the caller. `now` is the store's clock
/// (`crate::clock`), never the database's.
pub(crate) async fn lease_first<F, Fut, E>(
    running: Vec<Operation>,
    now: DateTime<Utc>,
    mut take: F,
) -> Result<Option<Operation>, E>
where
    F: FnMut(Operation) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Operation>, E>>,
{
    for candidate in running {
        if !crate::domain::operation::leasable(candidate.status, candidate.lease_until, now) {
            continue;
        }
        if let Some(taken) = take(candidate).await? {
            return Ok(Some(taken));
        }
    }
    Ok(None)
}

/// What operations need (docs/design.md §16, `service::recover`): start one
/// (one running per endpoint and kind), read one, lease one to a runner
/// (compare-and-set on the lease it read, so with several processes one
/// works an operation at a time), and work a recover page by page, each
/// page's restarts and the operation's cursor and counts in one
/// transaction.
#[async_trait::async_trait]
pub trait OperationStore: crate::store::seams::Clocked + Send + Sync + 'static {
    /// Stores `operation` unless one of its kind already runs for its
    /// endpoint; then returns that one.
    async fn start_operation(&self, operation: &Operation) -> Result<Started, StoreError>;
    async fn get_operation(&self, id: Uuid) -> Result<Option<Operation>, StoreError>;
    /// Leases to `holder`, until `until`, one operation that
    /// `domain::operation::leasable` says may be taken at `now`.
    async fn lease_operation(
        &self,
        holder: Uuid,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<Operation>, StoreError>;
    /// Works the next page (at most `limit` rows read) of operation `id`,
    /// which `holder` must hold: a recover's or a retry's restarts, each
    /// notification as `store::operations::restarts` decides at `now`; a
    /// cancel's cancels, as `store::operations::cancels` decides. Advances
    /// the cursor and the counts, renews the lease until `until`, and ends
    /// the operation `done` after its last page, all in one transaction.
    /// `None`: `holder` does not hold it (any more), or it no longer runs.
    async fn operation_page(
        &self,
        id: Uuid,
        holder: Uuid,
        limit: i64,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<OperationPage>, StoreError>;
    /// Up to `limit` of `endpoint`'s notifications that ended failed after
    /// `after` (failure time, id) and by `until`, in failure order, as a
    /// page reads them but under no lock and changing nothing: a bulk
    /// retry's dry run counts what it would restart.
    async fn failed_page(
        &self,
        endpoint: Uuid,
        after: (DateTime<Utc>, Uuid),
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailedRow>, StoreError>;
    /// Up to `limit` of `endpoint`'s notifications below `before`, newest
    /// first, as a cancel's page reads them but changing nothing: its dry
    /// run counts what it would cancel.
    async fn endpoint_page(
        &self,
        endpoint: Uuid,
        before: Uuid,
        limit: i64,
    ) -> Result<Vec<EndpointRow>, StoreError>;
    /// Ends operation `id`, held by `holder`, `failed` with `error`.
    async fn fail_operation(
        &self,
        id: Uuid,
        holder: Uuid,
        error: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Gives `holder`'s lease on `id` back (at shutdown), so that the next
    /// process takes it over at once rather than when it runs out.
    async fn release_operation(&self, id: Uuid, holder: Uuid) -> Result<(), StoreError>;
    /// Deletes up to `limit` operations `domain::retention::operation_expired`
    /// says go (finished before `before`); how many.
    async fn purge_operations(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError>;
}

pub type SharedOperations = Arc<dyn OperationStore>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::id::first_of_ms;

    fn row(id: Uuid) -> EndpointRow {
        EndpointRow {
            id,
            status: Status::Pending,
            created_at: DateTime::UNIX_EPOCH,
            event_type: None,
            key: None,
        }
    }

    #[test]
    fn a_cancels_walk_reads_only_the_ids_its_created_window_can_hold() {
        let at = |ms: i64| DateTime::from_timestamp_millis(ms).unwrap();
        let filter = BulkFilter {
            created_after: Some(at(1_000_000)),
            created_before: Some(at(2_000_000)),
            ..BulkFilter::default()
        };
        let walk = CancelWalk::of(&Operation::cancel(Uuid::nil(), filter, at(9_000_000)));
        let (to, from) = CreatedWindow {
            after: Some(at(1_000_000)),
            before: Some(at(2_000_000)),
        }
        .id_range();
        assert_eq!((Some(walk.from), walk.to), (from, to));
        // A full page that reached below the window's start ends it; one
        // still inside does not.
        let inside = vec![row(first_of_ms(1_500_000)); 2];
        assert!(!walk.ended(&inside, 2));
        let past = vec![row(first_of_ms(1_500_000)), row(first_of_ms(1))];
        assert!(walk.ended(&past, 2));
        // Without a window: from what existed when it started, to the oldest.
        let open = CancelWalk::of(&Operation::cancel(
            Uuid::nil(),
            BulkFilter::default(),
            at(9_000_000),
        ));
        assert!(open.from > first_of_ms(9_000_000) && open.to.is_none());
        assert!(!open.ended(&past, 2));
    }
}
