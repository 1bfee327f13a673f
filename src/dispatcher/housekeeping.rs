//! Keeping the due index whole and the history bounded, in the background:
//! - rows marked `needs_index` (created while Redis was down) are indexed;
//! - when the index marker is missing (Redis restarted empty, flushed, failed
//!   over), one process rebuilds `due` from PostgreSQL, page by page;
//! - a periodic sweep re-indexes rows overdue by more than a minute that are
//!   in neither Redis set (e.g. a crash between commit and ZADD);
//! - retention deletes final notifications older than `retention.days`;
//! - the operator endpoint is made to match `operator.url`, and endpoints
//!   failing for `dispatcher.disable_failing_endpoints_after_hours` are
//!   disabled.

use std::time::{Duration, Instant};

use chrono::Utc;
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::due::rebuild::IndexState;
use crate::due::DueIndex;
use crate::store::delivery::PendingCursor;
use crate::store::Store;

const TICK: Duration = Duration::from_secs(1);
const SWEEP_INTERVAL: Duration = Duration::from_secs(30);
/// A row this overdue should have been claimed long ago.
const SWEEP_OVERDUE: chrono::Duration = chrono::Duration::minutes(1);
const RETENTION_INTERVAL: Duration = Duration::from_secs(600);
const PAGE: i64 = 5000;
const PURGE_BATCH: i64 = 1000;
const LOCK_TTL: Duration = Duration::from_secs(30);

pub async fn run(
    store: Store,
    due: DueIndex,
    settings: std::sync::Arc<Settings>,
    shutdown: CancellationToken,
) {
    let token = uuid::Uuid::now_v7().to_string();
    let mut sweep_cursor: Option<PendingCursor> = None;
    let mut last_sweep = Instant::now();
    let mut last_retention: Option<Instant> = None;
    let mut operator_synced = false;
    loop {
        if !operator_synced {
            let operator = &settings.operator;
            let target = operator
                .enabled()
                .then(|| (operator.url.expose(), operator.secret.expose()));
            match store.sync_operator_endpoint(target).await {
                Ok(()) => operator_synced = true,
                Err(error) => {
                    tracing::warn!(%error, "cannot set up the operator endpoint; retrying")
                }
            }
        }
        let hours = settings.dispatcher.disable_failing_endpoints_after_hours;
        if hours > 0 {
            let before = Utc::now() - chrono::Duration::hours(i64::from(hours));
            match store
                .disable_failing_endpoints(before, settings.operator.enabled())
                .await
            {
                Ok(ids) => {
                    for id in ids {
                        metrics::counter!("hookd_endpoints_disabled_total").increment(1);
                        tracing::warn!(endpoint_id = %id, hours, "disabled an endpoint whose every attempt failed");
                    }
                }
                Err(error) => tracing::debug!(%error, "cannot check for failing endpoints"),
            }
        }
        if let Err(error) = index_marked(&store, &due).await {
            tracing::debug!(%error, "indexing marked rows will be tried again");
        }
        match due.index_state().await {
            Ok(IndexState::Missing | IndexState::OtherFormat) => {
                match rebuild(&store, &due, &token, &shutdown).await {
                    Ok(Some((added, took))) => {
                        metrics::counter!("hookd_index_rebuilds_total").increment(1);
                        tracing::info!(
                            added,
                            took_ms = took.as_millis() as u64,
                            "rebuilt the due index from PostgreSQL"
                        )
                    }
                    Ok(None) => {}
                    Err(error) => {
                        tracing::warn!(%error, "rebuild of the due index failed; retrying")
                    }
                }
            }
            Ok(IndexState::Complete) => {}
            Err(error) => tracing::debug!(%error, "cannot check the due index marker"),
        }
        // Sampled here, once a second, not computed per scrape.
        if let Ok((due_count, leased)) = due.depth().await {
            metrics::gauge!("hookd_due_notifications").set(due_count as f64);
            metrics::gauge!("hookd_leased_notifications").set(leased as f64);
        }
        if last_sweep.elapsed() >= SWEEP_INTERVAL {
            last_sweep = Instant::now();
            match sweep(&store, &due, &mut sweep_cursor).await {
                Ok(0) => {}
                Ok(added) => {
                    metrics::counter!("hookd_sweep_reindexed_total").increment(added as u64);
                    tracing::warn!(added, "re-indexed overdue notifications missing from Redis")
                }
                Err(error) => tracing::debug!(%error, "sweep failed; retrying later"),
            }
        }
        if settings.retention.days > 0
            && last_retention.is_none_or(|t| t.elapsed() >= RETENTION_INTERVAL)
        {
            last_retention = Some(Instant::now());
            let before = Utc::now() - chrono::Duration::days(i64::from(settings.retention.days));
            match purge(&store, before, &shutdown).await {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(deleted, "retention removed old notifications"),
                Err(error) => tracing::warn!(%error, "retention failed; retrying later"),
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(TICK) => {}
        }
    }
}

/// Indexes rows marked when Redis was unreachable at their creation.
async fn index_marked(store: &Store, due: &DueIndex) -> anyhow::Result<()> {
    loop {
        let rows = store.needing_index(1000).await?;
        if rows.is_empty() {
            return Ok(());
        }
        let pending: Vec<_> = rows
            .iter()
            .filter_map(|(id, due_at)| due_at.map(|at| (*id, at)))
            .collect();
        // Only ids in neither set: a row whose indexing merely timed out may
        // be due or leased already, and must not be queued twice.
        let added = due.add_missing(&pending).await?;
        metrics::counter!("hookd_deferred_indexed_total").increment(added as u64);
        let ids: Vec<_> = rows.iter().map(|(id, _)| *id).collect();
        store.clear_needs_index(&ids).await?;
        tracing::info!(
            count = pending.len(),
            "indexed notifications created while Redis was unreachable, or operator events"
        );
    }
}

/// Rebuilds `due` from every pending row, if this process gets the lock.
/// Returns how many ids were added and how long it took.
pub async fn rebuild(
    store: &Store,
    due: &DueIndex,
    token: &str,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<(usize, Duration)>> {
    if !due.lock_rebuild(token, LOCK_TTL).await? {
        return Ok(None);
    }
    // Looked at again under the lock: another process may have rebuilt it.
    match due.index_state().await? {
        IndexState::Complete => {
            due.unlock_rebuild(token).await?;
            return Ok(None);
        }
        IndexState::Missing => tracing::warn!(
            "the due index marker is missing (Redis restarted, flushed or failed over): rebuilding"
        ),
        IndexState::OtherFormat => {
            tracing::warn!(
                "the due index was written by a build with another member format: clearing and rebuilding it"
            );
            due.clear_index().await?;
        }
    }
    let started = Instant::now();
    let mut cursor = None;
    let mut added = 0;
    loop {
        if shutdown.is_cancelled() {
            due.unlock_rebuild(token).await?;
            return Ok(None);
        }
        let page = store.pending_page(cursor, None, PAGE).await?;
        added += due.add_missing(&page).await?;
        if (page.len() as i64) < PAGE {
            break;
        }
        cursor = page.last().map(|(id, at)| (*at, *id));
        due.lock_rebuild(token, LOCK_TTL).await?;
    }
    due.mark_indexed().await?;
    due.unlock_rebuild(token).await?;
    Ok(Some((added, started.elapsed())))
}

/// Checks one page of overdue rows; continues where the last sweep stopped.
async fn sweep(
    store: &Store,
    due: &DueIndex,
    cursor: &mut Option<PendingCursor>,
) -> anyhow::Result<usize> {
    let page = store
        .pending_page(*cursor, Some(Utc::now() - SWEEP_OVERDUE), PAGE)
        .await?;
    *cursor = if (page.len() as i64) < PAGE {
        None
    } else {
        page.last().map(|(id, at)| (*at, *id))
    };
    Ok(due.add_missing(&page).await?)
}

async fn purge(
    store: &Store,
    before: chrono::DateTime<Utc>,
    shutdown: &CancellationToken,
) -> anyhow::Result<u64> {
    let mut total = 0;
    let mut cursor = None;
    loop {
        let (deleted, next) = store.purge_completed(before, cursor, PURGE_BATCH).await?;
        total += deleted;
        cursor = match next {
            Some(id) if !shutdown.is_cancelled() => Some(id),
            _ => return Ok(total),
        };
        if deleted > 0 {
            // Small batches with a breath between: retention never hogs the table.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
