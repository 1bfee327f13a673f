//! What is due to pull consumers: a pull takes due notifications under a
//! lease, recording on the way the attempts of leases that ran out
//! unrecorded, and notifications that no consumer took in time end. Each
//! runs in one transaction holding the rows it reads, so no consumer takes
//! a row while it is decided on, and a row another consumer holds is
//! skipped, never waited for. What each row becomes is decided by the
//! caller (`domain::lease`); this reads, and writes the decisions.

use chrono::{DateTime, Utc};

use super::pull::Leased;
use super::recording::AttemptRecord;

/// What a pull does with one row it looked at.
#[derive(Debug, Default)]
pub struct Pick {
    /// An attempt to record first: the lease that ran out.
    pub record: Option<AttemptRecord>,
    /// Lease it to the consumer, as due since then (after `record`, if it
    /// is written).
    pub take: Option<DateTime<Utc>>,
}

/// Decides, for each row a pull reads, what it does with it.
pub type PickDecision<'a> = Box<dyn FnMut(&Leased) -> Pick + Send + 'a>;
