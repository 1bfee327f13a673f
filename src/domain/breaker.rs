//! The circuit breaker of an endpoint (docs/design.md §16): which attempt
//! results count as the receiver being down, when a run of them opens the
//! circuit, how long it stays open (doubled after each failed probe, with
//! ±20 % jitter, up to `max_open_ms`), when one probe may go, and what
//! becomes of a notification that falls due while the circuit is not
//! closed (held, or failed `circuit_open` once held for `max_hold_ms`).
//! Pure: the stores compare-and-set what these functions decide.

use chrono::{DateTime, Duration, Utc};

/// `last_error` code of a notification failed because its endpoint's
/// circuit stayed open longer than `max_hold_ms`.
pub const CIRCUIT_OPEN: &str = "circuit_open";
/// Bounds of the settings, in the API and the config alike.
pub const MAX_FAILURES: u32 = 1000;
/// The longest open period: a day.
pub const MAX_OPEN_MS: u64 = 86_400_000;
/// Jitter of an open period: ±20 %.
pub const OPEN_JITTER: f64 = 0.2;
/// How many times the held backlog is released after a close: at once;
/// again `STALE_VIEW` later, for holds a process decided on a view read
/// before the close (it reads the view every second); and a lease later,
/// for a hold decided on a claim that took its whole lease.
pub const RELEASE_PASSES: i32 = 3;
/// How old a process's view of the circuits may be when it holds a claim.
pub const STALE_VIEW: Duration = Duration::seconds(2);

/// An endpoint's breaker settings, resolved (defaults applied).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub failures: u32,
    pub open_ms: u64,
    pub max_open_ms: u64,
}

impl Policy {
    /// The name of the first setting out of bounds, with what it must be.
    pub fn invalid(&self) -> Option<(&'static str, String)> {
        if !(1..=MAX_FAILURES).contains(&self.failures) {
            return Some(("failures", format!("an integer from 1 to {MAX_FAILURES}")));
        }
        if !(1..=MAX_OPEN_MS).contains(&self.open_ms) {
            return Some(("open_ms", format!("an integer from 1 to {MAX_OPEN_MS}")));
        }
        if self.max_open_ms < self.open_ms || self.max_open_ms > MAX_OPEN_MS {
            return Some((
                "max_open_ms",
                format!("an integer from open_ms to {MAX_OPEN_MS}"),
            ));
        }
        None
    }
}

/// What an endpoint stores to override the defaults (`None` each: the
/// default), or that its breaker is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Override {
    pub off: bool,
    pub failures: Option<u32>,
    pub open_ms: Option<u64>,
    pub max_open_ms: Option<u64>,
}

impl Override {
    /// As stored: columns out of the domain's types (bounded by the
    /// schema's checks; anything else reads as the default).
    pub fn stored(
        off: bool,
        failures: Option<i32>,
        open_ms: Option<i64>,
        max_open_ms: Option<i64>,
    ) -> Self {
        Self {
            off,
            failures: failures.and_then(|v| u32::try_from(v).ok()),
            open_ms: open_ms.and_then(|v| u64::try_from(v).ok()),
            max_open_ms: max_open_ms.and_then(|v| u64::try_from(v).ok()),
        }
    }

    /// The columns: `(off, failures, open_ms, max_open_ms)`.
    pub fn columns(&self) -> (bool, Option<i32>, Option<i64>, Option<i64>) {
        (
            self.off,
            self.failures.map(|v| v as i32),
            self.open_ms.map(|v| v as i64),
            self.max_open_ms.map(|v| v as i64),
        )
    }

    /// The policy in force, `None` when the breaker is off.
    pub fn resolve(&self, defaults: Policy) -> Option<Policy> {
        if self.off {
            return None;
        }
        let open_ms = self.open_ms.unwrap_or(defaults.open_ms);
        Some(Policy {
            failures: self.failures.unwrap_or(defaults.failures),
            open_ms,
            // A default smaller than an endpoint's own open period would
            // cap the period below itself.
            max_open_ms: self
                .max_open_ms
                .unwrap_or(defaults.max_open_ms.max(open_ms)),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum State {
    #[default]
    Closed,
    Open,
    Probing,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::Probing => "probing",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "closed" => Some(State::Closed),
            "open" => Some(State::Open),
            "probing" => Some(State::Probing),
            _ => None,
        }
    }
}

/// An endpoint's circuit as stored. The default (closed, nothing counted,
/// no release owed) is the circuit of an endpoint without a stored row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Circuit {
    /// Consecutive counting failures while closed.
    pub failures: i32,
    pub state: State,
    /// When it opened, kept through failed probes.
    pub opened_at: Option<DateTime<Utc>>,
    pub next_probe_at: Option<DateTime<Utc>>,
    /// The open period in force, doubled after each failed probe.
    pub open_ms: i64,
    /// While probing: until when the prober's claim holds; after it,
    /// another process may probe.
    pub probe_until: Option<DateTime<Utc>>,
    /// Releases of the held backlog still owed after a close.
    pub release_passes: i32,
    pub release_at: Option<DateTime<Utc>>,
}

/// How a store writes a circuit over the one it read (`write`): no row
/// stands for a clean circuit, and each write is a compare-and-set on
/// what was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// No row was read (a clean circuit): the new one is inserted unless
    /// another process inserted one first.
    Insert,
    /// The new circuit is clean: the row read is deleted if it is still
    /// as read.
    Delete,
    /// The row read is overwritten if it is still as read.
    Update,
}

/// How a change from `seen` (as read) to `new` is written, in both
/// backends.
pub fn write(seen: &Circuit, new: &Circuit) -> Write {
    if seen.is_clean() {
        Write::Insert
    } else if new.is_clean() {
        Write::Delete
    } else {
        Write::Update
    }
}

/// What a change of the circuit is, for events and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Opened,
    Closed,
    Counted,
}

impl Circuit {
    /// Nothing to remember: a store keeps no row for it.
    pub fn is_clean(&self) -> bool {
        *self == Circuit::default()
    }

    /// Whether deliveries are held.
    pub fn holds(&self) -> bool {
        self.state != State::Closed
    }

    /// After a batch of attempts to the endpoint, each `true` if it counts
    /// as a failure (`counts`), in the order they ended. `factor`: a draw in
    /// [1 − `OPEN_JITTER`, 1 + `OPEN_JITTER`]. `None`: nothing changes (and
    /// the store is not written).
    pub fn after_attempts(
        &self,
        counted: &[bool],
        policy: Policy,
        now: DateTime<Utc>,
        factor: f64,
    ) -> Option<(Circuit, Change)> {
        if counted.is_empty() {
            return None;
        }
        let answered = counted.iter().any(|c| !c);
        match self.state {
            // Any answer from the receiver while open or probing is the
            // evidence a probe looks for: it is up.
            State::Open | State::Probing if answered => Some((self.closed(now), Change::Closed)),
            State::Open => None,
            State::Probing => {
                let doubled = (self.open_ms.max(1) as u64)
                    .saturating_mul(2)
                    .min(policy.max_open_ms.max(policy.open_ms));
                Some((self.opened(now, doubled, factor), Change::Opened))
            }
            State::Closed => {
                let mut failures = self.failures;
                for &counts in counted {
                    failures = if counts { failures + 1 } else { 0 };
                    if failures >= policy.failures as i32 {
                        return Some((self.opened(now, policy.open_ms, factor), Change::Opened));
                    }
                }
                (failures != self.failures)
                    .then_some((Circuit { failures, ..*self }, Change::Counted))
            }
        }
    }

    /// The endpoint's breaker was turned off (`"breaker": null`) while its
    /// circuit held: it closes, and what it held is released.
    pub fn turned_off(&self, now: DateTime<Utc>) -> Option<(Circuit, Change)> {
        self.holds().then(|| (self.closed(now), Change::Closed))
    }

    fn opened(&self, now: DateTime<Utc>, period_ms: u64, factor: f64) -> Circuit {
        Circuit {
            failures: 0,
            state: State::Open,
            opened_at: self.opened_at.filter(|_| self.holds()).or(Some(now)),
            next_probe_at: Some(now + jittered(period_ms, factor)),
            open_ms: period_ms as i64,
            probe_until: None,
            release_passes: 0,
            release_at: None,
        }
    }

    fn closed(&self, now: DateTime<Utc>) -> Circuit {
        Circuit {
            release_passes: RELEASE_PASSES,
            release_at: Some(now),
            ..Circuit::default()
        }
    }

    /// Whether a probe may be claimed at `now`: open and its period over,
    /// or probing by a prober whose claim lapsed.
    pub fn probe_due(&self, now: DateTime<Utc>) -> bool {
        match self.state {
            State::Open => self.next_probe_at.is_some_and(|at| at <= now),
            State::Probing => self.probe_until.is_none_or(|until| until <= now),
            State::Closed => false,
        }
    }

    /// The circuit once a process claims its probe, until `until`.
    pub fn probing(&self, until: DateTime<Utc>) -> Circuit {
        Circuit {
            state: State::Probing,
            probe_until: Some(until),
            ..*self
        }
    }

    /// A probe found nothing to send: open again for the same period, so
    /// the next notification is held and probes.
    pub fn nothing_to_probe(&self, now: DateTime<Utc>, factor: f64) -> Circuit {
        self.opened(now, self.open_ms.max(1) as u64, factor)
    }

    /// Whether a release of the held backlog is owed at `now`.
    pub fn release_due(&self, now: DateTime<Utc>) -> bool {
        self.state == State::Closed
            && self.release_passes > 0
            && self.release_at.is_some_and(|at| at <= now)
    }

    /// After one release pass; the next, if any, `STALE_VIEW` after the
    /// first, the last `lease` after that.
    pub fn released(&self, now: DateTime<Utc>, lease: Duration) -> Circuit {
        let passes = (self.release_passes - 1).max(0);
        let wait = if passes == RELEASE_PASSES - 1 {
            STALE_VIEW.min(lease)
        } else {
            lease
        };
        Circuit {
            release_passes: passes,
            release_at: (passes > 0).then_some(now + wait),
            ..*self
        }
    }
}

/// An open period scaled by `factor`, kept within ±`OPEN_JITTER`.
fn jittered(period_ms: u64, factor: f64) -> Duration {
    let factor = if factor.is_nan() {
        1.0
    } else {
        factor.clamp(1.0 - OPEN_JITTER, 1.0 + OPEN_JITTER)
    };
    Duration::milliseconds((period_ms as f64 * factor).round() as i64)
}

/// A factor drawn at random in [1 − `OPEN_JITTER`, 1 + `OPEN_JITTER`].
pub fn draw_factor() -> f64 {
    1.0 - OPEN_JITTER + 2.0 * OPEN_JITTER * rand::random::<f64>()
}

/// Whether an attempt's result says the receiver is down: a timeout, a
/// connection, DNS or TLS error, a connection that broke, a 5xx or a 429.
/// Any other answer (a 4xx it chose, a 2xx, a body too large) is the
/// receiver up; errors of hookd's own making (an address it refuses, an
/// `http://` URL under `https_only`, a secret that does not open) say
/// nothing of the receiver.
pub fn counts(status: Option<i32>, error_code: Option<&str>) -> bool {
    match status {
        Some(status) => status >= 500 || status == 429,
        None => matches!(
            error_code,
            Some("timeout" | "connect" | "tls" | "dns" | "request")
        ),
    }
}

/// Whether a notification's result says anything of the receiver at all:
/// `counts` for the ones that do; the others neither count nor reset.
pub fn says_anything(status: Option<i32>, error_code: Option<&str>) -> bool {
    status.is_some() || counts(status, error_code)
}

/// What to do with a notification due at `due_at`, claimed at `now`,
/// whose endpoint's circuit is not closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Held: given back to the index until this time (its hold deadline).
    Park(DateTime<Utc>),
    /// Held longer than `max_hold`: it ends failed, `circuit_open`.
    Fail,
}

pub fn hold(due_at: DateTime<Utc>, now: DateTime<Utc>, max_hold: Duration) -> Hold {
    let deadline = due_at + max_hold;
    if now >= deadline {
        Hold::Fail
    } else {
        Hold::Park(deadline)
    }
}

#[cfg(test)]
#[path = "breaker_tests.rs"]
mod tests;
