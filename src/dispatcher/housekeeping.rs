//! Keeping the due index whole and the history bounded, in the background:
//! - rows marked `needs_index` (created while Redis was down, or operator
//!   events) are indexed;
//!
//! for an index that can lose what it holds while hookd runs (Redis, whose
//! `Recovery` this uses):
//! - when the index marker is missing (Redis restarted empty, flushed, failed
//!   over), one process rebuilds `due` from PostgreSQL, page by page;
//! - when `due` alone is lost (its sentinel member is gone while the marker
//!   stays: evicted, deleted, not replicated), the same rebuild runs;
//! - a sweep every two seconds re-indexes rows overdue by a few seconds that
//!   are in neither Redis set (a crash between commit and ZADD, writes a
//!   promoted replica never got): every pass checks what fell overdue in the
//!   last minute, then walks on through everything overdue a page at a time
//!   (at once after a master change, and while it finds some);
//!
//! and whatever the index:
//! - retention (`retention`) deletes final notifications older than
//!   `retention.days`, then the ordering keys whose line emptied before then,
//!   and the overview's per-minute counts after two days;
//! - the pending backlog is sampled once a minute for the overview, and
//!   how long its oldest due rows waited for the gauges (`due_age`);
//! - the operator endpoint is made to match `operator.url`, and endpoints
//!   failing for `dispatcher.disable_failing_endpoints_after_hours` are
//!   disabled.

use std::time::{Duration, Instant};

use chrono::Utc;
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::domain::heal::Healing;
use crate::domain::health::DISABLED_FAILING;
use crate::domain::operator_event::{DisabledEndpoint, OperatorEvent};
use crate::due::{Recovery, SharedIndex};
use crate::store::health::FailingEndpoint;
use crate::store::housekeeping::PendingCursor;
use crate::store::seams::{HousekeepingStore, OperatorTarget, SharedHousekeeping};
use crate::telemetry::failures::{warn_once_per_run, FailureRun};

use super::retention;

const TICK: Duration = Duration::from_secs(1);
const SWEEP_INTERVAL: Duration = Duration::from_secs(2);
/// A row this overdue and in neither set was lost: a dispatcher claims due
/// rows within milliseconds (lateness p99 in BENCHMARKS.md), and rows merely
/// waiting in a backlog are in `due`, which the sweep checks before adding.
const SWEEP_OVERDUE: chrono::Duration = chrono::Duration::seconds(3);
/// Every sweep checks the rows that fell overdue this recently, whatever is
/// overdue before them: a row lost at its commit (or its retry's) is found
/// within seconds of its due time, even behind a million rows whose
/// deferrals left them overdue in PostgreSQL (a disabled endpoint's
/// backlog, re-timed in Redis alone), which the walk of everything
/// overdue would take minutes to page through. Each row is checked there
/// once: the next sweep starts after the last row checked (`FreshMark`).
const SWEEP_FRESH: chrono::Duration = chrono::Duration::seconds(60);
/// At most this many pages of those per sweep (10,000 rows). More than
/// that are a backlog that fell due in the last minute; the next sweep
/// goes on from the last row this one checked.
const SWEEP_FRESH_PAGES: usize = 2;
/// A walk of every overdue row (after a master change) takes at most this
/// many pages per tick (100,000 rows), and goes on at the next tick, every
/// second, so the rest of housekeeping (a rebuild, rows owed an index, the
/// next master change) is never held up for long.
const SWEEP_WHOLE_PAGES: usize = 20;
const RETENTION_INTERVAL: Duration = Duration::from_secs(600);
const PAGE: i64 = 5000;
/// The waiting notifications checked each tick for one stranded or
/// orphaned (`release_stranded`): a page of a walk that goes round them
/// all, so that a tick costs the same beside 20,000 waiting or 2,000,000.
/// All of them were read every second before: 50 ms of PostgreSQL's time
/// a tick beside 20,000 (the ordering bench, BENCHMARKS.md), and it grew
/// with the backlog. hookd's own paths leave neither (every end releases
/// in its own transaction); what does (an error, a row written by hand, a
/// holder retention removed) is found within (waiting ÷ this) seconds.
const WAITING_PAGE: i64 = 1000;

pub async fn run(
    store: SharedHousekeeping,
    due: SharedIndex,
    settings: std::sync::Arc<Settings>,
    operator_synced: bool,
    shutdown: CancellationToken,
) {
    let mut sweep_cursor: Option<PendingCursor> = None;
    let mut fresh_mark: FreshMark = None;
    // After a master change: walk everything overdue at once.
    let mut sweep_whole = false;
    let mut last_sweep = Instant::now();
    let mut last_retention: Option<Instant> = None;
    // Where the ordering keys' walk goes on at the next retention pass.
    let mut key_cursor = None;
    // Where the walk over waiting notifications goes on at the next tick.
    let mut waiting_cursor = None;
    let mut last_minutes_purge: Option<Instant> = None;
    let mut last_partitions: Option<Instant> = None;
    let (mut last_skew, mut skew_past): (Option<Instant>, bool) = (None, false);
    let mut last_due_age: Option<Instant> = None;
    let mut sampled: Option<chrono::DateTime<Utc>> = None;
    // The dispatcher set it up before its first claim (`sync_operator`);
    // retried here until that succeeds.
    let mut operator_synced = operator_synced;
    // The disabling check and the index's state (unread while Redis is
    // down) are tried every tick: one warning per run of failures.
    let mut disable_check = FailureRun::default();
    let mut restore = FailureRun::default();
    // An in-process index needs none of it: it is filled at start and
    // loses nothing while the process lives.
    let recovery = due.recovery();
    let mut healing = Healing::new(recovery.map_or(0, |recovery| recovery.epoch()));
    loop {
        if !operator_synced {
            operator_synced = sync_operator(&*store, &settings).await;
        }
        let hours = settings.dispatcher.disable_failing_endpoints_after_hours;
        if hours > 0 {
            let before = store.clock().now() - chrono::Duration::hours(i64::from(hours));
            match disable_failing(&*store, before, settings.operator.enabled()).await {
                Ok(ids) => {
                    if disable_check.succeeded() {
                        tracing::info!("checks for failing endpoints again");
                    }
                    for id in ids {
                        metrics::counter!("hookd_endpoints_disabled_total").increment(1);
                        tracing::warn!(endpoint_id = %id, hours, "disabled an endpoint whose every attempt failed");
                    }
                }
                Err(error) => {
                    warn_once_per_run!(disable_check, %error, "cannot check for failing endpoints; trying again every second")
                }
            }
        }
        if let Err(error) = index_marked(&*store, &due, &mut waiting_cursor).await {
            tracing::debug!(%error, "indexing marked rows will be tried again");
        }
        if let Some(recovery) = recovery {
            let restored = super::refill::restore(recovery, &*store, &shutdown).await;
            if restored.is_ok() && restore.succeeded() {
                tracing::info!("the due index's state reads again");
            }
            match restored {
                Ok(Some(restored)) => {
                    for shard in &restored.parts {
                        metrics::counter!("hookd_index_rebuilds_total", "shard" => shard.to_string())
                            .increment(1);
                    }
                    tracing::info!(
                        shards = ?restored.parts,
                        added = restored.added,
                        took_ms = restored.took.as_millis() as u64,
                        "rebuilt the due index from PostgreSQL"
                    )
                }
                Ok(None) => {}
                Err(error) => {
                    warn_once_per_run!(restore, %error, "cannot read the due index's state, or rebuild it; trying again every second")
                }
            }
            // A new master (a failover) may lack the last writes of the old
            // one: re-add what was created lately, and have the sweep walk
            // every overdue row for the rest.
            if healing.observe(recovery.epoch(), recovery.parts().len(), Instant::now()) {
                // The old master's last writes may also have moved older
                // rows (a deferral, a retry): the sweep walks every overdue
                // row now, not a page a pass.
                sweep_cursor = None;
                fresh_mark = None;
                sweep_whole = true;
            }
            let owed = healing.owed(Instant::now());
            if !owed.is_empty() {
                let result = super::heal::heal_recent(&*store, recovery, &owed).await;
                // A part not healed (its master down, or the store) waits
                // longer before its next try.
                for part in &owed {
                    if !result
                        .as_ref()
                        .is_ok_and(|healed| healed.parts.contains(part))
                    {
                        healing.failed(*part, Instant::now());
                    }
                }
                match result {
                    Ok(healed) => {
                        for part in &healed.parts {
                            healing.healed(*part);
                        }
                        tracing::info!(
                            added = healed.added,
                            parts = ?healed.parts,
                            "re-added recent notifications after a Redis master change"
                        );
                        if let Some(error) = healed.error {
                            // A shard whose master is still down: it stays
                            // owed until its replica answers.
                            tracing::warn!(%error, "cannot re-add recent notifications to a shard yet; retrying")
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot re-add recent notifications after a master change; retrying")
                    }
                }
            }
        }
        if last_skew.is_none_or(|t| t.elapsed() >= super::clock_skew::INTERVAL) {
            last_skew = Some(Instant::now());
            skew_past = super::clock_skew::check(&*store, skew_past).await;
        }
        if last_due_age.is_none_or(|t| t.elapsed() >= super::due_age::INTERVAL) {
            last_due_age = Some(Instant::now());
            super::due_age::sample(&*store).await;
        }
        // Sampled here, once a second, not computed per scrape. Unknown
        // while the index cannot be read: NaN, not the last reading, which
        // a dashboard would show as if Redis answered.
        let (due_count, leased) = match due.depth().await {
            Ok((due_count, leased)) => (due_count as f64, leased as f64),
            Err(_) => (f64::NAN, f64::NAN),
        };
        metrics::gauge!("hookd_due_notifications").set(due_count);
        metrics::gauge!("hookd_leased_notifications").set(leased);
        let sweep_now = sweep_whole || last_sweep.elapsed() >= SWEEP_INTERVAL;
        if let Some(recovery) = recovery.filter(|_| sweep_now) {
            last_sweep = Instant::now();
            // A walk of everything (after a master change) goes on at the
            // next tick until its cursor comes round, or after an error,
            // from the page that failed.
            let cursors = (&mut fresh_mark, &mut sweep_cursor);
            match sweep(&*store, recovery, cursors, sweep_whole, &shutdown).await {
                Ok(added) => {
                    if sweep_cursor.is_none() {
                        sweep_whole = false;
                    }
                    if added > 0 {
                        metrics::counter!("hookd_sweep_reindexed_total").increment(added as u64);
                        tracing::warn!(added, "re-indexed overdue notifications missing from Redis")
                    }
                }
                Err(error) => tracing::debug!(%error, "sweep failed; retrying later"),
            }
        }
        // The overview's backlog: the first process to sample a minute
        // keeps its sample.
        let minute = crate::domain::minute_stats::minute_of(store.clock().now());
        if sampled != Some(minute) {
            match store.sample_pending(minute).await {
                Ok(()) => sampled = Some(minute),
                Err(error) => tracing::debug!(%error, "cannot sample the pending backlog yet"),
            }
        }
        if last_minutes_purge.is_none_or(|t| t.elapsed() >= RETENTION_INTERVAL) {
            last_minutes_purge = Some(Instant::now());
            let before = crate::domain::retention::minutes_before(store.clock().now());
            if let Err(error) = retention::purge_minutes(&*store, before, &shutdown).await {
                tracing::warn!(%error, "retention of the per-minute counts failed; retrying later");
            }
        }
        // Server mode's daily partitions: made ahead at start and every
        // ten minutes, and dropped by retention before its row-by-row
        // purge walks what is left.
        if last_partitions.is_none_or(|t| t.elapsed() >= RETENTION_INTERVAL) {
            last_partitions = Some(Instant::now());
            retention::maintain_partitions(&*store, settings.retention.days).await;
        }
        if settings.retention.days > 0
            && last_retention.is_none_or(|t| t.elapsed() >= RETENTION_INTERVAL)
        {
            last_retention = Some(Instant::now());
            let before =
                store.clock().now() - chrono::Duration::days(i64::from(settings.retention.days));
            match retention::purge(&*store, before, &shutdown).await {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(deleted, "retention removed old notifications"),
                Err(error) => tracing::warn!(%error, "retention failed; retrying later"),
            }
            // Once their history is gone (partitions dropped, rows
            // purged), keys go too: a later notification of one starts
            // its sequence again at 1.
            match retention::purge_order_keys(&*store, before, &mut key_cursor, &shutdown).await {
                Ok(0) => {}
                Ok(deleted) => {
                    tracing::info!(
                        deleted,
                        "retention removed ordering keys left without history"
                    )
                }
                Err(error) => {
                    tracing::warn!(%error, "retention of ordering keys failed; retrying later")
                }
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(TICK) => {}
        }
    }
}

/// Makes the operator endpoint match `operator.url` (created, updated or
/// deleted); whether that worked. The dispatcher does it once before its
/// first claim, so that a failure recorded in a process's first moments
/// finds the endpoint its alert goes to (an alert is written only while
/// that endpoint exists).
pub async fn sync_operator(store: &dyn HousekeepingStore, settings: &Settings) -> bool {
    let operator = &settings.operator;
    let target = operator
        .enabled()
        .then(|| OperatorTarget::plain(operator.url.expose(), operator.secret.expose()));
    match store.sync_operator_endpoint(target).await {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(%error, "cannot set up the operator endpoint; retrying");
            false
        }
    }
}

/// Disables the endpoints failing since before `before`, each with its
/// `endpoint.disabled` event when `operator` is set. Returns their ids.
async fn disable_failing(
    store: &dyn HousekeepingStore,
    before: chrono::DateTime<Utc>,
    operator: bool,
) -> Result<Vec<uuid::Uuid>, crate::store::StoreError> {
    let failing = store.failing_endpoints(before).await?;
    if failing.is_empty() {
        return Ok(Vec::new());
    }
    let now = store.clock().now();
    let report = |e: &FailingEndpoint| {
        // The alert's payload is readable with a `read` token: the URL's
        // query values and credential-like path segments (tokens, often)
        // are masked as in every view.
        let url = crate::domain::receiver_url::UrlMask::default().show(&e.url, e.url_secret);
        let disabled = DisabledEndpoint {
            endpoint_id: e.id,
            endpoint_uid: e.uid.as_deref(),
            url: &url,
            failing_since: e.failing_since,
            reason: DISABLED_FAILING,
        };
        OperatorEvent::endpoint_disabled(&disabled, now)
    };
    let events: Vec<OperatorEvent> = if operator {
        failing.iter().map(report).collect()
    } else {
        Vec::new()
    };
    store
        .disable_endpoints(&failing, DISABLED_FAILING, &events)
        .await
}

/// Indexes rows marked when Redis was unreachable at their creation.
async fn index_marked(
    store: &dyn HousekeepingStore,
    due: &SharedIndex,
    waiting_cursor: &mut Option<uuid::Uuid>,
) -> anyhow::Result<()> {
    // Those a race left behind one already final are owed too.
    let (released, next) = store
        .release_stranded(*waiting_cursor, WAITING_PAGE)
        .await?;
    *waiting_cursor = next;
    if released > 0 {
        metrics::counter!("hookd_ordering_stranded_released_total").increment(released);
        tracing::info!(
            count = released,
            "released notifications left behind one already final"
        );
    }
    loop {
        let rows = store.needing_index(1000).await?;
        if rows.is_empty() {
            return Ok(());
        }
        let pending: Vec<_> = rows
            .iter()
            .filter_map(|(id, due_at)| due_at.map(|at| (*id, at)))
            .collect();
        // A row whose indexing merely timed out may be due or leased
        // already, and is not queued twice; one due later than its row says
        // (a retry Redis refused to move) is moved to its time.
        let added = due.add_marked(&pending).await?;
        metrics::counter!("hookd_deferred_indexed_total").increment(added as u64);
        let ids: Vec<_> = rows.iter().map(|(id, _)| *id).collect();
        store.clear_needs_index(&ids).await?;
        tracing::info!(
            count = pending.len(),
            "indexed notifications marked for the due index: created while it could not be reached, released from their key's line, or operator events"
        );
    }
}

/// The last row the fresh window checked, while Redis's master stays the
/// same. A row checked there is in Redis, and stays there until its
/// notification is written again, which moves its due time; so the next
/// sweep reads only the rows after it. What the window then misses, a row
/// committed more than `SWEEP_OVERDUE` after its due time or one lost
/// without a master change, is the walk's.
type FreshMark = Option<PendingCursor>;

/// Re-indexes overdue rows missing from Redis. First the rows that fell
/// overdue in the last `SWEEP_FRESH` and after `fresh` (up to
/// `SWEEP_FRESH_PAGES` pages), then everything overdue before that window,
/// page by page from where the last sweep stopped: one page, or more while
/// pages find missing rows (healing at rebuild speed), or
/// `SWEEP_WHOLE_PAGES` when `whole`.
/// Both cursors move past a page only once it is checked, so a page that
/// fails is read again by the next sweep.
async fn sweep(
    store: &dyn HousekeepingStore,
    due: &dyn Recovery,
    (fresh, cursor): (&mut FreshMark, &mut Option<PendingCursor>),
    whole: bool,
    shutdown: &CancellationToken,
) -> anyhow::Result<usize> {
    let now = store.clock().now();
    let before = now - SWEEP_OVERDUE;
    let mut total = 0;
    let window = (now - SWEEP_FRESH, uuid::Uuid::nil());
    for _ in 0..SWEEP_FRESH_PAGES {
        let from = fresh.filter(|mark| *mark > window).unwrap_or(window);
        let page = store.pending_due_before(Some(from), before, PAGE).await?;
        total += reindex_missing(store, due, &page).await?;
        if let Some((id, at)) = page.last() {
            *fresh = Some((*at, *id));
        }
        if (page.len() as i64) < PAGE || shutdown.is_cancelled() {
            break;
        }
    }
    // The walk leaves the last minute to the fresh window, and reaches a
    // row the window passed over (committed late, or lost after its check)
    // once it is older than the window.
    let walk_before = before.min(window.0);
    for pages in 1.. {
        let page = store.pending_due_before(*cursor, walk_before, PAGE).await?;
        let added = reindex_missing(store, due, &page).await?;
        total += added;
        *cursor = if (page.len() as i64) < PAGE {
            None
        } else {
            page.last().map(|(id, at)| (*at, *id))
        };
        let more = if whole {
            pages < SWEEP_WHOLE_PAGES
        } else {
            added > 0
        };
        if cursor.is_none() || shutdown.is_cancelled() || !more {
            break;
        }
    }
    Ok(total)
}

/// Adds the rows of `page` that are in neither Redis set. A row the page
/// read as pending may have been delivered and its lease ended since: only
/// rows still pending, at the same due time, after Redis was looked at are
/// really missing.
async fn reindex_missing(
    store: &dyn HousekeepingStore,
    due: &dyn Recovery,
    page: &[(uuid::Uuid, chrono::DateTime<Utc>)],
) -> anyhow::Result<usize> {
    let missing = due.missing(page).await?;
    if missing.is_empty() {
        return Ok(0);
    }
    let read: std::collections::HashMap<_, _> = page.iter().copied().collect();
    let still: Vec<_> = store
        .still_pending(&missing)
        .await?
        .into_iter()
        .filter(|(id, at)| read.get(id) == Some(at))
        .collect();
    Ok(due.add_missing(&still).await?)
}
