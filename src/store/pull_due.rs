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

/// Rounds of reading a pull makes before it answers with fewer than it
/// was asked for. A round that takes fewer than it read recorded leases
/// that ran out and are not due again yet; those leave the due rows, so
/// the next round reads others.
const TAKE_ROUNDS: usize = 4;

/// A backend's steps of one take, inside the transaction that holds what
/// it reads until the take ends (`take_rounds` is the loop over them).
#[async_trait::async_trait]
pub(crate) trait TakeSteps: Send {
    /// Up to `want` due rows of the endpoint (free and due by `now`, or
    /// under a lease that ran out by then), earliest due first, but
    /// `seen`; none while the endpoint is disabled.
    async fn due_rows(
        &mut self,
        want: i64,
        seen: &[uuid::Uuid],
        now: DateTime<Utc>,
    ) -> Result<Vec<Leased>, super::StoreError>;
    /// Records these attempts; the ids that moved.
    async fn record(
        &mut self,
        records: &[AttemptRecord],
        now: DateTime<Utc>,
    ) -> Result<Vec<uuid::Uuid>, super::StoreError>;
    /// Leases these free pending rows (each with the time it is due since)
    /// from `now` until `until`; those still free and pending.
    async fn lease(
        &mut self,
        rows: &[(uuid::Uuid, DateTime<Utc>)],
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<super::pull::Taken>, super::StoreError>;
}

/// The take loop, written once for both backends: read due rows, let
/// `decide` say what each becomes (`domain::lease::at_pull`), record the
/// leases that ran out, lease what is taken, until `max` are taken or the
/// due rows run out. `now` is the store's clock (`crate::clock`) and
/// `until` the lease's end (`domain::lease::lease_end`). The taken rows
/// come earliest due first.
pub(crate) async fn take_rounds(
    steps: &mut impl TakeSteps,
    max: i64,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    mut decide: PickDecision<'_>,
) -> Result<Vec<super::pull::Taken>, super::StoreError> {
    let mut taken = Vec::new();
    let mut seen = Vec::new();
    for _ in 0..TAKE_ROUNDS {
        let want = max - taken.len() as i64;
        if want <= 0 {
            break;
        }
        let rows = steps.due_rows(want, &seen, now).await?;
        seen.extend(rows.iter().map(|r| r.id));
        let mut records = Vec::new();
        let mut wanted = Vec::new();
        for row in &rows {
            let pick = decide(row);
            let recorded = pick.record.is_some();
            records.extend(pick.record);
            if let Some(due_at) = pick.take {
                wanted.push((row.id, due_at, recorded));
            }
        }
        let moved = steps.record(&records, now).await?;
        // A row whose ran-out lease was not recorded (lost to another
        // write) is not taken.
        let leasing: Vec<_> = wanted
            .into_iter()
            .filter(|(id, _, recorded)| !recorded || moved.contains(id))
            .map(|(id, due_at, _)| (id, due_at))
            .collect();
        if !leasing.is_empty() {
            taken.extend(steps.lease(&leasing, now, until).await?);
        }
        if rows.len() < want as usize || taken.len() as i64 >= max {
            break;
        }
    }
    taken.sort_by_key(|t| (t.due_at, t.id));
    Ok(taken)
}
