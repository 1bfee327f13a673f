//! Refilling a due index from the store: every pending row, page by page in
//! (due time, id) order, adding what the index lacks. One piece of code for
//! every backend: the in-process index filled at start (`fill`) and the
//! Redis one healed after a loss (`restore`, which also minds the index's
//! marker and the lock that lets one process refill at a time). It sits
//! above both the store and the index, which know nothing of each other.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::due::{DueError, DueIndex, IndexState, Recovery};
use crate::store::seams::PendingRows;
use crate::store::StoreError;

/// Rows read per page.
const PAGE: i64 = 5000;
/// Rows gathered before they are handed to the index in one `add_missing`
/// (24 bytes each in memory): an index writes a large batch in the order
/// that suits it (Redis, in id order: one lookup per bucket, not per row).
const GATHER: usize = 200_000;

/// Why a refill stopped.
#[derive(Debug, thiserror::Error)]
pub enum RefillError {
    #[error(transparent)]
    Due(#[from] DueError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a refill did: how many ids it added, in how long.
#[derive(Debug, Clone, Copy)]
pub struct Refilled {
    pub added: usize,
    pub took: Duration,
}

/// Adds to `index` every pending row of `rows` that it holds neither due nor
/// leased. `None`: stopped by `shutdown` before the end.
pub async fn fill(
    index: &dyn DueIndex,
    rows: &dyn PendingRows,
    shutdown: &CancellationToken,
) -> Result<Option<Refilled>, RefillError> {
    fill_holding(index, rows, shutdown, None).await
}

/// If the index was lost (or is in another format), refills it from `rows`,
/// unless another process is doing so. `None`: nothing to do (or stopped by
/// `shutdown`).
pub async fn restore(
    index: &dyn Recovery,
    rows: &dyn PendingRows,
    shutdown: &CancellationToken,
) -> Result<Option<Refilled>, RefillError> {
    if index.state().await? == IndexState::Complete {
        return Ok(None);
    }
    if !index.lock_refill().await? {
        return Ok(None);
    }
    // Looked at again under the lock: another process may have refilled it.
    match index.state().await? {
        IndexState::Complete => {
            index.unlock_refill().await?;
            return Ok(None);
        }
        IndexState::Missing => tracing::warn!(
            "the due index marker is missing (Redis restarted, flushed or failed over): rebuilding"
        ),
        IndexState::DueLost => tracing::warn!(
            "part of the due index was lost while the marker stayed (the directory's sentinel or the ranges: evicted, deleted or not replicated): rebuilding"
        ),
        IndexState::OtherFormat => {
            tracing::warn!(
                "the due index was written by a build with another format: clearing and rebuilding it"
            );
            index.clear().await?;
        }
    }
    // What is left of the due set may be where no claim finds it.
    index.clear_due().await?;
    let Some(refilled) = fill_holding(index, rows, shutdown, Some(index)).await? else {
        index.unlock_refill().await?;
        return Ok(None);
    };
    index.mark_complete().await?;
    index.unlock_refill().await?;
    Ok(Some(refilled))
}

/// `fill`, renewing `lock`'s refill lock after every page but the last.
async fn fill_holding(
    index: &dyn DueIndex,
    rows: &dyn PendingRows,
    shutdown: &CancellationToken,
    lock: Option<&dyn Recovery>,
) -> Result<Option<Refilled>, RefillError> {
    let started = Instant::now();
    let mut cursor = None;
    let mut added = 0;
    let mut gathered = Vec::with_capacity(GATHER);
    loop {
        if shutdown.is_cancelled() {
            return Ok(None);
        }
        let page = rows.pending_page(cursor, PAGE).await?;
        let last = (page.len() as i64) < PAGE;
        cursor = page.last().map(|(id, at)| (*at, *id));
        gathered.extend(page);
        if last || gathered.len() >= GATHER {
            added += index.add_missing(&gathered).await?;
            gathered.clear();
        }
        if last {
            break;
        }
        if let Some(lock) = lock {
            lock.lock_refill().await?;
        }
    }
    Ok(Some(Refilled {
        added,
        took: started.elapsed(),
    }))
}
