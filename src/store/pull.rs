//! Pull consumption's side of the store: end leases (ack, nack, expiry) by
//! recording their attempt, lengthen them, and consumer tokens (a pull's
//! take is `pull_due`). Leases live in the
//! notification rows (`lease_id`, `leased_at`, and `next_attempt_at` as the
//! expiry), so they survive a crash of hookd and a loss of Redis, and a
//! receipt is checked in the statement that writes. What an ended lease
//! makes of the notification is decided by the caller (`domain::pull`);
//! this reads the rows it decides on and writes the decisions, fenced by
//! the lease each was decided on.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::recording::AttemptRecord;
use crate::domain::lease::Lease;
use crate::domain::pull::Receipt;
use crate::domain::status::Status;

/// A notification taken under a lease, as the consumer gets it.
#[derive(Clone)]
pub struct Taken {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub key: Option<String>,
    /// Its business object's key, and its place in that key's order, on
    /// an endpoint ordered by key.
    pub order_key: Option<String>,
    pub sequence: Option<i64>,
    pub event_type: Option<String>,
    pub event_id: Option<Uuid>,
    pub content_type: String,
    pub body: Vec<u8>,
    pub headers: BTreeMap<String, String>,
    pub created_at: DateTime<Utc>,
    /// Attempts before this one.
    pub attempts: i32,
    pub lease_id: Uuid,
    /// When it was due: the pull's lateness is measured from here.
    pub due_at: DateTime<Utc>,
    /// When the lease runs out.
    pub lease_until: DateTime<Utc>,
    /// A custom header value that did not open: this one cannot be handed
    /// over, and its lease ends as a failed attempt.
    pub unreadable: Option<crate::domain::sealed::SealError>,
}

impl std::fmt::Debug for Taken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Taken")
            .field("id", &self.id)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// A notification whose lease is being ended, with what the decision
/// needs. `now` is the database's clock, which every lease is
/// measured by.
#[derive(Debug, Clone)]
pub struct Leased {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub pull: bool,
    pub status: Status,
    pub key: Option<String>,
    pub event_type: Option<String>,
    pub attempts: i32,
    pub series_start: i32,
    pub schedule_ms: Vec<i64>,
    pub schedule_name: Option<String>,
    pub lease_id: Option<Uuid>,
    pub leased_at: Option<DateTime<Utc>>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub now: DateTime<Utc>,
    /// The endpoint's `schedule_jitter`: a nack or an expired lease goes on
    /// with the schedule as a push failure does, jittered alike.
    pub schedule_jitter: f64,
}

impl Leased {
    /// The row's lease, if it has one (still running or not): while leased,
    /// `next_attempt_at` is when the lease runs out.
    pub fn lease(&self) -> Option<Lease> {
        Lease::stored(self.lease_id, self.leased_at, self.next_attempt_at)
    }

    /// Whether `lease` is this row's current lease, and still running.
    pub fn holds(&self, lease: Uuid) -> bool {
        self.status == Status::Pending
            && self
                .lease()
                .is_some_and(|held| held.id == lease && held.runs_at(self.now))
    }
}

/// Which leases to end.
#[derive(Debug, Clone, Copy)]
pub enum Leases<'a> {
    /// The rows these receipts name (ack, nack).
    Receipts(&'a [Receipt]),
    /// Leases that ran out, earliest first: of one endpoint, or of all.
    Expired { endpoint: Option<Uuid>, limit: i64 },
    /// The leases of these notifications, those that ran out.
    ExpiredOf(&'a [Uuid]),
    /// One endpoint's leased pending pull notifications, running or run
    /// out, at most `limit`, in no order (an order by id would let a plan
    /// walk the whole table by its primary key for the few leased rows):
    /// what a switch to push ends; the caller asks again until none is left.
    HeldBy { endpoint: Uuid, limit: i64 },
}

/// What `end_leases` read, and the ids whose lease it ended.
#[derive(Debug, Default)]
pub struct LeasesEnded {
    pub rows: Vec<Leased>,
    pub moved: Vec<Uuid>,
}

/// Decides, for each row read, the attempt to record (`None`: leave it).
pub type LeaseDecision<'a> = Box<dyn FnMut(&Leased) -> Option<AttemptRecord> + Send + 'a>;
