//! Housekeeping's retention, in passes every ten minutes: notifications
//! final for longer than `retention.days` (server mode's daily partitions
//! dropped first, then row by row), their events once no delivery is left,
//! then the ordering keys left without history, and the overview's
//! per-minute counts after two days. Small batches with a breath between:
//! retention never hogs a table.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::store::housekeeping::KeyCursor;
use crate::store::seams::HousekeepingStore;

const PURGE_BATCH: i64 = 1000;
/// A pass walks at most this many pages of ordering keys (100,000 keys);
/// the next pass goes on from where it stopped, so a pass stays short
/// however many keys there are.
const KEY_PAGES: usize = 100;
const BREATH: Duration = Duration::from_millis(50);

pub(super) async fn purge(
    store: &dyn HousekeepingStore,
    before: DateTime<Utc>,
    shutdown: &CancellationToken,
) -> anyhow::Result<u64> {
    let mut total = 0;
    let mut cursor = None;
    loop {
        let (deleted, next) = store.purge_completed(before, cursor, PURGE_BATCH).await?;
        total += deleted;
        cursor = match next {
            Some(id) if !shutdown.is_cancelled() => Some(id),
            _ => break,
        };
        if deleted > 0 {
            tokio::time::sleep(BREATH).await;
        }
    }
    // Events go once none of their deliveries is left.
    let mut cursor = None;
    loop {
        let (deleted, next) = store.purge_events(before, cursor, PURGE_BATCH).await?;
        cursor = match next {
            Some(id) if !shutdown.is_cancelled() => Some(id),
            _ => return Ok(total),
        };
        if deleted > 0 {
            tokio::time::sleep(BREATH).await;
        }
    }
}

/// Deletes the per-minute counts of minutes before `before`, in small
/// batches with a breath between.
pub(super) async fn purge_minutes(
    store: &dyn HousekeepingStore,
    before: DateTime<Utc>,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    while !shutdown.is_cancelled() {
        if store.purge_minutes(before, PURGE_BATCH).await? == 0 {
            break;
        }
        tokio::time::sleep(BREATH).await;
    }
    Ok(())
}

/// One pass of partition upkeep (`HousekeepingStore::maintain_partitions`),
/// reported: what it dropped, and a warning while a DEFAULT partition
/// holds rows (an id outside every day's partition: nothing is refused,
/// but those rows are only purged row by row).
pub(super) async fn maintain_partitions(store: &dyn HousekeepingStore, retention_days: u32) {
    let now = store.clock().now();
    let before =
        (retention_days > 0).then(|| now - chrono::Duration::days(i64::from(retention_days)));
    match store
        .maintain_partitions(crate::domain::partition::day_of(now), before)
        .await
    {
        Ok(upkeep) if upkeep.skipped => {}
        Ok(upkeep) => {
            metrics::gauge!("hookd_default_partition_rows")
                .set(f64::from(u8::from(upkeep.default_rows)));
            if upkeep.default_rows {
                tracing::warn!("a DEFAULT partition holds rows (docs/partitioning.md)");
            }
            if !upkeep.dropped.is_empty() {
                metrics::counter!("hookd_partitions_dropped_total")
                    .increment(upkeep.dropped.len() as u64);
                tracing::info!(dropped = ?upkeep.dropped, "retention dropped partitions");
            }
        }
        Err(error) => tracing::warn!(%error, "partition upkeep failed; retrying later"),
    }
}

/// Deletes the ordering keys whose line emptied before `before` (retention's
/// cutoff) that no stored one holds (a holder retention removed is
/// cleared from its key: `HousekeepingStore::purge_order_keys`), after the
/// notifications' purge: up to `KEY_PAGES` pages from `cursor`, which it
/// leaves where the next pass goes on (`None`: from the first key; a page
/// that fails is read again). How many it deleted.
pub(super) async fn purge_order_keys(
    store: &dyn HousekeepingStore,
    before: DateTime<Utc>,
    cursor: &mut Option<KeyCursor>,
    shutdown: &CancellationToken,
) -> anyhow::Result<u64> {
    let mut total = 0;
    for _ in 0..KEY_PAGES {
        let (deleted, next) = store
            .purge_order_keys(cursor.clone(), PURGE_BATCH, before)
            .await?;
        total += deleted;
        *cursor = next;
        if cursor.is_none() || shutdown.is_cancelled() {
            break;
        }
        if deleted > 0 {
            tokio::time::sleep(BREATH).await;
        }
    }
    Ok(total)
}
