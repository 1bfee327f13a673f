//! How long the oldest due push notifications have waited, per endpoint
//! and by whether they were attempted before: what an operator alerts on
//! when fresh callbacks are late (issue #48; never attempted is what the
//! fresh lane will carry, docs/design.md §17). Housekeeping reads the
//! store once a minute (`HousekeepingStore::due_backlog`, a bounded read)
//! and sets `hookd_oldest_due_seconds{endpoint, attempted}` for the `TOP`
//! endpoints of each kind and `hookd_due_backlog{attempted}`. Every
//! process reads the same rows, so each exports the same figure.
//!
//! The Prometheus exporter cannot drop one series, so an endpoint that
//! leaves the top is set to 0 once: its series stays (at 0) while the
//! process lives, one per endpoint that was ever among the top.

use std::collections::HashSet;
use std::time::Duration;

use uuid::Uuid;

use crate::store::seams::HousekeepingStore;

/// How often the backlog is read.
pub const INTERVAL: Duration = Duration::from_secs(60);

/// How many endpoints of each kind get a series.
pub const TOP: usize = 10;

/// The series this process last set above 0: (endpoint, attempted).
#[derive(Debug, Default)]
pub struct Exported(HashSet<(Uuid, bool)>);

fn oldest_due(endpoint: Uuid, attempted: bool) -> metrics::Gauge {
    metrics::gauge!(
        "hookd_oldest_due_seconds",
        "endpoint" => endpoint.to_string(),
        "attempted" => attempted.to_string(),
    )
}

/// Reads the backlog and sets the gauges; endpoints that left the top
/// since the last read go to 0. A failed read leaves them as they were.
pub async fn sample(store: &dyn HousekeepingStore, exported: &mut Exported) {
    let now = store.clock().now();
    let backlog = match store.due_backlog(now, TOP).await {
        Ok(backlog) => backlog,
        Err(error) => {
            tracing::debug!(%error, "cannot read how old the due backlog is");
            return;
        }
    };
    let mut current = HashSet::with_capacity(backlog.oldest.len());
    for due in &backlog.oldest {
        let waited = (now - due.due_since).num_milliseconds().max(0) as f64 / 1e3;
        oldest_due(due.endpoint_id, due.attempted).set(waited);
        current.insert((due.endpoint_id, due.attempted));
    }
    for &(endpoint, attempted) in exported.0.difference(&current) {
        oldest_due(endpoint, attempted).set(0.0);
    }
    exported.0 = current;
    metrics::gauge!("hookd_due_backlog", "attempted" => "false").set(backlog.fresh as f64);
    metrics::gauge!("hookd_due_backlog", "attempted" => "true").set(backlog.retrying as f64);
}
