//! Where the dispatcher's work comes from: a claim from the due index
//! (then a load of the claimed rows), or the rows this process's
//! committer handed over (`handoff`), which need neither.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::plans::Plans;
use super::recorder::Finished;
use super::{delivery, Dispatcher, Shared, STORE_BACKOFF};
use crate::store::delivery::DueNotification;

impl Dispatcher {
    /// One claim from the index: what is due (or due within
    /// `claim_ahead_ms`) is loaded and started. Says whether to claim again
    /// at once, or how long nothing is due.
    pub(super) async fn claim(
        &self,
        plans: &mut Plans,
        shared: &Arc<Shared>,
        outcomes: &mpsc::Sender<Finished>,
        tasks: &mut JoinSet<()>,
        shutdown: &CancellationToken,
    ) -> Turn {
        let settings = &self.settings;
        let free = shared.permits.available_permits();
        let now = shared.clock.now();
        let lease_until = crate::domain::lease::lease_end(now, settings.lease());
        // Claimed `claim_ahead_ms` before due, a delivery waits in memory
        // and goes out when due, not a claim and a load later. The
        // dispatcher wakes half that before the next due time, so one
        // claim takes what falls due in the next few milliseconds.
        let ahead = settings.dispatcher.claim_ahead_ms;
        let due_by = now + chrono::Duration::milliseconds(ahead as i64);
        let claim = match self
            .due
            .claim(
                now,
                due_by,
                free.min(settings.dispatcher.batch_size),
                lease_until,
            )
            .await
        {
            Ok(claim) => {
                if shared.claims_failing.swap(false, Ordering::Relaxed) {
                    tracing::info!("claims from the due index again");
                }
                claim
            }
            Err(error) => {
                if shared.claims_failing.swap(true, Ordering::Relaxed) {
                    tracing::debug!(%error, "cannot claim from the due index");
                } else {
                    tracing::warn!(%error, "cannot claim from the due index; deliveries pause until it answers");
                }
                pause(shutdown, STORE_BACKOFF).await;
                return Turn::Again;
            }
        };
        if claim.requeued > 0 {
            tracing::info!(
                count = claim.requeued,
                "expired leases returned to the due index"
            );
        }
        if claim.recovered > 0 {
            tracing::info!(
                count = claim.recovered,
                "leases taken by a command whose answer was lost returned to the due index"
            );
        }
        if claim.ids.is_empty() {
            let idle = Duration::from_millis(settings.dispatcher.max_idle_ms);
            let wait = claim
                .next_event_ms(ahead as i64 / 2)
                .map(|ms| {
                    Duration::from_millis((ms - now.timestamp_millis()).max(0) as u64).min(idle)
                })
                .unwrap_or(idle);
            return Turn::IdleFor(wait);
        }
        let (ids, admitted) = self.screen(claim.ids, plans, shared, (now, due_by)).await;
        let current = |id, version| plans.current(id, version, now);
        let claimed = match self.store.load_claimed(&ids, &current).await {
            Ok(claimed) => claimed,
            Err(error) => {
                tracing::warn!(%error, "cannot load claimed notifications; giving them back");
                let back: Vec<_> = ids.iter().map(|id| (*id, now)).collect();
                if let Err(error) = self.due.reschedule(&back).await {
                    tracing::warn!(%error, "cannot give claims back; their leases will expire");
                }
                pause(shutdown, STORE_BACKOFF).await;
                return Turn::Again;
            }
        };
        let loaded = plans.for_claim(claimed, admitted, now);
        delivery::claim_spans(
            shared.sender.spans(),
            &loaded.notifications,
            "index",
            (now, shared.clock.now()),
        );
        self.dispatch(&ids, loaded, (now, due_by), shared, outcomes, tasks)
            .await;
        Turn::Again
    }

    /// Starts the deliveries this process's committer handed over (already
    /// leased in the index), reading only the endpoints whose prepared copy
    /// is not of the version their insert saw. Says whether any went back
    /// to the index instead.
    pub(super) async fn deliver_handed(
        &self,
        handed: Vec<DueNotification>,
        plans: &mut Plans,
        shared: &Arc<Shared>,
        outcomes: &mpsc::Sender<Finished>,
        tasks: &mut JoinSet<()>,
    ) -> bool {
        let now = shared.clock.now();
        let due_by =
            now + chrono::Duration::milliseconds(self.settings.dispatcher.claim_ahead_ms as i64);
        let ids: Vec<Uuid> = handed.iter().map(|row| row.id).collect();
        metrics::counter!("hookd_notifications_handed_off_total").increment(ids.len() as u64);
        let current = |id, version| plans.current(id, version, now);
        let claimed = match self.store.with_endpoints(handed, &current).await {
            Ok(claimed) => claimed,
            Err(error) => {
                tracing::warn!(%error, "cannot read the endpoints of handed-over notifications; giving them back");
                let back: Vec<_> = ids.iter().map(|id| (*id, now)).collect();
                if let Err(error) = self.due.reschedule(&back).await {
                    tracing::warn!(%error, "cannot give them back; their leases will expire");
                }
                return true;
            }
        };
        let loaded = plans.for_claim(claimed, HashMap::new(), now);
        delivery::claim_spans(
            shared.sender.spans(),
            &loaded.notifications,
            "handoff",
            (now, shared.clock.now()),
        );
        self.dispatch(&ids, loaded, (now, due_by), shared, outcomes, tasks)
            .await
    }
}

/// What the dispatcher does after a claim.
pub(super) enum Turn {
    /// Claim again now: the claim found work (or failed and paused).
    Again,
    /// Nothing is due for this long (or until woken).
    IdleFor(Duration),
}

async fn pause(shutdown: &CancellationToken, duration: Duration) {
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = tokio::time::sleep(duration) => {}
    }
}
