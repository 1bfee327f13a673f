//! Adds to the due index the notifications that could not be indexed when
//! they were created (Redis was down): rows marked `needs_index`.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::due::DueIndex;
use crate::store::Store;

const INTERVAL: Duration = Duration::from_secs(1);
const PAGE: i64 = 1000;

pub async fn run(store: Store, due: DueIndex, shutdown: CancellationToken) {
    loop {
        match index_marked(&store, &due).await {
            Ok(0) => {}
            Ok(count) => {
                tracing::info!(
                    count,
                    "indexed notifications created while Redis was unreachable"
                );
                continue;
            }
            Err(error) => tracing::debug!(%error, "indexer will try again"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(INTERVAL) => {}
        }
    }
}

/// Indexes one page of marked rows; returns how many.
async fn index_marked(store: &Store, due: &DueIndex) -> anyhow::Result<usize> {
    let rows = store.needing_index(PAGE).await?;
    if rows.is_empty() {
        return Ok(0);
    }
    due.add(&rows).await?;
    let ids: Vec<_> = rows.iter().map(|(id, _)| *id).collect();
    store.clear_needs_index(&ids).await?;
    Ok(rows.len())
}
