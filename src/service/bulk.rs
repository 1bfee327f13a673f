//! Bulk actions by filter (docs/design.md §18): `POST
//! /v1/notifications/retry` starts an operation of kind `retry` that
//! `Recovery` runs as it runs a recover (one page of the endpoint's failed
//! notifications at a time, each page's restarts and the operation's
//! progress in one transaction, resumed by whichever process holds its
//! lease), restarting those its filter holds (`domain::bulk`); `POST
//! /v1/notifications/cancel` with a filter starts one of kind `cancel`,
//! which pages over the endpoint's notifications newest first and cancels
//! the pending ones its filter holds. A dry run (of either, or of a
//! recover) counts them with the same pages and the same rule, changing
//! nothing.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::recover::Recovery;
use super::ServiceError;
use crate::domain::bulk::BulkFilter;
use crate::domain::operation::{self, OperationKind, PAGE};
use crate::domain::operator_event::spared_from;
use crate::domain::problem::{shown, ErrorCode, Problem};
use crate::store::endpoints::EndpointRef;
use crate::store::operations::{cancels, restarts, CancelWalk, Operation, Started};

/// What a request for an operation (a recover, a retry or a cancel by
/// filter) did.
#[derive(Debug)]
pub enum Asked {
    /// A dry run: how many notifications it would change now.
    Matched(i64),
    Started(Box<Started>),
}

impl Recovery {
    /// A bulk retry of endpoint `endpoint`'s (id or uid) failed
    /// notifications that `filter` holds: started, unless one runs for the
    /// endpoint; or, `dry_run`, counted.
    pub async fn start_retry(
        &self,
        endpoint: &str,
        filter: BulkFilter,
        failed_since: Option<DateTime<Utc>>,
        dry_run: bool,
    ) -> Result<Asked, ServiceError> {
        let found = self.endpoint(endpoint).await?;
        let now = self.now();
        let failed_since = operation::failed_since(failed_since, now)?;
        self.ask(Operation::retry(found, filter, failed_since, now), dry_run)
            .await
    }

    /// A bulk cancel of endpoint `endpoint`'s pending notifications that
    /// `filter` holds, as `start_retry`. The operator endpoint's only with
    /// `admin`, as a cancel by key.
    pub async fn start_cancel(
        &self,
        endpoint: &str,
        filter: BulkFilter,
        dry_run: bool,
        admin: bool,
    ) -> Result<Asked, ServiceError> {
        let found = self.endpoint(endpoint).await?;
        if spared_from(admin) == Some(found) {
            return Err(Problem::forbidden(
                "operator alerts are cancelled with an admin token only",
            )
            .into());
        }
        let now = self.now();
        self.ask(Operation::cancel(found, filter, now), dry_run)
            .await
    }

    /// The id of the endpoint a request names in its body.
    async fn endpoint(&self, endpoint: &str) -> Result<Uuid, ServiceError> {
        let found = self
            .service()
            .store
            .find_endpoint(&EndpointRef::parse(endpoint))
            .await?
            .ok_or_else(|| {
                Problem::invalid(
                    ErrorCode::UnknownEndpoint,
                    "endpoint",
                    format!("no endpoint has id or uid `{}`", shown(endpoint)),
                )
            })?;
        Ok(found.id)
    }

    /// Starts `operation` (unless one of its kind runs for its endpoint),
    /// or, `dry_run`, counts what it would change.
    pub(super) async fn ask(
        &self,
        operation: Operation,
        dry_run: bool,
    ) -> Result<Asked, ServiceError> {
        if dry_run {
            return Ok(Asked::Matched(self.count(&operation).await?));
        }
        let started = self.store().start_operation(&operation).await?;
        if let Started::Started(operation) = &started {
            tracing::info!(operation_id = %operation.id, endpoint_id = %operation.endpoint_id,
                kind = operation.kind.as_str(), since = %operation.window.since,
                until = %operation.window.until, filter = ?operation.filter, "operation started");
            self.wake();
        }
        Ok(Asked::Started(Box::new(started)))
    }

    /// How many notifications `operation` would change now: every page it
    /// would read, each decided as a page decides it.
    async fn count(&self, operation: &Operation) -> Result<i64, ServiceError> {
        let mut total = 0;
        match operation.kind {
            OperationKind::Cancel => {
                let walk = CancelWalk::of(operation);
                let mut before = walk.from;
                loop {
                    let rows = self
                        .store()
                        .endpoint_page(operation.endpoint_id, before, PAGE)
                        .await?;
                    total += cancels(operation, &rows).len() as i64;
                    match rows.last() {
                        Some(last) if !walk.ended(&rows, PAGE) => before = last.id,
                        _ => return Ok(total),
                    }
                }
            }
            OperationKind::Recover | OperationKind::Retry => {
                let window = operation.window;
                let mut after = (window.since, Uuid::nil());
                loop {
                    let rows = self
                        .store()
                        .failed_page(operation.endpoint_id, after, window.until, PAGE)
                        .await?;
                    let (_, restarting) = restarts(operation, &rows, operation.created_at);
                    total += restarting.len() as i64;
                    match rows.last() {
                        Some(last) if rows.len() as i64 == PAGE => {
                            after = (last.completed_at, last.id)
                        }
                        _ => return Ok(total),
                    }
                }
            }
        }
    }
}
