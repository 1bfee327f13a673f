//! The two lanes an endpoint's capacity is shared by (design §17):
//! *fresh*, a notification's first attempt, and *backlog*, everything
//! else (retries, manual retries, recovered series). While both have due
//! work, fresh gets at least the endpoint's `fresh_share` of its rate
//! limit (`rate::decide_lanes`).
//!
//! The lane is read from what the row already has: its `attempts`. A
//! manual retry or a recover starts a new series at `series_start =
//! attempts`, so a row in a new series has been attempted before, unless
//! it never was (a retry of a pending row never attempted, which is its
//! first attempt still). So `attempts == 0` is the whole rule.
//!
//! A notification held by an open circuit and released when it closes is
//! not recorded as such on its row (the breaker holds it in memory and in
//! the due index): one never attempted counts as fresh until a lane column
//! lands. One attempted before is backlog anyway.

/// Which share of an endpoint's capacity a notification is sent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    Fresh,
    Backlog,
}

impl Lane {
    /// The lane of a notification with these `attempts` (in all its
    /// series).
    pub fn of(attempts: i32) -> Self {
        if attempts == 0 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::status::Status;
    use crate::domain::transition::retry;

    #[test]
    fn a_notification_never_attempted_is_fresh_and_any_other_is_backlog() {
        assert_eq!(Lane::of(0), Lane::Fresh);
        assert_eq!(Lane::of(1), Lane::Backlog);
        assert_eq!(Lane::of(7), Lane::Backlog);
    }

    #[test]
    fn a_manual_retry_of_an_attempted_notification_is_backlog() {
        let now = chrono::Utc::now();
        let retried = retry(Status::Failed, 3, None, false, now, now).unwrap();
        // The new series starts after the attempts made: the row keeps them.
        assert_eq!(retried.series_start, 3);
        assert_eq!(Lane::of(retried.series_start), Lane::Backlog);
    }
}
