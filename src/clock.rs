//! The one clock every rule reads: a lease's end and whether it still
//! runs, when a notification is due, the stray and orphan windows, an
//! operation's lease, the times stamped on rows. Both stores hold one
//! (`PgStore::with_clock`, `SqliteStore::with_clock`) and pass its time
//! into their statements: PostgreSQL's own `now()` decides nothing, so a
//! rule reads the same time in both modes, and a test can move it.
//!
//! `Clock::system()` is the host's clock. `Clock::movable()` starts there
//! and moves only forward when told (`advance`): an offset over the
//! host's clock, so time still passes (a process under test keeps
//! running) and a store test can step past a lease's end without waiting
//! for it. Clones share the offset: move one, and every holder sees it.
//!
//! Times come at the microsecond precision both stores keep, so a time
//! decided on compares equal to the one stored from it.
//!
//! # Hosts must agree on the time
//!
//! In server mode many hookd processes share one PostgreSQL, and each
//! now decides with its own host's clock instead of the database's: a
//! lease one process grants for 30 s, another reads as run out when its
//! clock is 30 s ahead. The hosts running server-mode processes must keep
//! their clocks in agreement (NTP) to well within the shortest lease
//! (`pull.lease` bounds, operation leases, the dispatcher's claim lease).
//! If they drift apart by a lease's length, a process ahead takes back a
//! lease still running elsewhere (a consumer's ack then comes too late
//! and the notification is delivered twice), and one behind sees leases
//! that ran out as running for that much longer (a stalled notification
//! waits longer before it is taken back). Rows are stamped by the clock
//! of the process that wrote them, so reads of what changed since a time
//! (consumer tokens: `service::pull::tokens`, with its overlap) can miss
//! a change stamped by a host behind by more than that overlap until the
//! next full read. Nothing is lost otherwise: every write is a
//! compare-and-set on what was read, and a delivery is at least once.
//! Before, PostgreSQL's one clock decided these in server mode; the price
//! of one rule for both modes (and of tests that move time) is this
//! requirement on the hosts. Embedded mode has one process, so one clock.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// The time rules read. Cheap to clone; clones share any offset.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// Microseconds added to the host's clock; `None`: the host's clock,
    /// never moved.
    offset: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The host's clock: what every process runs on.
    pub fn system() -> Self {
        Self { offset: None }
    }

    /// A clock tests can move: the host's clock until `advance`d.
    pub fn movable() -> Self {
        Self {
            offset: Some(Arc::new(AtomicI64::new(0))),
        }
    }

    /// The time now, to the microsecond.
    pub fn now(&self) -> DateTime<Utc> {
        let offset = self
            .offset
            .as_ref()
            .map_or(0, |offset| offset.load(Ordering::SeqCst));
        let micros = Utc::now().timestamp_micros().saturating_add(offset);
        DateTime::from_timestamp_micros(micros).unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    /// Moves this clock and every clone of it forward by `by`.
    ///
    /// # Panics
    /// On the system clock, which only the host moves.
    pub fn advance(&self, by: Duration) {
        let offset = self.offset.as_ref().expect("only a movable clock is moved");
        let micros = i64::try_from(by.as_micros()).unwrap_or(i64::MAX);
        offset.fetch_add(micros, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moved_clock_is_ahead_by_what_it_was_moved_in_every_clone() {
        let clock = Clock::movable();
        let clone = clock.clone();
        let before = Utc::now();
        clock.advance(Duration::from_secs(3600));
        let moved = clone.now();
        assert!(moved >= before + chrono::Duration::seconds(3600));
        assert!(moved < Utc::now() + chrono::Duration::seconds(3601));
        assert_eq!(moved.timestamp_subsec_nanos() % 1000, 0, "microseconds");
    }

    #[test]
    fn the_system_clock_is_the_hosts() {
        let before = Utc::now() - chrono::Duration::microseconds(1);
        let now = Clock::system().now();
        assert!(before <= now && now <= Utc::now());
    }
}
