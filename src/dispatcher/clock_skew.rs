//! Whether this process's clock agrees with the database's. Every rule
//! reads the process's clock (`crate::clock`), so the hosts of
//! server-mode processes must agree on the time to well within the
//! shortest lease. PostgreSQL's clock is the one witness they share:
//! housekeeping reads it once a minute, exports the difference as
//! `hookd_clock_skew_seconds`, and warns once when it passes
//! `WARN_AT` (and says so again once it is back within).

use std::time::Duration;

use crate::store::seams::HousekeepingStore;

/// How often the database's clock is read.
pub const INTERVAL: Duration = Duration::from_secs(60);

/// A difference past this is warned of: a tenth of the shortest lease a
/// rule decides on (pull leases start at 10 s).
pub const WARN_AT: chrono::Duration = chrono::Duration::seconds(1);

/// Reads the skew, sets the gauge, and warns on a change of side of
/// `WARN_AT`; returns whether the skew is past it now (`warned`: it was
/// at the last read).
pub async fn check(store: &dyn HousekeepingStore, warned: bool) -> bool {
    let skew = match store.clock_skew().await {
        Ok(Some(skew)) => skew,
        Ok(None) => return false,
        Err(error) => {
            tracing::debug!(%error, "cannot read the database's clock");
            return warned;
        }
    };
    let seconds = skew.num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6;
    metrics::gauge!("hookd_clock_skew_seconds").set(seconds);
    let past = skew.abs() > WARN_AT;
    if past && !warned {
        tracing::warn!(
            skew_seconds = seconds,
            "this host's clock and PostgreSQL's differ by more than a second: \
             leases are decided by each process's clock, so keep the hosts in agreement (NTP)"
        );
    } else if !past && warned {
        tracing::info!(
            skew_seconds = seconds,
            "this host's clock agrees with PostgreSQL's again"
        );
    }
    past
}
