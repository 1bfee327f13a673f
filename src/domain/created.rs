//! The `created_after` / `created_before` filters of the lists: a half-open
//! window `[after, before)` on a row's `created_at`, and the range of ids
//! that holds every row in it, so a store walks its id-ordered indexes from
//! the window's end instead of from the newest row.
//!
//! Ids are UUIDv7 made by the hookd process that accepted the row, just
//! before it was stored; `created_at` is when it was stored (PostgreSQL's
//! clock, or the process's own in the embedded mode). The id range is
//! widened by `ID_CLOCK_MARGIN` on both sides for the request's time and
//! the clocks' differences; the window itself is applied exactly.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use super::id::first_of_ms;
use super::problem::{ErrorCode, Problem};

/// How far a row's `created_at` may lie from its id's time: a request's
/// commit wait plus the difference between a hookd host's clock and
/// PostgreSQL's, both far below it on any synchronised machine.
pub const ID_CLOCK_MARGIN: Duration = Duration::minutes(5);

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CreatedWindow {
    /// Rows created at or after this.
    pub after: Option<DateTime<Utc>>,
    /// Rows created before this.
    pub before: Option<DateTime<Utc>>,
}

impl CreatedWindow {
    /// The window a list, a bulk retry or a bulk cancel asks for: refused
    /// when `before` is not after `after`, since it holds nothing (a list
    /// would answer an empty page, a bulk action would do nothing, and
    /// either way the caller swapped them).
    pub fn asked(
        after: Option<DateTime<Utc>>,
        before: Option<DateTime<Utc>>,
    ) -> Result<Self, Problem> {
        if let (Some(after), Some(before)) = (after, before) {
            if before <= after {
                return Err(Problem::invalid(
                    ErrorCode::InvalidValue,
                    "created_before",
                    "created_before is not after created_after: the window holds nothing",
                ));
            }
        }
        Ok(Self { after, before })
    }

    /// Whether a row created at `at` is in the window.
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.after.is_none_or(|after| at >= after) && self.before.is_none_or(|before| at < before)
    }

    /// The ids that can hold the window's rows: at or above the first,
    /// below the second.
    pub fn id_range(&self) -> (Option<Uuid>, Option<Uuid>) {
        let margin = ID_CLOCK_MARGIN.num_milliseconds();
        (
            self.after
                .map(|after| first_of_ms(after.timestamp_millis() - margin)),
            self.before
                .map(|before| first_of_ms(before.timestamp_millis() + margin + 1)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::id::new_id;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).unwrap()
    }

    #[test]
    fn a_window_whose_end_is_not_after_its_start_is_refused_naming_created_before() {
        for (after, before) in [(10, 10), (20, 10)] {
            let refused = CreatedWindow::asked(Some(at(after)), Some(at(before))).unwrap_err();
            assert_eq!(refused.field.as_deref(), Some("created_before"));
        }
        assert!(CreatedWindow::asked(Some(at(10)), Some(at(11))).is_ok());
        assert!(CreatedWindow::asked(None, Some(at(10))).is_ok());
    }

    #[test]
    fn the_window_is_half_open() {
        let window = CreatedWindow {
            after: Some(at(1_000)),
            before: Some(at(2_000)),
        };
        assert!(window.contains(at(1_000)));
        assert!(window.contains(at(1_999)));
        assert!(!window.contains(at(2_000)));
        assert!(!window.contains(at(999)));
        assert!(CreatedWindow::default().contains(at(0)));
    }

    #[test]
    fn the_id_range_holds_rows_stored_within_the_margin_of_their_id() {
        let now = Utc::now();
        let id = new_id();
        let margin = ID_CLOCK_MARGIN - Duration::milliseconds(1);
        // Stored a little after (or, by another clock, before) its id was made.
        for created_at in [now, now + margin, now - margin] {
            let window = CreatedWindow {
                after: Some(created_at),
                before: Some(created_at + Duration::milliseconds(1)),
            };
            let (low, high) = window.id_range();
            assert!(low.unwrap() <= id, "{created_at}");
            assert!(id < high.unwrap(), "{created_at}");
        }
        assert_eq!(CreatedWindow::default().id_range(), (None, None));
    }
}
