//! Cancelling: by id, by business key, and the one statement every cancel
//! path uses (a deleted endpoint's, an event's, a dispatcher's orphans).

use super::notifications::Notification;

/// The result of a cancel by id.
#[derive(Debug)]
pub enum Cancel {
    Cancelled(Notification),
    /// Already final (succeeded, failed, or cancelled before).
    NotPending(Notification),
    NotFound,
}
