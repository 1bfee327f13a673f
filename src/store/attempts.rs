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
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub outcome: OutcomeKind,
}
