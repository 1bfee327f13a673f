//! Endpoint health in the store: the automatic disabling of endpoints whose
//! every attempt has failed for too long. What counts as failing and the
//! events that report a disable are decided in `domain/`; the recorder
//! writes `failing_since` with the attempts (`recording.rs`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// An endpoint failing long enough to be disabled, as read: what its event
/// reports, and what must not have changed when it is disabled.
#[derive(Debug, Clone)]
pub struct FailingEndpoint {
    pub id: Uuid,
    pub uid: Option<String>,
    pub url: String,
    /// Its `url_secret`: the event shows the URL's origin only.
    pub url_secret: bool,
    pub failing_since: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}
