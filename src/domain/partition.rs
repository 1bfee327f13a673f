//! The daily partitions of the server mode's history (docs/design.md §13,
//! docs/partitioning.md): `notifications` and `attempts` are partitioned
//! by range of the (UUIDv7) notification id, one partition per UTC day.
//! No I/O: which id bounds a day, what its partitions are named, which
//! days are made ahead, and whether a day's partitions may be dropped by
//! retention. The store creates, reads and drops what this decides.

use chrono::{DateTime, Days, NaiveDate, Utc};
use uuid::Uuid;

use super::id::first_of_ms;
use super::retention::expired;
use super::status::Status;

/// How many days of partitions exist ahead of today. Fixed, not a setting:
/// making one is cheap and idempotent and housekeeping tries every ten
/// minutes, so a week covers any outage of housekeeping worth surviving
/// (an insert past the last one goes to the DEFAULT partition, refused
/// never, and warned about).
pub const AHEAD_DAYS: u64 = 7;

/// The tables partitioned by day (`attempts` by its notification's id).
pub const TABLES: [&str; 2] = ["notifications", "attempts"];

/// The smallest UUIDv7 of `day`'s first millisecond (midnight UTC): a
/// day's partition holds the ids from its day's bound to the next one's.
pub fn day_bound(day: NaiveDate) -> Uuid {
    let midnight = day.and_hms_opt(0, 0, 0).expect("midnight").and_utc();
    first_of_ms(midnight.timestamp_millis())
}

/// The UTC day an instant falls in.
pub fn day_of(at: DateTime<Utc>) -> NaiveDate {
    at.date_naive()
}

/// The partition of `table` for `day`: `notifications_p20261126`.
pub fn partition_name(table: &str, day: NaiveDate) -> String {
    format!("{table}_p{}", day.format("%Y%m%d"))
}

/// The day a partition's name stands for, if it is a daily partition.
pub fn day_of_partition(table: &str, name: &str) -> Option<NaiveDate> {
    let digits = name.strip_prefix(table)?.strip_prefix("_p")?;
    if digits.len() != 8 {
        return None;
    }
    NaiveDate::parse_from_str(digits, "%Y%m%d").ok()
}

/// The days whose partitions must exist on `today`: today and the
/// `AHEAD_DAYS` after it.
pub fn days_ahead(today: NaiveDate) -> Vec<NaiveDate> {
    (0..=AHEAD_DAYS)
        .filter_map(|n| today.checked_add_days(Days::new(n)))
        .collect()
}

/// What the store reads of a partition's notifications for `droppable`:
/// whether one is pending, whether a final one lacks its completion time,
/// and the latest completion time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub pending: bool,
    pub unfinished: bool,
    pub latest_completed: Option<DateTime<Utc>>,
}

/// Whether every id below `end` was made before the cutoff `before`: the
/// first half of `droppable`, which needs no read of the rows (a partition
/// not past it is not summarised at all).
pub fn past(end: Uuid, before: DateTime<Utc>) -> bool {
    end <= first_of_ms(before.timestamp_millis())
}

/// Whether retention drops the partitions holding ids below `end` (a
/// day's, ending at the next day's bound, or the legacy one's): only when
/// every id they can hold was made before the cutoff `before`, and when
/// every notification in them is one `retention::expired` deletes, so
/// that dropping them deletes exactly what the row-by-row purge would.
/// A partition kept (a notification still pending, or completed within
/// retention) is left to the row-by-row purge, which deletes what did
/// expire of it, and is dropped once the rest has.
pub fn droppable(end: Uuid, summary: &Summary, before: DateTime<Utc>) -> bool {
    let whole_range_old = past(end, before);
    // The latest completion decides for every final row: each completed
    // at or before it, and `expired` is monotonic in the completion time.
    let all_expired = !summary.pending
        && !summary.unfinished
        && summary
            .latest_completed
            .is_none_or(|at| expired(Status::Succeeded, Some(at), before));
    whole_range_old && all_expired
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    fn made_at(at: DateTime<Utc>) -> Uuid {
        let ms = at.timestamp_millis() as u64;
        let ts =
            uuid::Timestamp::from_unix(uuid::NoContext, ms / 1000, (ms % 1000) as u32 * 1_000_000);
        Uuid::new_v7(ts)
    }

    #[test]
    fn a_days_bound_is_below_every_id_of_the_day_and_above_every_id_before() {
        let d = day(2026, 11, 26);
        let midnight = d.and_hms_opt(0, 0, 0).unwrap().and_utc();
        let ms = format!("{:012x}", midnight.timestamp_millis());
        assert_eq!(
            day_bound(d).to_string(),
            format!("{}-{}-0000-0000-000000000000", &ms[..8], &ms[8..]),
            "the midnight's milliseconds, then zeros (the migration's SQL makes the same)"
        );
        assert!(made_at(midnight) >= day_bound(d));
        assert!(made_at(midnight - chrono::Duration::milliseconds(1)) < day_bound(d));
        assert!(crate::domain::id::new_id() > day_bound(day_of(Utc::now())));
        assert!(day_bound(d) < day_bound(day(2026, 11, 27)));
    }

    #[test]
    fn a_partition_name_carries_its_day_and_is_read_back() {
        let d = day(2026, 1, 5);
        assert_eq!(partition_name("attempts", d), "attempts_p20260105");
        assert_eq!(day_of_partition("attempts", "attempts_p20260105"), Some(d));
        assert_eq!(
            day_of_partition("notifications", "attempts_p20260105"),
            None
        );
        assert_eq!(
            day_of_partition("notifications", "notifications_legacy"),
            None
        );
        assert_eq!(
            day_of_partition("notifications", "notifications_default"),
            None
        );
    }

    #[test]
    fn today_and_a_week_ahead_are_made() {
        let days = days_ahead(day(2026, 12, 30));
        assert_eq!(days.len(), 8);
        assert_eq!(days[0], day(2026, 12, 30));
        assert_eq!(days[7], day(2027, 1, 6));
    }

    #[test]
    fn a_day_is_dropped_only_when_past_retention_and_all_of_it_expired() {
        let before = day(2026, 11, 20).and_hms_opt(12, 0, 0).unwrap().and_utc();
        let old_end = day_bound(day(2026, 11, 20));
        let expired_rows = Summary {
            latest_completed: Some(before - chrono::Duration::hours(1)),
            ..Summary::default()
        };
        assert!(droppable(old_end, &expired_rows, before));
        assert!(droppable(old_end, &Summary::default(), before), "empty");
        // The day of the cutoff itself is not wholly before it.
        assert!(!droppable(
            day_bound(day(2026, 11, 21)),
            &expired_rows,
            before
        ));
        let pending = Summary {
            pending: true,
            ..expired_rows
        };
        assert!(!droppable(old_end, &pending, before), "a pending one");
        let lately = Summary {
            latest_completed: Some(before),
            ..Summary::default()
        };
        assert!(
            !droppable(old_end, &lately, before),
            "completed within retention"
        );
        let unfinished = Summary {
            unfinished: true,
            ..expired_rows
        };
        assert!(!droppable(old_end, &unfinished, before));
        assert!(past(old_end, before));
        assert!(!past(day_bound(day(2026, 11, 21)), before));
    }
}
