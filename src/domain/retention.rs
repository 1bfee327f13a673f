//! Retention's choice (`retention.days`): which notifications are old
//! enough and final to delete, where a walk for them by id can stop, and
//! which events and ordering keys go. No I/O: the store walks its rows and reads each one's
//! state, this decides, and the store deletes exactly those, fenced by the
//! state it read (a retry in between brings one back).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::id::first_of_ms;
use super::status::Status;

/// Whether a notification is deleted by a purge of what completed before
/// `before`: final (never a pending one, whatever its age) and completed
/// before then.
pub fn expired(status: Status, completed_at: Option<DateTime<Utc>>, before: DateTime<Utc>) -> bool {
    status != Status::Pending && completed_at.is_some_and(|at| at < before)
}

/// Where a walk for notifications completed before `before` ends (the
/// first id it need not read): one completed then was created before, and
/// ids are UUIDv7, made from their creation time. Rows it keeps (created
/// that long ago but pending, or completed lately) are passed over once
/// per walk.
pub fn notifications_end(before: DateTime<Utc>) -> Uuid {
    first_of_ms(before.timestamp_millis() + 1)
}

/// Where a walk for events created before `before` ends. An event among
/// those goes once no delivery of it is left (retention deleted them): its
/// deliveries are made with it, never later.
pub fn events_end(before: DateTime<Utc>) -> Uuid {
    first_of_ms(before.timestamp_millis())
}

/// Whether an event created before a purge's cutoff (`events_end`) is
/// deleted: once none of its deliveries is left, retention having deleted
/// them (they are made with it, never later, so none can come back).
pub fn event_expired(deliveries_left: bool) -> bool {
    !deliveries_left
}

/// What holds an ordering key (`order_keys.held_by`, docs/design.md §17),
/// as a retention walk finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHolder {
    /// Nothing: its line goes on.
    None,
    /// A failed or cancelled notification of the key, still stored: its
    /// later ones wait until it is retried to success, or cancelled.
    Stored,
    /// One that retention has since removed. It can never be retried, so
    /// it holds nothing: its later ones go (housekeeping's
    /// `release_stranded` releases them, the oldest first), and the walk
    /// clears `held_by`.
    Gone,
}

/// A key's line as its row in `order_keys` says it (docs/design.md §17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyLine {
    /// No notification of the key waits in line (`tail` is NULL).
    pub empty: bool,
    /// When its line was last emptied (`emptied_at`): every write of the
    /// row by an end (of the key's tail, or of a holder) or by a change of
    /// ordering keeps the later of this and its own time, and a create
    /// that inserts the row sets it. `None` only for a row no such write
    /// has stamped.
    pub emptied_at: Option<DateTime<Utc>>,
}

/// Whether a key's row in `order_keys` (its last sequence, and what holds
/// it: docs/design.md §17) is deleted by a purge of what completed before
/// `before`: once its line is empty and was last emptied before then, and
/// no stored notification holds it (a holder retention removed holds
/// nothing). The end that empties a key's line is always its tail's, and
/// the tail is the key's last notification, so every notification of the
/// key completed by then, and retention removes them. The key's sequence
/// then starts again at 1: a sequence counts a key's notifications while
/// it has history, and none is left to compare with.
///
/// A key can go while expired history of it is still stored but not yet
/// deleted (a day partition another pending row keeps), and after an
/// endpoint's ordering was turned off, once the turn-off is before the
/// cutoff, even if a formerly ordered notification completed later.
pub fn order_key_expired(line: KeyLine, before: DateTime<Utc>, holder: KeyHolder) -> bool {
    line.empty && line.emptied_at.is_some_and(|at| at < before) && holder != KeyHolder::Stored
}

/// Whether an operation is deleted by a purge of what finished before
/// `before`: never one that runs (its state is how it resumes), and a
/// finished one once it finished before then. Finished operations are
/// kept as long as notifications are (`retention.days`), so a recover can
/// be looked up as long as what it restarted.
pub fn operation_expired(
    status: super::operation::OperationStatus,
    finished_at: Option<DateTime<Utc>>,
    before: DateTime<Utc>,
) -> bool {
    status != super::operation::OperationStatus::Running
        && finished_at.is_some_and(|at| at < before)
}

/// Where the per-minute counts behind the overview end (`GET /v1/stats`):
/// rows of minutes before this go, whatever `retention.days` says. The
/// overview reads a day at most; a second day keeps yesterday for a
/// comparison, and the tables stay small (a row per endpoint and minute).
pub fn minutes_before(now: DateTime<Utc>) -> DateTime<Utc> {
    now - chrono::Duration::days(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn only_final_notifications_completed_before_the_cutoff_are_deleted() {
        let before = at(100);
        let cases = [
            (Status::Succeeded, Some(at(99)), true),
            (Status::Failed, Some(at(0)), true),
            (Status::Cancelled, Some(at(50)), true),
            (Status::Succeeded, Some(at(100)), false),
            (Status::Failed, Some(at(101)), false),
            (Status::Pending, Some(at(0)), false),
            (Status::Pending, None, false),
            (Status::Failed, None, false),
        ];
        for (status, completed_at, want) in cases {
            assert_eq!(
                expired(status, completed_at, before),
                want,
                "{status} {completed_at:?}"
            );
        }
    }

    #[test]
    fn a_walk_ends_past_every_id_made_before_its_cutoff() {
        let before = at(100);
        let made = |at: DateTime<Utc>| {
            let ms = at.timestamp_millis() as u64;
            let ts = uuid::Timestamp::from_unix(
                uuid::NoContext,
                ms / 1000,
                (ms % 1000) as u32 * 1_000_000,
            );
            Uuid::new_v7(ts)
        };
        assert!(made(at(99)) < notifications_end(before));
        assert!(
            made(before) < notifications_end(before),
            "completed in its millisecond"
        );
        assert!(made(at(101)) > notifications_end(before));
        assert!(made(at(99)) < events_end(before));
        assert!(made(before) >= events_end(before), "made at the cutoff");
    }

    #[test]
    fn a_key_goes_once_its_line_was_emptied_before_the_cutoff_and_no_stored_one_holds_it() {
        use KeyHolder::{Gone, None as Free, Stored};
        let before = at(100);
        let line = |empty, emptied: Option<i64>| KeyLine {
            empty,
            emptied_at: emptied.map(at),
        };
        assert!(order_key_expired(line(true, Some(99)), before, Free));
        assert!(
            order_key_expired(line(true, Some(99)), before, Gone),
            "its holder is gone"
        );
        assert!(
            !order_key_expired(line(true, Some(99)), before, Stored),
            "held"
        );
        assert!(
            !order_key_expired(line(false, Some(99)), before, Free),
            "one waits in line"
        );
        assert!(
            !order_key_expired(line(true, Some(100)), before, Free),
            "emptied at the cutoff"
        );
        assert!(
            !order_key_expired(line(true, Some(101)), before, Gone),
            "emptied since"
        );
        assert!(
            !order_key_expired(line(true, None), before, Free),
            "never stamped"
        );
    }

    #[test]
    fn a_running_operation_is_never_deleted_and_a_finished_one_after_retention() {
        use crate::domain::operation::OperationStatus;
        let before = at(100);
        assert!(!operation_expired(
            OperationStatus::Running,
            Some(at(0)),
            before
        ));
        assert!(!operation_expired(OperationStatus::Running, None, before));
        assert!(operation_expired(
            OperationStatus::Done,
            Some(at(99)),
            before
        ));
        assert!(operation_expired(
            OperationStatus::Failed,
            Some(at(0)),
            before
        ));
        assert!(!operation_expired(
            OperationStatus::Done,
            Some(at(100)),
            before
        ));
    }
}
