//! A circuit breaker for the due index on the request path. With Redis
//! down, every call waits `redis.timeout_ms` before it fails (a create took
//! 504 ms at p50 instead of 2.7 ms); after one failure the write path stops
//! calling the index for `BACKOFF`, marks what it would have indexed
//! (`needs_index`) and answers at once. When the back-off is over, one
//! request starts a probe in the background (the index's `ping`) and still
//! does not wait: the breaker closes when the probe answers, and only then
//! do requests call the index again. No request waits for a probe.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long the index is left alone after a failure. The housekeeper indexes
/// marked rows every second, so a closed breaker would gain nothing sooner.
const BACKOFF: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(super) struct Breaker(Mutex<State>);

#[derive(Default)]
struct State {
    /// Set while open: no request calls the index before then.
    open_until: Option<Instant>,
    /// A probe is under way; other requests keep away meanwhile.
    probing: bool,
}

/// What a request may do with the index now.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Gate {
    /// Closed: call the index.
    Call,
    /// Open: do without it.
    Skip,
    /// Open and the back-off is over: do without it, and start one probe.
    Probe,
}

impl Breaker {
    pub(super) fn gate(&self) -> Gate {
        let mut state = self.0.lock().expect("breaker lock");
        match state.open_until {
            None => Gate::Call,
            Some(until) if state.probing || Instant::now() < until => Gate::Skip,
            Some(_) => {
                state.probing = true;
                Gate::Probe
            }
        }
    }

    /// The index answered: requests call it again.
    pub(super) fn succeeded(&self) {
        let mut state = self.0.lock().expect("breaker lock");
        if state.open_until.take().is_some() {
            tracing::info!("the due index answers again; creates index at once");
            metrics::gauge!("hookd_index_breaker_open").set(0.0);
        }
        state.probing = false;
    }

    /// The index failed: leave it alone for `BACKOFF`.
    pub(super) fn failed(&self) {
        let mut state = self.0.lock().expect("breaker lock");
        if state.open_until.is_none() {
            tracing::warn!(
                backoff_ms = BACKOFF.as_millis() as u64,
                "the due index failed; creates stop calling it and leave indexing to the housekeeper"
            );
            metrics::counter!("hookd_index_breaker_opened_total").increment(1);
            metrics::gauge!("hookd_index_breaker_open").set(1.0);
        }
        state.open_until = Some(Instant::now() + BACKOFF);
        state.probing = false;
    }

    pub(super) fn is_open(&self) -> bool {
        self.0.lock().expect("breaker lock").open_until.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::{Breaker, Gate, State};
    use std::time::Instant;

    #[test]
    fn a_failure_opens_the_breaker_and_one_probe_at_a_time_may_close_it() {
        let breaker = Breaker::default();
        assert_eq!(breaker.gate(), Gate::Call);
        breaker.failed();
        assert!(breaker.is_open());
        assert_eq!(breaker.gate(), Gate::Skip);
        // The back-off is over.
        *breaker.0.lock().unwrap() = State {
            open_until: Some(Instant::now()),
            probing: false,
        };
        assert_eq!(breaker.gate(), Gate::Probe);
        assert_eq!(breaker.gate(), Gate::Skip, "one probe at a time");
        breaker.succeeded();
        assert!(!breaker.is_open());
        assert_eq!(breaker.gate(), Gate::Call);
    }

    #[test]
    fn a_failed_probe_opens_the_breaker_for_another_back_off() {
        let breaker = Breaker::default();
        *breaker.0.lock().unwrap() = State {
            open_until: Some(Instant::now()),
            probing: false,
        };
        assert_eq!(breaker.gate(), Gate::Probe);
        breaker.failed();
        assert_eq!(breaker.gate(), Gate::Skip);
    }
}
