//! The beats that keep one due index per database (`domain::index_owner`),
//! in every server-mode process whatever its role (`startup` runs them):
//! once a second the index's name is written to the store (read only, by
//! a process that does not claim), and the index is paused while another
//! owns the database, or while no beat has got through for `BLIND_AFTER`.
//! The first beat comes before the process serves, and until one gets
//! through the index refuses every command, so a process started on the
//! wrong Redis or prefix never claims.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::domain::index_owner::{another_owner, Beat};
use crate::due::{Recovery, SharedIndex};
use crate::store::seams::{HousekeepingStore, SharedHousekeeping};
use crate::telemetry::failures::{warn_once_per_run, FailureRun};

const EVERY: Duration = Duration::from_secs(1);

/// What a process keeps between beats.
#[derive(Default)]
struct Beats {
    /// This process's row (`Beat::process`), deleted when it stops.
    process: uuid::Uuid,
    /// Whether it claims from its index (`Beat::claims`).
    claims: bool,
    /// The name its index had at the last beat that got through: said to
    /// be gone when Redis names the index anew, and beaten with while
    /// Redis cannot be read (the index's shards but the one that holds
    /// the name may still serve).
    last: Option<String>,
    /// The last beat failed: said once, not every second.
    failing: FailureRun,
}

impl Beats {
    /// One beat, within `WITHIN`; then `hookd_index_paused` says whether
    /// the index refuses its commands, whatever the beat found.
    async fn beat(&mut self, store: &dyn HousekeepingStore, index: &dyn Recovery) {
        let tried = match tokio::time::timeout(WITHIN, self.try_beat(store, index)).await {
            Ok(tried) => tried,
            Err(_) => Err(format!("no answer within {WITHIN:?}").into()),
        };
        match tried {
            Ok(()) => {
                if self.failing.succeeded() {
                    tracing::info!("this process tells the database which due index it uses again")
                }
            }
            Err(error) => {
                warn_once_per_run!(self.failing, %error, "cannot tell the database which due index this process uses; trying again every second (deliveries pause after 15 s)")
            }
        }
        metrics::gauge!("hookd_index_paused").set(if index.paused() { 1.0 } else { 0.0 });
    }

    async fn try_beat(
        &mut self,
        store: &dyn HousekeepingStore,
        index: &dyn Recovery,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let identity = match (index.identity().await, &self.last) {
            (Ok(identity), _) => identity,
            (Err(_), Some(last)) => last.clone(),
            (Err(error), None) => return Err(error.into()),
        };
        // Taken with the time written: a beat that waited for the store
        // counts from when it was written as seen, not from its commit.
        let at = std::time::Instant::now();
        let beat = Beat {
            gone: self.last.clone().filter(|last| *last != identity),
            identity,
            process: self.process,
            now: store.clock().now(),
            claims: self.claims,
        };
        let live = store.beat_index(&beat).await?;
        if beat.gone.is_some() {
            tracing::warn!(
                "the due index in Redis was named anew (it lost its keys): its old name is retired"
            );
        }
        index.set_owner(another_owner(&beat.identity, &live), at);
        self.last = Some(beat.identity);
        Ok(())
    }
}

/// How long a beat may take: one that waits longer (a lock, a database
/// that stalls) is given up, and the next tries again.
const WITHIN: Duration = Duration::from_secs(5);

/// Beats once before the process serves: its first creates find the
/// index open to them, and its dispatcher's first claim knows whether it
/// may. Then beats every second until `end` (which `startup` cancels once
/// the dispatcher has stopped), in a task; a beat under way finishes
/// first. Nothing for an index in the process (embedded), which no other
/// process can share.
pub(crate) async fn start(
    store: SharedHousekeeping,
    due: SharedIndex,
    claims: bool,
    end: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let mut beats = Beats {
        process: uuid::Uuid::new_v4(),
        claims,
        ..Beats::default()
    };
    if let Some(index) = due.recovery() {
        index.beats_start();
        beats.beat(&*store, index).await;
    }
    tokio::spawn(async move {
        let Some(index) = due.recovery() else {
            return;
        };
        loop {
            tokio::select! {
                _ = end.cancelled() => break,
                _ = tokio::time::sleep(EVERY) => {}
            }
            beats.beat(&*store, index).await;
        }
        // Stopped: this process no longer keeps its index the owner. A
        // process killed leaves its row to go unseen for `LIVE_FOR`.
        let now = store.clock().now();
        if let Err(error) = store.end_index_beats(beats.process, now).await {
            tracing::debug!(%error, "this process's due index row was not deleted; it goes unseen in 30 s");
        }
    })
}
