//! One connection's clock: how many of its requests are under way and when
//! it last had one, so that a connection doing nothing is closed whatever
//! protocol state it is stuck in.
//!
//! hyper times the reading of HTTP/1 headers, but not the bytes before the
//! protocol is known (the auto builder's sniffing waits for 24 bytes with
//! no timer), not an HTTP/2 handshake, and not an HTTP/2 connection that
//! answers pings and opens no stream: each of those held a connection slot
//! for ever, before any authentication (issue #33). Counting requests at
//! the service, where every protocol ends up, closes them all the same way.
//! So the idle clock runs from the moment a connection is accepted, and
//! again from the moment each response is handed over.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// Requests under way on one connection, and when the last one ended (or
/// the connection was accepted).
#[derive(Debug)]
pub(super) struct Activity {
    under_way: AtomicUsize,
    since: Mutex<Instant>,
}

impl Activity {
    /// A connection accepted now, with nothing under way.
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            under_way: AtomicUsize::new(0),
            since: Mutex::new(Instant::now()),
        })
    }

    /// Marks a request under way until the returned guard drops, which is
    /// when its response is handed to hyper. Not when its body is sent: a
    /// peer that never reads the body (an HTTP/2 window kept at zero, a
    /// full socket) would hold the connection for ever. A body still being
    /// sent when the connection turns idle gets another header timeout
    /// while the connection shuts down (`serve`).
    pub(super) fn begin(self: &Arc<Self>) -> Busy {
        self.under_way.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }

    /// When the connection will have been idle for `idle`, or `None` while
    /// a request is under way.
    fn idle_deadline(&self, idle: Duration) -> Option<Instant> {
        if self.under_way.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(*self.since.lock().unwrap_or_else(|e| e.into_inner()) + idle)
    }

    /// Resolves once the connection has had no request under way for
    /// `idle`: from its acceptance, or from the end of its last response.
    pub(super) async fn idle_for(&self, idle: Duration) {
        loop {
            match self.idle_deadline(idle) {
                Some(deadline) if deadline <= Instant::now() => return,
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                // Busy: look again after a whole idle period at the latest;
                // a request ending restarts the clock from its end anyway.
                None => tokio::time::sleep(idle).await,
            }
        }
    }
}

/// One request under way; its drop restarts the connection's idle clock.
#[derive(Debug)]
pub(super) struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        // The clock is set before the count drops, so a watcher that sees
        // zero also sees this request's end.
        *self.0.since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.0.under_way.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_connection_with_nothing_under_way_is_idle_from_its_acceptance() {
        let activity = Activity::new();
        let accepted = Instant::now();
        activity.idle_for(Duration::from_secs(10)).await;
        assert_eq!(accepted.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_under_way_holds_the_connection_and_its_end_restarts_the_clock() {
        let activity = Activity::new();
        let busy = activity.begin();
        let watcher = {
            let activity = activity.clone();
            tokio::spawn(async move { activity.idle_for(Duration::from_secs(10)).await })
        };
        tokio::time::sleep(Duration::from_secs(25)).await;
        assert!(!watcher.is_finished(), "closed with a request under way");
        let ended = Instant::now();
        drop(busy);
        watcher.await.unwrap();
        assert!(ended.elapsed() >= Duration::from_secs(10));
        assert!(ended.elapsed() <= Duration::from_secs(20));
    }
}
