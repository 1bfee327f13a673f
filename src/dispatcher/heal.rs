//! Re-adding the recent rows after a failover (docs/design.md §13), part by
//! part of the due index: a promoted replica may lack the last writes of
//! the master it replaces. The housekeeper keeps the parts owed
//! (`domain::heal`) and calls this at a tick when some are owed and past
//! their wait.

use crate::due::Recovery;
use crate::store::seams::HousekeepingStore;

const PAGE: i64 = 5000;

/// How far back a master change re-adds rows: replication lag and the
/// failover itself take seconds; minutes leave a wide margin.
const RECENT: chrono::Duration = chrono::Duration::minutes(10);

/// What `heal_recent` did: the parts healed (all their recent rows are
/// in), the rows added, and the error of a part that failed, if one did.
pub(super) struct Healed {
    pub(super) parts: Vec<usize>,
    pub(super) added: usize,
    pub(super) error: Option<crate::due::DueError>,
}

/// Re-adds the pending rows created in the last `RECENT`, those in neither
/// set, to the `owed` parts of the index. A part that fails is left out of
/// the following pages and of `parts`: the others heal now, it at the next
/// try.
pub(super) async fn heal_recent(
    store: &dyn HousekeepingStore,
    due: &dyn Recovery,
    owed: &[usize],
) -> anyhow::Result<Healed> {
    let parts = due.parts();
    let part = |n: usize| -> &dyn Recovery { parts.get(n).copied().unwrap_or(due) };
    let since = (store.clock().now() - RECENT).timestamp_millis();
    let mut after = crate::domain::id::first_of_ms(since);
    let mut healing: Vec<usize> = owed.to_vec();
    let mut healed = Healed {
        parts: Vec::new(),
        added: 0,
        error: None,
    };
    loop {
        let page = store.pending_created_after(after, PAGE).await?;
        let mut by_part = vec![Vec::new(); parts.len().max(1)];
        for entry in &page {
            if let Some(rows) = by_part.get_mut(due.part_of(&entry.0)) {
                rows.push(*entry);
            }
        }
        let results = futures::future::join_all(healing.iter().map(|&n| {
            let rows = by_part.get(n).cloned().unwrap_or_default();
            async move { (n, part(n).add_missing(&rows).await) }
        }))
        .await;
        healing.clear();
        for (n, result) in results {
            match result {
                Ok(added) => {
                    healed.added += added;
                    healing.push(n);
                }
                Err(error) => {
                    healed.error.get_or_insert(error);
                }
            }
        }
        match page.last() {
            Some((id, _)) if page.len() as i64 == PAGE && !healing.is_empty() => after = *id,
            _ => {
                healed.parts = healing;
                return Ok(healed);
            }
        }
    }
}
