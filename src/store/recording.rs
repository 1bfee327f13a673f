//! Recording attempts: a batch of attempts and the state each decided, in
//! one statement. What a recorded attempt changes is decided in `domain/`
//! (the notification's next state, its operator event, the endpoint's
//! health); this writes it, fenced against concurrent writers.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::operator_event::OperatorEvent;
use crate::domain::outcome::Outcome;
use crate::domain::status::{AfterAttempt, Expected, Keeping, Status};

/// What recording a batch did, in its one transaction.
#[derive(Debug, Default)]
pub struct Recorded {
    /// The ids whose state moved (the others' rows were no longer as their
    /// records expected).
    pub moved: Vec<Uuid>,
    /// The push notifications the batch's ordered ends released (each
    /// ended key's next, `store::ordering`), with their due times, for the
    /// caller to index at once: a success's are never put on the
    /// housekeeper's list (`needs_index`), and those another end passed
    /// over are taken off it. Should the caller fail to, the overdue sweep
    /// finds them.
    /// Read in the recording's transaction: as a second transaction, on
    /// SQLite's one writer, it made each step of a key wait for the writer
    /// twice (`BENCHMARKS.md`).
    pub released: Vec<(Uuid, DateTime<Utc>)>,
}

/// The notifications of `records` that end ordered should they move:
/// the ones whose end may release their key's next.
pub fn ending(records: &[AttemptRecord]) -> impl Iterator<Item = Uuid> + '_ {
    records
        .iter()
        .filter(|r| r.ordered && r.next.completed)
        .map(|r| r.notification_id)
}

/// The notifications of `records` that ended ordered, of those that moved.
pub fn ended(records: &[AttemptRecord], moved: &[Uuid]) -> Vec<Uuid> {
    if !records.iter().any(|r| r.ordered) {
        return Vec::new();
    }
    let moved: HashSet<&Uuid> = moved.iter().collect();
    ending(records).filter(|id| moved.contains(id)).collect()
}

/// What says how a notification that a recording ended ordered ended.
#[derive(Debug, Clone, Copy)]
pub enum EndedBy<'a> {
    /// Its one record in the batch, which moved it: the row is as that
    /// record decided.
    Record(&'a AttemptRecord),
    /// Its row. The batch held two or more records of it (an attempt whose
    /// outcome waited while a duplicate's was decided on the same state),
    /// and one of them moved it: which one is the store's to say
    /// (PostgreSQL's `UPDATE … FROM` takes either).
    Row,
}

impl EndedBy<'_> {
    /// Whether it ended succeeded, as its record says; `None`: its row
    /// says.
    pub fn succeeded(&self) -> Option<bool> {
        match self {
            EndedBy::Record(record) => Some(record.next.status == Status::Succeeded),
            EndedBy::Row => None,
        }
    }
}

/// Each notification of `records` that ended ordered, of those that moved
/// (`ended`), once, in the records' order, with what says how it ended.
/// What an ordered end releases follows how it ended: each backend's
/// release asks this, so that a duplicate record never decides it.
pub fn ended_by<'a>(records: &'a [AttemptRecord], moved: &[Uuid]) -> Vec<(Uuid, EndedBy<'a>)> {
    let ended = ended(records, moved);
    if ended.is_empty() {
        return Vec::new();
    }
    let mut by: HashMap<Uuid, EndedBy<'a>> = HashMap::new();
    for record in records {
        by.entry(record.notification_id)
            .and_modify(|by| *by = EndedBy::Row)
            .or_insert(EndedBy::Record(record));
    }
    let mut seen = HashSet::new();
    ended
        .into_iter()
        .filter(|id| seen.insert(*id))
        .map(|id| (id, by[&id]))
        .collect()
}

/// The records of a recording that did not move their notification
/// (`moves`, per record) and are kept all the same
/// (`Keeping::when_refused`): those a store counts on a notification in
/// `status::COUNTS_REFUSED_ATTEMPTS` (cancelled while the attempt was on
/// the wire), when the attempt is its next one.
pub fn refused_kept<'a>(records: &'a [AttemptRecord], moves: &[bool]) -> Vec<&'a AttemptRecord> {
    records
        .iter()
        .zip(moves)
        .filter(|&(r, &moved)| r.keep.when_refused && !moved)
        .map(|(r, _)| r)
        .collect()
}

impl AttemptRecord {
    /// It opens a series a retry started: the timeline marks it
    /// (`transition::opens_retried_series`).
    pub fn retried(&self) -> bool {
        crate::domain::transition::opens_retried_series(self.number, self.expected.series_start)
    }
}

/// One finished attempt, to be recorded, with what it decided.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub notification_id: Uuid,
    /// The notification's endpoint, whose health the attempt tells of.
    pub endpoint_id: Uuid,
    /// 1-based, over every series: `expected.attempts + 1`.
    pub number: i32,
    /// The row state the attempt was decided on: its decision is written
    /// only over a row still in it (`domain::status::Expected`).
    pub expected: Expected,
    /// Where the attempt is kept (`domain::status::keeping`).
    pub keep: Keeping,
    pub started_at: DateTime<Utc>,
    /// When the attempt was due (a push attempt's `next_attempt_at`): its
    /// lateness is `started_at` minus this. `None` for pull, whose
    /// consumers choose when they take a notification.
    pub due_at: Option<DateTime<Utc>>,
    pub duration_ms: i32,
    pub status_code: Option<i32>,
    pub response_body: Option<String>,
    /// The response's headers as kept (`domain::attempt_headers`).
    pub response_headers: Option<String>,
    /// What is kept of the request's headers (`domain::attempt_headers`);
    /// `None` for pull, or when no request was made.
    pub sent_headers: Option<String>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub outcome: Outcome,
    /// It went to the endpoint's own URL or one under it: it counts for
    /// the endpoint's circuit breaker and health. A per-notification URL
    /// elsewhere does not (`domain::receiver_url::tells_of_endpoint`).
    pub tells_of_endpoint: bool,
    /// What the notification becomes (`domain::status::after_attempt`).
    pub next: AfterAttempt,
    /// The `notification.failed` event, when `next` ends it failed and
    /// operator events are on.
    pub event: Option<OperatorEvent>,
    /// It has a place in its key's order: its end may release the next
    /// one of its key (`store::ordering`), which the recorder then indexes.
    pub ordered: bool,
}
