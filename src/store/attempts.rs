//! Attempts, as the status API shows them: one row of `attempts` per
//! delivery attempt, but for an attempt kept in its notification's row
//! (a notification delivered at its first attempt).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::outcome::OutcomeKind;

#[derive(Debug, Clone)]
pub struct Attempt {
    pub notification_id: Uuid,
    pub number: i32,
    pub started_at: DateTime<Utc>,
    pub duration_ms: i32,
    pub status_code: Option<i32>,
    pub response_body: Option<String>,
    /// The response's headers as kept (`domain::attempt_headers`).
    pub response_headers: Option<String>,
    /// What is kept of the request's headers (`domain::attempt_headers`).
    pub sent_headers: Option<String>,
    /// It opens a series a retry started.
    pub retried: bool,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub outcome: OutcomeKind,
}
