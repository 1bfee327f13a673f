//! The two lanes an endpoint's capacity is shared by (design §17):
//! *fresh*, a notification's first attempt, and *backlog*, everything
//! else (retries, manual retries, recovered series, notifications released
//! by a closing circuit). While both have due work, fresh gets at least
//! the endpoint's `fresh_share` of its rate limit (`rate::decide_lanes`).
//!
//! The lane is read from what the row already has: its `attempts`, and
//! whether a closing circuit released it. A manual retry or a recover
//! starts a new series at `series_start = attempts`, so a row in a new
//! series has been attempted before, unless it never was (a retry of a
//! pending row never attempted, which is its first attempt still).
//!
//! The breaker holds a notification without writing it (in the due index
//! and in memory), so its release marks those it moves that were never
//! attempted (`released_by_circuit`): without the mark, a receiver back
//! from an outage would get its fresh notifications behind every one its
//! circuit held, all of them "fresh" and due earlier.
//!
//! The concurrency cap is split the same way, per endpoint and process
//! (`backlog_room`): while fresh work waits for a slot, backlog may hold
//! at most `⌈(1 − share) × cap⌉` of the cap, so the slots it frees go to
//! fresh; with none waiting, backlog may use the whole cap (the unused
//! share is lent). A fresh one only needs a free slot of the cap.

/// Which share of an endpoint's capacity a notification is sent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    Fresh,
    Backlog,
}

impl Lane {
    /// The lane of a notification with these `attempts` (in all its
    /// series), and whether a closing circuit released it.
    pub fn of(attempts: i32, released_by_circuit: bool) -> Self {
        if attempts == 0 && !released_by_circuit {
            Self::Fresh
        } else {
            Self::Backlog
        }
    }

    /// Its place in a pair of per-lane values (fresh first).
    pub fn index(self) -> usize {
        match self {
            Self::Fresh => 0,
            Self::Backlog => 1,
        }
    }

    /// The lane that lends to this one (and borrows from it).
    pub fn other(self) -> Self {
        match self {
            Self::Fresh => Self::Backlog,
            Self::Backlog => Self::Fresh,
        }
    }

    /// How the limiter names it (bucket keys, the Redis script).
    pub fn name(self) -> &'static str {
        match self {
            Self::Fresh => "fresh",
            Self::Backlog => "backlog",
        }
    }
}

/// The slots of `cap` that backlog may hold while fresh work of the
/// endpoint waits for one: `⌈(1 − share) × cap⌉`, the whole cap when
/// `share` is 0 (lanes off).
pub fn backlog_slots(cap: u32, share: f64) -> u32 {
    let share = share.clamp(0.0, 1.0);
    ((1.0 - share) * f64::from(cap)).ceil() as u32
}

/// Whether a notification of `lane` may take a slot of `cap` now, with
/// `in_flight` (fresh, backlog) of the endpoint in flight, and whether
/// fresh work of the endpoint is waiting for a slot.
pub fn has_room(
    lane: Lane,
    in_flight: [u32; 2],
    cap: u32,
    share: f64,
    fresh_waiting: bool,
) -> bool {
    let [fresh, backlog] = in_flight;
    if fresh + backlog >= cap {
        return false;
    }
    match lane {
        Lane::Fresh => true,
        Lane::Backlog => !fresh_waiting || backlog < backlog_slots(cap, share),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlog_keeps_its_share_of_the_cap_rounded_up_and_all_of_it_with_lanes_off() {
        assert_eq!(backlog_slots(32, 0.5), 16);
        assert_eq!(backlog_slots(5, 0.5), 3);
        assert_eq!(backlog_slots(32, 0.0), 32);
        assert_eq!(backlog_slots(32, 1.0), 0);
        assert_eq!(backlog_slots(1, 0.5), 1);
    }

    #[test]
    fn backlog_leaves_the_fresh_share_free_only_while_fresh_work_waits() {
        // 20 backlog in flight of 32: past its 16 while fresh waits.
        assert!(!has_room(Lane::Backlog, [0, 20], 32, 0.5, true));
        assert!(has_room(Lane::Backlog, [0, 20], 32, 0.5, false));
        assert!(has_room(Lane::Backlog, [10, 15], 32, 0.5, true));
        assert!(has_room(Lane::Fresh, [0, 31], 32, 0.5, true));
        assert!(!has_room(Lane::Fresh, [0, 32], 32, 0.5, true));
        assert!(!has_room(Lane::Backlog, [16, 16], 32, 0.5, false));
        // Lanes off: the cap alone, as before lanes.
        assert!(has_room(Lane::Backlog, [0, 31], 32, 0.0, true));
    }
    use crate::domain::status::Status;
    use crate::domain::transition::retry;

    #[test]
    fn a_notification_never_attempted_is_fresh_and_any_other_is_backlog() {
        assert_eq!(Lane::of(0, false), Lane::Fresh);
        assert_eq!(Lane::of(1, false), Lane::Backlog);
        assert_eq!(Lane::of(7, false), Lane::Backlog);
    }

    #[test]
    fn a_notification_a_closing_circuit_released_is_backlog_though_never_attempted() {
        assert_eq!(Lane::of(0, true), Lane::Backlog);
        assert_eq!(Lane::of(2, true), Lane::Backlog);
    }

    #[test]
    fn a_manual_retry_of_an_attempted_notification_is_backlog() {
        let now = chrono::Utc::now();
        let retried = retry((Status::Failed, 3, None), false, false, now, now).unwrap();
        // The new series starts after the attempts made: the row keeps them.
        assert_eq!(retried.series_start, 3);
        assert_eq!(Lane::of(retried.series_start, false), Lane::Backlog);
    }
}
