//! How long the oldest due push notifications have waited, per endpoint
//! and by whether they were attempted before: what an operator alerts on
//! when fresh callbacks are late (issue #48; never attempted is what the
//! fresh lane will carry, docs/design.md §17). Housekeeping reads the
//! store once a minute (`HousekeepingStore::due_backlog`, a bounded read)
//! and hands the `TOP` endpoints of each kind to
//! `hookd_oldest_due_seconds{endpoint, attempted}` (rendered by
//! `telemetry::oldest_due`, so an endpoint that leaves the top leaves the
//! scrape) and sets `hookd_due_backlog{attempted}`. Every process reads
//! the same rows, so each exports the same figure.

use std::time::Duration;

use crate::store::seams::HousekeepingStore;
use crate::telemetry::oldest_due::OldestDue;

/// How often the backlog is read.
pub const INTERVAL: Duration = Duration::from_secs(60);

/// How many endpoints of each kind get a series.
pub const TOP: usize = 10;

/// Reads the backlog and sets the gauges. A failed read leaves them as
/// they were.
pub async fn sample(store: &dyn HousekeepingStore) {
    let now = store.clock().now();
    let backlog = match store.due_backlog(now, TOP).await {
        Ok(backlog) => backlog,
        Err(error) => {
            tracing::debug!(%error, "cannot read how old the due backlog is");
            return;
        }
    };
    let oldest = backlog
        .oldest
        .iter()
        .map(|due| OldestDue {
            endpoint: due.endpoint_id,
            attempted: due.attempted,
            seconds: (now - due.due_since).num_milliseconds().max(0) as f64 / 1e3,
        })
        .collect();
    crate::telemetry::oldest_due::set(oldest);
    metrics::gauge!("hookd_due_backlog", "attempted" => "false").set(backlog.fresh as f64);
    metrics::gauge!("hookd_due_backlog", "attempted" => "true").set(backlog.retrying as f64);
}
