//! When a finished attempt's record may wait to be written together with
//! others. A throttled endpoint's sends go one per slot (100 ms apart at
//! 10/s), so a recorder that writes what has arrived writes each alone: a
//! transaction per send, which is what waiting behind a rate limit costs.
//! The slots of a throttled endpoint come in groups (`rate::group_us`: ten
//! slots, at most a second), so a success's record may wait for the end of
//! its slot's group and be written with the group's others, in one
//! transaction.
//!
//! Only a success is held: a failure is what the circuit breaker counts,
//! and it is written at once (with whatever is held before it, so each
//! endpoint's outcomes are still recorded in the order they came, within
//! this process; across processes sharing a throttled endpoint, a success
//! held here may reach the breaker's count up to a second after another
//! process's failures, so consecutive failures are counted as written, not
//! as answered, within that second). A probe
//! is not held (its success closes the circuit), nor is anything from an
//! endpoint that is not being throttled (an ordinary drain, a limit that
//! does not bind): their records are written as they come, as before.
//!
//! The wait is bounded by `MAX_HOLD_US` from the outcome. A throttled
//! notification is claimed at the start of its group (`rate::park_us`), so
//! its slot is at most a group (≤ 1 s) after its claim and its attempt
//! lasts at most the endpoint's timeout, which is `LEASE_MARGIN` (5 s)
//! shorter than the lease: a second more still ends well inside the lease,
//! and the recorder keeps a held record among those whose leases it extends
//! while a write waits.

use super::rate::{group_us, park_us, RateLimit};

/// The longest a record is held after its outcome (µs).
pub const MAX_HOLD_US: i64 = 1_000_000;

/// What the recorder is told of one finished attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sent {
    /// The attempt succeeded (the notification is delivered).
    pub succeeded: bool,
    /// It was its endpoint's circuit probe.
    pub probe: bool,
    /// The endpoint's limit, when the endpoint is being throttled (some of
    /// its notifications hold slots ahead); `None` otherwise.
    pub throttled: Option<RateLimit>,
    /// The slot (or due time) it was sent at (µs).
    pub slot_us: i64,
}

/// When the record of `sent`, finished at `now_us`, must be written by
/// (µs); `None`: at once.
pub fn write_by_us(sent: Sent, now_us: i64) -> Option<i64> {
    if !sent.succeeded || sent.probe {
        return None;
    }
    let limit = sent.throttled?;
    let group_end = park_us(sent.slot_us, limit) + group_us(limit);
    let by = group_end.min(now_us + MAX_HOLD_US);
    (by > now_us).then_some(by)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000;
    const MS: i64 = 1_000;
    /// The start of a group of a 10/s limit (a whole second).
    const GROUP: i64 = 1_700_000_000 * S;

    fn ten_a_second() -> RateLimit {
        RateLimit::new(10.0, 20).unwrap()
    }

    fn success(slot_us: i64) -> Sent {
        Sent {
            succeeded: true,
            probe: false,
            throttled: Some(ten_a_second()),
            slot_us,
        }
    }

    #[test]
    fn a_throttled_success_waits_for_the_end_of_its_group() {
        for slot in 0..10 {
            let at = GROUP + slot * 100 * MS;
            assert_eq!(write_by_us(success(at), at + 5 * MS), Some(GROUP + S));
        }
    }

    #[test]
    fn a_failure_is_written_at_once() {
        let failed = Sent {
            succeeded: false,
            ..success(GROUP)
        };
        assert_eq!(write_by_us(failed, GROUP + 5 * MS), None);
    }

    #[test]
    fn a_probe_is_written_at_once() {
        let probe = Sent {
            probe: true,
            ..success(GROUP)
        };
        assert_eq!(write_by_us(probe, GROUP + 5 * MS), None);
    }

    #[test]
    fn an_endpoint_not_being_throttled_is_written_at_once() {
        let free = Sent {
            throttled: None,
            ..success(GROUP)
        };
        assert_eq!(write_by_us(free, GROUP + 5 * MS), None);
    }

    #[test]
    fn an_outcome_after_its_group_ended_is_written_at_once() {
        // A slow receiver: the answer came after the group's end.
        assert_eq!(write_by_us(success(GROUP + 900 * MS), GROUP + S), None);
        assert_eq!(write_by_us(success(GROUP), GROUP + 3 * S), None);
    }

    #[test]
    fn no_record_is_held_longer_than_the_bound() {
        // Slower than one a second: a group is one slot, at most a second.
        let slow = RateLimit::new(0.01, 1).unwrap();
        for limit in [slow, ten_a_second(), RateLimit::new(2.0, 1).unwrap()] {
            for offset in [0, 1, 250 * MS, 999 * MS] {
                let sent = Sent {
                    throttled: Some(limit),
                    ..success(GROUP + offset)
                };
                let now = GROUP + offset + MS;
                if let Some(by) = write_by_us(sent, now) {
                    assert!(by > now && by - now <= MAX_HOLD_US, "{limit:?} {offset}");
                }
            }
        }
    }

    #[test]
    fn a_fast_limit_holds_for_its_short_group_only() {
        // 1,000/s: ten slots are 10 ms.
        let fast = Sent {
            throttled: Some(RateLimit::new(1000.0, 1).unwrap()),
            ..success(GROUP + 3 * MS)
        };
        assert_eq!(write_by_us(fast, GROUP + 4 * MS), Some(GROUP + 10 * MS));
    }
}
