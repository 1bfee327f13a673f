//! What waits for an endpoint (`GET /v1/endpoints/{id}/backlog`): the
//! console's answer to "is anything stuck there?". Each count stops at
//! `BACKLOG_CAP`, so that asking costs the same for a backlog of millions
//! as for one of a hundred thousand.

/// The most each count goes to; past it the answer says "at least".
pub const BACKLOG_CAP: i64 = 100_000;

/// An endpoint's pending notifications, counted up to `BACKLOG_CAP` each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    /// Not ended yet.
    pub pending: i64,
    /// Pending, due by now and not under a live consumer's lease: waiting
    /// for a delivery slot, a rate-limit slot, a closed circuit or a
    /// consumer. (A lease's row is due at its expiry, so one that ran out
    /// and is not swept yet counts here, not as leased: it is stuck.)
    pub due: i64,
    /// Pending under a pull consumer's lease that has not run out.
    pub leased: i64,
}
