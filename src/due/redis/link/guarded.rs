//! What the index's guard lets through a `Link` (`layout::Guard`): a
//! command reaches Redis once the index's recorded layout matches this
//! process's, and while the beats (`domain::index_owner`) say this index
//! owns the database; a lease extension needs only the layout.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{Conn, Link};
use crate::due::redis::layout;
use crate::due::DueError;

impl Link {
    /// A connection to the current master (or the cluster), once the
    /// index's recorded layout is known to match this process's.
    pub(crate) async fn conn(&self) -> Result<Conn, DueError> {
        let conn = self.lease_conn().await?;
        if let Some(refused) = self.layout.refusal() {
            return Err(refused);
        }
        Ok(conn)
    }

    /// `conn`, for a command that only prolongs leases already held
    /// (`RedisIndex::extend`): refused for another layout, not while the
    /// beats pause the index. A process cut off from the database keeps
    /// the leases of what it sent and could not record, so that its own
    /// index's other processes do not send those again.
    pub(crate) async fn lease_conn(&self) -> Result<Conn, DueError> {
        let conn = self.connection().await?;
        if !self.laid_out.initialized() {
            self.laid_out
                .get_or_try_init(|| async {
                    let mut checking = conn.clone();
                    let (prefix, shards) = (&self.settings.prefix, self.settings.shard_count());
                    layout::check(&mut checking, prefix, shards, self.timeout).await
                })
                .await?;
        }
        if let Some(refused) = self.layout.layout_refusal() {
            return Err(refused);
        }
        Ok(conn)
    }

    /// The index's name (`layout::identity`), read even while commands
    /// are refused: the beat that resumes them needs it.
    pub(crate) async fn identity(&self) -> Result<String, DueError> {
        let mut conn = self.connection().await?;
        layout::identity(&mut conn, &self.settings.prefix, self.timeout).await
    }

    /// Why every command fails now, if it does (`layout::Guard`).
    pub(crate) fn refusal(&self) -> Option<DueError> {
        self.layout.refusal()
    }

    /// Beats start (`domain::index_owner`): every command is refused until
    /// one reaches the database.
    pub(crate) fn beats_start(&self) {
        self.layout.beats_start();
    }

    /// Pauses every command while another index owns the database
    /// (`Some`), resumes them (`None`). An index that serves again after
    /// a pause may lack what was written meanwhile: it counts a new epoch,
    /// as after a failover, so housekeeping re-adds recent rows and walks
    /// every overdue one.
    pub(crate) fn set_owner(
        &self,
        another: Option<crate::domain::index_owner::AnotherIndex>,
        at: Instant,
    ) {
        if self.layout.set_owner(another, at) {
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Whether the beats refuse every command now (`layout::Guard`).
    pub(crate) fn paused(&self) -> bool {
        self.layout.paused()
    }

    /// A connection without the layout check, which records the layout
    /// when none is: for `hookd config check`, which must change nothing.
    pub(crate) async fn unchecked(&self) -> Result<Conn, DueError> {
        self.connection().await
    }

    /// Records this process's layout again unless one is recorded, and
    /// compares, at most once per `CHECK_LAYOUT_EVERY` (asked by every
    /// housekeeping tick, `RedisIndex::index_state`), once the first
    /// command has checked it. A Redis that restarted empty lost the
    /// record: the first process to ask records its count again, and one
    /// that counts otherwise finds the mismatch and fails every command
    /// with it (its deliveries pause, `/readyz` says why) until the record
    /// is its own again, rather than run a second layout beside the first.
    pub(crate) async fn check_layout(&self) {
        if !self.laid_out.initialized() || !self.layout.due() {
            return;
        }
        let Ok(mut conn) = self.connection().await else {
            return;
        };
        let (prefix, shards) = (&self.settings.prefix, self.settings.shard_count());
        self.layout
            .check(&mut conn, prefix, shards, self.timeout)
            .await;
    }
}
