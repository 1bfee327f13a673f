//! One page of an operation (`OperationStore::operation_page`), written
//! once for both backends: a backend's `PageStep` reads under its locks
//! (PostgreSQL's, or SQLite's one writer) and writes; what each page
//! does is decided here and in `store::operations` (`cancels`,
//! `restarts`, `CancelWalk`) and `domain::operation` (`after_page`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::operations::{
    cancels, restarts, CancelWalk, EndpointRow, FailedRow, Operation, OperationPage,
};
use super::StoreError;
use crate::domain::operation::{after_page, OperationKind, OperationStatus, Paged};
use crate::domain::transition::Retried;

/// What a recover or a bulk retry whose endpoint was deleted ends with:
/// nothing would send what it restarts (the dispatcher cancels what a
/// deleted endpoint holds). A bulk cancel walks on (the delete cancelled
/// what it would, so it cancels nothing more) and ends `done`.
pub(crate) const ENDPOINT_DELETED: &str = "the endpoint was deleted";

/// A backend's side of one page, in one transaction.
#[async_trait::async_trait]
pub(crate) trait PageStep: Send {
    /// The operation, locked until `commit`.
    async fn operation(&mut self, id: Uuid) -> Result<Option<Operation>, StoreError>;
    /// Whether `endpoint` is deleted (or missing). PostgreSQL reads it
    /// under no lock (the recorder locks notifications, then their
    /// endpoint): a delete committed while the page runs leaves what it
    /// restarts pending, and the dispatcher cancels those as orphans; the
    /// next page sees the delete.
    async fn endpoint_deleted(&mut self, endpoint: Uuid) -> Result<bool, StoreError>;
    /// Up to `limit` of `endpoint`'s notifications below `before`, newest
    /// first.
    async fn endpoint_page(
        &mut self,
        endpoint: Uuid,
        before: Uuid,
        limit: i64,
    ) -> Result<Vec<EndpointRow>, StoreError>;
    /// The cancel every path uses (`cancel_pending`) of `ids`: those it
    /// cancelled.
    async fn cancel(&mut self, ids: &[Uuid], now: DateTime<Utc>) -> Result<Vec<Uuid>, StoreError>;
    /// Up to `limit` of `endpoint`'s failed notifications after `after`
    /// and by `until`, in failure order, locked.
    async fn failed_page(
        &mut self,
        endpoint: Uuid,
        after: (DateTime<Utc>, Uuid),
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailedRow>, StoreError>;
    /// Writes each restart, then puts them back in their keys' lines
    /// (`store::ordering`): those that wait behind an earlier one.
    async fn restart(
        &mut self,
        endpoint: Uuid,
        restarting: &[(&FailedRow, Retried)],
        now: DateTime<Utc>,
    ) -> Result<Vec<Uuid>, StoreError>;
    /// Adds the page's counts, moves the cursor, renews the lease until
    /// `until` and sets the status (a final one with `finished_at`, and
    /// `error` when given); the operation after it.
    async fn record(
        &mut self,
        id: Uuid,
        paged: &Paged,
        (status, error): (OperationStatus, Option<&str>),
        until: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Operation, StoreError>;
    async fn commit(self) -> Result<(), StoreError>;
}

/// `OperationStore::operation_page` over a backend's `step`. A recover or
/// a bulk retry whose endpoint was deleted ends `failed`
/// (`ENDPOINT_DELETED`) without a page.
pub(crate) async fn operation_page(
    mut step: impl PageStep,
    (id, holder): (Uuid, Uuid),
    limit: i64,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Option<OperationPage>, StoreError> {
    let Some(op) = step.operation(id).await? else {
        return Ok(None);
    };
    if op.status != OperationStatus::Running || op.lease_holder != Some(holder) {
        return Ok(None);
    }
    let restarts = matches!(op.kind, OperationKind::Recover | OperationKind::Retry);
    let (paged, page, ended) = if restarts && step.endpoint_deleted(op.endpoint_id).await? {
        let paged = after_page(op.cursor, (0, 0), None, 0, limit);
        let ended = (OperationStatus::Failed, Some(ENDPOINT_DELETED));
        (paged, OperationPage::default(), ended)
    } else {
        let (paged, page) = match op.kind {
            OperationKind::Cancel => cancel_page(&mut step, &op, limit, now).await?,
            OperationKind::Recover | OperationKind::Retry => {
                restart_page(&mut step, &op, limit, now).await?
            }
        };
        let status = if paged.done {
            OperationStatus::Done
        } else {
            OperationStatus::Running
        };
        (paged, page, (status, None))
    };
    let after = step.record(id, &paged, ended, until, now).await?;
    step.commit().await?;
    Ok(Some(OperationPage {
        operation: Some(after),
        ..page
    }))
}

/// A recover's or a retry's page: the endpoint's failed notifications
/// after the cursor (from the window's start), those `restarts` says,
/// restarted by the retry rule at `now` and put back in their keys' lines.
async fn restart_page(
    step: &mut impl PageStep,
    op: &Operation,
    limit: i64,
    now: DateTime<Utc>,
) -> Result<(Paged, OperationPage), StoreError> {
    // The first page starts at `since` (every id is above the nil one).
    let after = op.cursor.unwrap_or((op.window.since, Uuid::nil()));
    let rows = step
        .failed_page(op.endpoint_id, after, op.window.until, limit)
        .await?;
    let (matched, restarting) = restarts(op, &rows, now);
    let waiting = step.restart(op.endpoint_id, &restarting, now).await?;
    let restarted: Vec<(Uuid, bool)> = restarting.iter().map(|(r, _)| (r.id, r.pull)).collect();
    let last = rows.last().map(|row| (row.completed_at, row.id));
    let found = (rows.len(), matched);
    let paged = after_page(op.cursor, found, last, restarted.len(), limit);
    let page = OperationPage {
        restarted,
        waiting,
        at: Some(now),
        ..OperationPage::default()
    };
    Ok((paged, page))
}

/// A cancel's page: the endpoint's notifications before the cursor,
/// newest first, those `cancels` says cancelled by the statement every
/// cancel uses (which changes only rows still pending).
async fn cancel_page(
    step: &mut impl PageStep,
    op: &Operation,
    limit: i64,
    now: DateTime<Utc>,
) -> Result<(Paged, OperationPage), StoreError> {
    let walk = CancelWalk::of(op);
    let rows = step
        .endpoint_page(op.endpoint_id, walk.before(op.cursor), limit)
        .await?;
    let ids = cancels(op, &rows);
    let cancelled = if ids.is_empty() {
        Vec::new()
    } else {
        step.cancel(&ids, now).await?
    };
    let paged = walk.paged(op.cursor, &rows, (ids.len(), cancelled.len()), limit);
    let page = OperationPage {
        cancelled,
        ..OperationPage::default()
    };
    Ok((paged, page))
}
