//! Recording attempts: a batch of attempts and the state each decided, in
//! one statement. What a recorded attempt changes is decided in `domain/`
//! (the notification's next state, its operator event, the endpoint's
//! health); this writes it, fenced against concurrent writers.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::operator_event::OperatorEvent;
use crate::domain::outcome::Outcome;
use crate::domain::status::AfterAttempt;

/// One finished attempt, to be recorded, with what it decided.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub notification_id: Uuid,
    /// The notification's endpoint, whose health the attempt tells of.
    pub endpoint_id: Uuid,
    /// 1-based, over every series: the notification had `number - 1` before.
    pub number: i32,
    /// The series the attempt belongs to: a retry since then wins.
    pub series_start: i32,
    pub started_at: DateTime<Utc>,
    pub duration_ms: i32,
    pub status_code: Option<i32>,
    pub response_body: Option<String>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub outcome: Outcome,
    /// What the notification becomes (`domain::status::after_attempt`).
    pub next: AfterAttempt,
    /// The `notification.failed` event, when `next` ends it failed and
    /// operator events are on.
    pub event: Option<OperatorEvent>,
    /// For the end of a pull lease: the lease, and for one that ran out,
    /// the end it ran out at. Whether a lease still runs is decided in
    /// `domain::lease` on the row as read; the attempt is written only if
    /// the row is still as decided on: that lease is still its own and,
    /// for one that ran out, was not extended meanwhile (an extend that
    /// read it running just before it ran out). `None` for push.
    pub lease: Option<(Uuid, Option<DateTime<Utc>>)>,
}
