//! Cancelling: by id, by business key, and the one statement every cancel
//! path uses (a deleted endpoint's, an event's, a dispatcher's orphans).

use uuid::Uuid;

use super::notifications::Notification;

/// Which pending notifications a set-based cancel takes: each backend's
/// `cancel_pending` is the one statement every such path uses, with a
/// filter per selector for the index it uses.
pub enum Pending<'a> {
    Ids(&'a [Uuid]),
    /// By business key, on one endpoint or on all, but `spare`'s.
    Key {
        key: &'a str,
        endpoint_id: Option<Uuid>,
        spare: Option<Uuid>,
    },
    /// Every one of an endpoint's.
    Endpoint(Uuid),
    /// Every delivery of an event.
    Event(Uuid),
    /// An endpoint's deliveries of events that are not `owner`'s: what it
    /// holds of its former owner's once moved to another.
    OtherOwners {
        endpoint_id: Uuid,
        owner: Option<&'a str>,
    },
}

/// The result of a cancel by id.
#[derive(Debug)]
pub enum Cancel {
    Cancelled(Notification),
    /// Already final (succeeded, failed, or cancelled before).
    NotPending(Notification),
    NotFound,
}
