//! The per-minute counts behind `GET /v1/stats` as the store keeps them
//! (migration `20261203000039_minute_stats`): what a reader asks for, what
//! it gets back, and the column lists both backends write and read alike.
//! What counts is `domain::minute_stats`'s; the store adds its sums.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::recording::AttemptRecord;
use crate::domain::lateness::BUCKETS;
use crate::domain::minute_stats::{sum, Counted, Counts, MinuteSums};
use crate::domain::outcome::Outcome;
use crate::store::StoreError;

/// Whose counts: every endpoint's (both `None`), one endpoint's, an
/// owner's, or one endpoint's if it is that owner's now.
///
/// An owner's counts (migration `20261204000042_owner_stats`) are those of
/// its endpoints recorded while they were its: an endpoint given to another
/// owner leaves its past with the old one, a deleted endpoint's past stays
/// (as in the deployment's). Its ranking of the endpoints failing most
/// (`most_failing`) is of the endpoints it has now, live: it names them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsScope {
    pub endpoint: Option<Uuid>,
    pub owner: Option<String>,
}

/// An endpoint among those failing most in a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailingCount {
    pub endpoint_id: Uuid,
    /// `None` for a pull endpoint (or one whose row is gone).
    pub url: Option<String>,
    pub failed_attempts: i64,
    pub attempts: i64,
}

/// A minute's counts, summed over whatever rows the scope covers.
pub type MinuteRow = (DateTime<Utc>, Counts);

/// How many rows of `minute_totals` a minute is spread over.
pub(crate) const TOTAL_SHARDS: i16 = 16;

/// How many rows of `owner_minute_stats` an owner's minute is spread over:
/// fewer than the totals', as an owner's minute has fewer batches and its
/// overview reads them all.
pub(crate) const OWNER_SHARDS: i16 = 4;

/// What the recorded `records` add, counting only those whose
/// notification `moved` (`domain::minute_stats`).
pub(crate) fn sums_of(records: &[AttemptRecord], moved: &[Uuid]) -> MinuteSums {
    let moved: HashSet<&Uuid> = moved.iter().collect();
    sum(records
        .iter()
        .filter(|r| moved.contains(&r.notification_id))
        .map(|r| {
            Counted::attempt(
                r.endpoint_id,
                r.started_at,
                r.outcome == Outcome::Succeeded,
                r.due_at,
                r.next.status,
            )
        }))
}

/// The lateness bucket columns, `late_0` … `late_45`.
pub(crate) fn late_columns() -> Vec<String> {
    (0..BUCKETS).map(|i| format!("late_{i}")).collect()
}

/// The count columns in the order they are written and read: the four
/// counts, the largest lateness, the buckets.
pub(crate) fn count_columns() -> Vec<String> {
    let mut columns: Vec<String> = ["attempts", "failed_attempts", "delivered", "failed"]
        .map(String::from)
        .to_vec();
    columns.push("lateness_max_ms".into());
    columns.extend(late_columns());
    columns
}

/// The select list summing `count_columns` over a group (the largest
/// lateness is the largest).
pub(crate) fn summed_columns() -> String {
    count_columns()
        .iter()
        .map(|c| match c.as_str() {
            "lateness_max_ms" => format!("max({c})"),
            _ => format!("sum({c})"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An upsert's `SET` list adding `excluded` to the row `s`; `greatest` is
/// the dialect's two-argument maximum (`GREATEST`, SQLite's `max`).
pub(crate) fn adding_columns(greatest: &str) -> String {
    count_columns()
        .iter()
        .map(|c| match c.as_str() {
            "lateness_max_ms" => format!("{c} = {greatest}(s.{c}, excluded.{c})"),
            _ => format!("{c} = s.{c} + excluded.{c}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `counts` in `count_columns` order.
pub(crate) fn values(counts: &Counts) -> Vec<i64> {
    let mut values = vec![
        counts.attempts,
        counts.failed_attempts,
        counts.delivered,
        counts.failed,
        counts.lateness_max_ms,
    ];
    values.extend(counts.lateness);
    values
}

/// The counts read back in `count_columns` order (a sum over no row, NULL,
/// reads as 0).
pub(crate) fn counts_from(values: &[Option<i64>]) -> Counts {
    let at = |i: usize| values.get(i).copied().flatten().unwrap_or(0);
    let mut counts = Counts {
        attempts: at(0),
        failed_attempts: at(1),
        delivered: at(2),
        failed: at(3),
        lateness_max_ms: at(4),
        ..Counts::default()
    };
    for (i, bucket) in counts.lateness.iter_mut().enumerate() {
        *bucket = at(5 + i);
    }
    counts
}

/// The per-minute counts (`store::stats`): what the overview reads, the
/// pending sample housekeeping takes once a minute, and their retention.
/// They are written with the attempts they count (`record_attempts`) and
/// the failures they count (`BreakerStore::fail_held`).
#[async_trait::async_trait]
pub trait StatsStore: Send + Sync + 'static {
    /// `scope`'s counts per minute from `since` on, each minute once.
    async fn minute_counts(
        &self,
        scope: &StatsScope,
        since: DateTime<Utc>,
    ) -> Result<Vec<MinuteRow>, StoreError>;
    /// The pending samples from `since` on: (minute, pending).
    async fn pending_samples(
        &self,
        since: DateTime<Utc>,
    ) -> Result<Vec<(DateTime<Utc>, i64)>, StoreError>;
    /// Up to `limit` of `scope`'s endpoints with the most failed attempts
    /// from `since` on (none without a failed attempt), most first.
    async fn most_failing(
        &self,
        scope: &StatsScope,
        since: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailingCount>, StoreError>;
    /// Counts the pending notifications as `minute`'s sample, unless a
    /// process already sampled that minute.
    async fn sample_pending(&self, minute: DateTime<Utc>) -> Result<(), StoreError>;
    /// Deletes up to `limit` rows of counts and samples of minutes before
    /// `before`; how many.
    async fn purge_minutes(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError>;
}

pub type SharedStats = Arc<dyn StatsStore>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_written_and_read_in_the_same_column_order() {
        let mut counts = Counts {
            attempts: 1,
            failed_attempts: 2,
            delivered: 3,
            failed: 4,
            lateness_max_ms: 5,
            ..Counts::default()
        };
        counts.lateness[45] = 6;
        let read: Vec<Option<i64>> = values(&counts).into_iter().map(Some).collect();
        assert_eq!(read.len(), count_columns().len());
        assert_eq!(counts_from(&read), counts);
        assert!(summed_columns().starts_with("sum(attempts), sum(failed_attempts)"));
        assert!(adding_columns("GREATEST")
            .contains("lateness_max_ms = GREATEST(s.lateness_max_ms, excluded.lateness_max_ms)"));
    }
}
