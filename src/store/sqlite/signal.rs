//! The pull signal in embedded mode: one process owns the file
//! (`lock.rs`), so a signal never has to leave it. A broadcast channel
//! held by the store stands in for PostgreSQL's LISTEN/NOTIFY.

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::SqliteStore;
use crate::store::StoreError;

/// Signals a listener may fall behind by before it is told it missed some
/// (`woken(None)`), and looks again at every endpoint.
const BACKLOG: usize = 1024;

/// The sending end every listener subscribes to.
#[derive(Debug, Clone)]
pub(super) struct PullSignals(broadcast::Sender<Uuid>);

impl PullSignals {
    pub(super) fn new() -> Self {
        Self(broadcast::channel(BACKLOG).0)
    }
}

impl SqliteStore {
    /// Tells every listener of this process that these endpoints have
    /// something new for their consumers.
    pub async fn signal_pull(&self, endpoints: &[Uuid]) -> Result<(), StoreError> {
        for endpoint in endpoints {
            // No listener yet: nobody waits to be told.
            let _ = self.pull_signals.0.send(*endpoint);
        }
        Ok(())
    }

    /// Calls `woken` with each endpoint signalled, and with `None` when
    /// signals may have been missed (at the start, and when it fell behind),
    /// until `shutdown`.
    pub async fn listen_pull(
        &self,
        woken: &(dyn Fn(Option<Uuid>) + Send + Sync),
        shutdown: &CancellationToken,
    ) {
        let mut signals = self.pull_signals.0.subscribe();
        // Signals sent before it subscribed are gone, as for a listener
        // that just connected in PostgreSQL.
        woken(None);
        loop {
            let next = tokio::select! {
                _ = shutdown.cancelled() => return,
                next = signals.recv() => next,
            };
            match next {
                Ok(endpoint) => woken(Some(endpoint)),
                Err(RecvError::Lagged(_)) => woken(None),
                // The store holds the sender while `self` lives.
                Err(RecvError::Closed) => {
                    shutdown.cancelled().await;
                    return;
                }
            }
        }
    }
}
