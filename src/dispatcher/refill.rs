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

/// What a refill did: how many ids it added, in how long, and which parts
/// of the index it refilled (`Recovery::parts`; `[0]` for an index in one).
#[derive(Debug, Clone)]
pub struct Refilled {
    pub added: usize,
    pub took: Duration,
    pub parts: Vec<usize>,
}

/// Adds to `index` every pending row of `rows` that it holds neither due nor
/// leased. `None`: stopped by `shutdown` before the end.
pub async fn fill(
    index: &dyn DueIndex,
    rows: &dyn PendingRows,
    shutdown: &CancellationToken,
) -> Result<Option<Refilled>, RefillError> {
    fill_holding(index, rows, shutdown, &[], &|_| true).await
}

/// If the index was lost (or is in another format), refills it from `rows`,
/// unless another process is doing so. `None`: nothing to do (or stopped by
/// `shutdown`). An index in parts (a sharded one) refills only the parts
/// it finds lost, all of them in one read of the store: each page keeps
/// the rows of those parts, so one lost shard of N costs a read of every
/// pending row for 1/N of them written (a filter in SQL would need the
/// shard hash in SQL too, and the rule would live twice).
pub async fn restore(
    index: &dyn Recovery,
    rows: &dyn PendingRows,
    shutdown: &CancellationToken,
) -> Result<Option<Refilled>, RefillError> {
    let mut parts = index.parts();
    let whole = parts.is_empty();
    if whole {
        parts.push(index);
    }
    // Looked at together, so that one part that does not answer (a master
    // failing over) holds up none of the others.
    let states = futures::future::join_all(parts.iter().map(|part| part.state())).await;
    let mut lost = Vec::new();
    let mut failure = None;
    for (n, state) in states.into_iter().enumerate() {
        match state {
            Ok(IndexState::Complete) => {}
            Ok(_) => lost.push(n),
            Err(error) => {
                failure.get_or_insert(error);
            }
        }
    }
    let mut taken = Vec::new();
    for n in lost {
        // A part that fails here is left for the next tick; the others go on.
        match take(parts[n], (!whole).then_some(n)).await {
            Ok(true) => taken.push(n),
            Ok(false) => {}
            Err(error) => {
                failure.get_or_insert(error);
            }
        }
    }
    if taken.is_empty() {
        return match failure {
            Some(error) => Err(error.into()),
            None => Ok(None),
        };
    }
    let locks: Vec<&dyn Recovery> = taken.iter().map(|n| parts[*n]).collect();
    let keep = |id: &uuid::Uuid| whole || taken.contains(&index.part_of(id));
    let filled = fill_holding(index, rows, shutdown, &locks, &keep).await?;
    for part in &locks {
        if filled.is_some() {
            part.mark_complete().await?;
        }
        part.unlock_refill().await?;
    }
    Ok(filled.map(|filled| Refilled {
        parts: taken,
        ..filled
    }))
}

/// Takes the refill of a lost `part` (of `shard`, when the index has
/// several): its lock, a second look under the lock (another process may
/// have refilled it), and a due set emptied. `false`: nothing to refill
/// here.
async fn take(part: &dyn Recovery, shard: Option<usize>) -> Result<bool, DueError> {
    if !part.lock_refill().await? {
        return Ok(false);
    }
    match part.state().await? {
        IndexState::Complete => {
            part.unlock_refill().await?;
            return Ok(false);
        }
        IndexState::Missing => tracing::warn!(
            ?shard,
            "the due index marker is missing (Redis restarted, flushed or failed over): rebuilding"
        ),
        IndexState::DueLost => tracing::warn!(
            ?shard,
            "part of the due index was lost while the marker stayed (the directory's sentinel or the ranges: evicted, deleted or not replicated): rebuilding"
        ),
        IndexState::OtherFormat => {
            tracing::warn!(
                ?shard,
                "the due index was written by a build with another format: clearing and rebuilding it"
            );
            part.clear().await?;
        }
    }
    // What is left of the due set may be where no claim finds it.
    part.clear_due().await?;
    Ok(true)
}

/// `fill` of the rows that `keep`, renewing the refill locks of `locks`
/// after every page but the last.
async fn fill_holding(
    index: &dyn DueIndex,
    rows: &dyn PendingRows,
    shutdown: &CancellationToken,
    locks: &[&dyn Recovery],
    keep: &(dyn Fn(&uuid::Uuid) -> bool + Sync),
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
        gathered.extend(page.into_iter().filter(|(id, _)| keep(id)));
        if last || gathered.len() >= GATHER {
            added += index.add_missing(&gathered).await?;
            gathered.clear();
        }
        if last {
            break;
        }
        for lock in locks {
            lock.lock_refill().await?;
        }
    }
    Ok(Some(Refilled {
        added,
        took: started.elapsed(),
        parts: vec![0],
    }))
}
