//! Consumer tokens known in memory, so that a bearer token is checked
//! before anything reaches a store (docs/design.md §14): a flood of made-up
//! `hkc_…` tokens costs a SHA-256 each, and no query.
//!
//! Every process keeps the digest of each working token with its endpoint.
//! It reads them all at start, then about once a second only what changed
//! since its last read (a token issued, an endpoint changed or deleted),
//! so a rotation or a revocation made through one process works in every
//! other within a second or two; the process that makes the change applies
//! it at once. A full read every 10 to 15 minutes (chosen anew each time,
//! so processes started together do not read together) heals whatever an
//! incremental read could miss: a change whose transaction took longer
//! than the overlap to commit. With 100,000 pull endpoints a full read is
//! 100,000 rows per process; the incremental reads carry every change
//! meanwhile.
//!
//! Bounded by the pull endpoints: at most one entry per pull endpoint that
//! has a token (an endpoint has one token; a new one replaces it), about
//! 150 bytes each (100,000 pull endpoints: about 15 MB).

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{watch, Mutex};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::domain::pull::consumer_token_works;
use crate::service::Service;
use crate::store::consumer_tokens::ConsumerTokenRows;
use crate::store::seams::PullStore;
use crate::store::StoreError;
use crate::telemetry::failures::{warn_once_per_run, FailureRun};

/// How often each process reads what changed.
const REFRESH: Duration = Duration::from_secs(1);
/// Each read starts this long before the last one: a change whose
/// transaction began before the last read but committed after it is read
/// the next time (the store's timestamps are transaction start times).
const OVERLAP: chrono::Duration = chrono::Duration::seconds(10);
/// A full read after between this many reads (10 minutes at one a second)
/// and half again as many.
const FULL_EVERY: u64 = 600;
/// How long one read may take before it is given up.
const READ_LIMIT: Duration = Duration::from_secs(5);
/// How long a request that comes before the first read waits for it.
const FIRST_READ_WAIT: Duration = Duration::from_secs(2);

/// The consumer tokens cannot be told yet: the first read has not
/// succeeded (the store is unreachable since start).
#[derive(Debug, thiserror::Error)]
#[error("consumer tokens are not loaded yet")]
pub struct NotLoaded;

/// The working tokens, both ways.
#[derive(Default)]
struct Known {
    by_digest: HashMap<[u8; 32], Uuid>,
    by_endpoint: HashMap<Uuid, [u8; 32]>,
}

impl Known {
    /// The endpoint's token is `digest` now (`None`: it has none that works).
    fn set(&mut self, endpoint: Uuid, digest: Option<[u8; 32]>) {
        if let Some(old) = self.by_endpoint.remove(&endpoint) {
            self.by_digest.remove(&old);
        }
        if let Some(digest) = digest {
            self.by_endpoint.insert(endpoint, digest);
            self.by_digest.insert(digest, endpoint);
        }
    }

    fn apply(&mut self, read: &ConsumerTokenRows) {
        for row in &read.rows {
            let works = consumer_token_works(row.deleted, row.delivery);
            self.set(row.endpoint_id, row.digest.filter(|_| works));
        }
    }
}

/// This process's consumer tokens.
pub struct ConsumerTokens {
    known: RwLock<Known>,
    /// Where the next incremental read starts, by the store's clock; `None`
    /// until a full read succeeds. Held across each read and each change
    /// this process makes, so a read that began before a change cannot
    /// undo it when it lands.
    cursor: Mutex<Option<DateTime<Utc>>>,
    loaded: watch::Sender<bool>,
}

impl Default for ConsumerTokens {
    fn default() -> Self {
        Self {
            known: Default::default(),
            cursor: Mutex::new(None),
            loaded: watch::Sender::new(false),
        }
    }
}

impl ConsumerTokens {
    fn find(&self, digest: &[u8; 32]) -> Option<Uuid> {
        self.known
            .read()
            .expect("consumer tokens lock")
            .by_digest
            .get(digest)
            .copied()
    }

    /// The endpoint whose working token has this digest. Only before the
    /// first read does it wait (briefly) for the store.
    pub async fn endpoint(&self, digest: &[u8; 32]) -> Result<Option<Uuid>, NotLoaded> {
        if let Some(endpoint) = self.find(digest) {
            return Ok(Some(endpoint));
        }
        if !*self.loaded.borrow() {
            let mut loaded = self.loaded.subscribe();
            let _ = tokio::time::timeout(FIRST_READ_WAIT, loaded.wait_for(|l| *l)).await;
            if !*self.loaded.borrow() {
                return Err(NotLoaded);
            }
            return Ok(self.find(digest));
        }
        Ok(None)
    }

    /// Reads what changed since the last read (all of it with `full`, or
    /// before a full read succeeded) and applies it.
    pub async fn refresh(&self, store: &dyn PullStore, full: bool) -> Result<(), StoreError> {
        let mut cursor = self.cursor.lock().await;
        let since = cursor.filter(|_| !full).map(|at| at - OVERLAP);
        let read = store.consumer_tokens(since).await?;
        {
            let mut known = self.known.write().expect("consumer tokens lock");
            if since.is_none() {
                *known = Known::default();
            }
            known.apply(&read);
        }
        *cursor = Some(read.read_at);
        self.loaded.send_replace(true);
        Ok(())
    }

    /// This process issued `digest` for `endpoint` (stored already): it
    /// works here at once, and the one before does not.
    pub async fn issued(&self, endpoint: Uuid, digest: [u8; 32]) {
        let _cursor = self.cursor.lock().await;
        self.known
            .write()
            .expect("consumer tokens lock")
            .set(endpoint, Some(digest));
    }
}

impl Service {
    /// The endpoint a consumer token stands for, if it works: from memory.
    pub async fn consumer_endpoint(&self, token: &str) -> Result<Option<Uuid>, NotLoaded> {
        self.tokens.endpoint(&crate::config::digest(token)).await
    }

    /// An endpoint changed through this process (deleted, switched): its
    /// token's fate is read now rather than at the next refresh. A failure
    /// leaves it to that refresh.
    pub(crate) async fn reread_consumer_tokens(&self) {
        if let Err(error) = self.tokens.refresh(&*self.pull, false).await {
            tracing::warn!(%error, "could not read consumer tokens; retrying within a second");
        }
    }

    /// Keeps this process's consumer tokens current until `shutdown`.
    pub(super) async fn keep_consumer_tokens(self, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(REFRESH);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut reads: u64 = 0;
        // The first read is a full one.
        let mut next_full: u64 = 0;
        let mut failing = FailureRun::default();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let full = reads >= next_full;
            // A read that hangs (a stalled database) gives up, so that it
            // does not hold back this process's own changes meanwhile.
            let read = tokio::time::timeout(READ_LIMIT, self.tokens.refresh(&*self.pull, full));
            let refreshed = tokio::select! {
                _ = shutdown.cancelled() => return,
                refreshed = read => match refreshed {
                    Ok(refreshed) => refreshed.map_err(|error| error.to_string()),
                    Err(_) => Err(format!("no answer within {READ_LIMIT:?}")),
                },
            };
            match refreshed {
                Ok(()) => {
                    reads += 1;
                    if full {
                        next_full = reads + full_read_after(rand::random());
                    }
                    if failing.succeeded() {
                        tracing::info!("consumer tokens read again");
                    }
                }
                // The tokens known keep working meanwhile.
                Err(error) => {
                    warn_once_per_run!(failing, %error, "cannot read consumer tokens; the ones known keep working, retrying every second");
                }
            }
        }
    }
}

/// How many reads after a full one the next full one comes, from a random
/// `draw`: `FULL_EVERY` to 1.5 × `FULL_EVERY` (10 to 15 minutes).
fn full_read_after(draw: u64) -> u64 {
    FULL_EVERY + draw % (FULL_EVERY / 2 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::pull::Delivery;
    use crate::store::consumer_tokens::ConsumerTokenRow;

    fn row(
        endpoint: Uuid,
        digest: Option<u8>,
        deleted: bool,
        delivery: Delivery,
    ) -> ConsumerTokenRow {
        ConsumerTokenRow {
            endpoint_id: endpoint,
            digest: digest.map(|d| [d; 32]),
            deleted,
            delivery,
        }
    }

    fn read(rows: Vec<ConsumerTokenRow>) -> ConsumerTokenRows {
        ConsumerTokenRows {
            read_at: Utc::now(),
            rows,
        }
    }

    #[test]
    fn a_full_read_comes_every_10_to_15_minutes() {
        assert_eq!(REFRESH, Duration::from_secs(1));
        for draw in [0, 1, 299, 300, 301, u64::MAX, rand::random()] {
            let after = full_read_after(draw);
            assert!((600..=900).contains(&after), "{after} reads");
        }
        assert_eq!(full_read_after(0), 600);
        assert_eq!(full_read_after(300), 900);
    }

    #[test]
    fn a_change_read_replaces_the_endpoints_token_and_revocations_remove_it() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let mut known = Known::default();
        known.apply(&read(vec![
            row(a, Some(1), false, Delivery::Pull),
            row(b, Some(2), false, Delivery::Pull),
        ]));
        assert_eq!(known.by_digest.get(&[1; 32]), Some(&a));
        // Rotated: the old digest is gone with it.
        known.apply(&read(vec![row(a, Some(3), false, Delivery::Pull)]));
        assert_eq!(known.by_digest.get(&[1; 32]), None);
        assert_eq!(known.by_digest.get(&[3; 32]), Some(&a));
        // Switched to push, deleted, revoked: nothing works for them.
        known.apply(&read(vec![
            row(a, Some(3), false, Delivery::Push),
            row(b, Some(2), true, Delivery::Pull),
        ]));
        assert!(known.by_digest.is_empty() && known.by_endpoint.is_empty());
        known.apply(&read(vec![row(a, None, false, Delivery::Pull)]));
        assert!(known.by_digest.is_empty());
    }
}
