//! Hand-offs: notifications this process's committer gives its own
//! dispatcher, leased in `inflight` as a claim leases them
//! (`lease::LostClaims`), so that no claim takes them meanwhile.
//!
//! A lease that ends later is kept (`ZADD GT`; before Redis 6.2,
//! `lua/add_leased.lua`). A hand-off sent in time but run late (a
//! connection that stalled while others went on) may find its ids
//! claimed meanwhile by another process from the indexer's marks, under a
//! lease that ends later (taken later, for as long), and must neither
//! move that lease nor give it this call's score, which the next claim
//! here would return as lost while the other delivers. An ended lease not
//! yet requeued (the breaker's probe may choose such a notification,
//! which `leased` calls free) is replaced.

use std::sync::atomic::Ordering;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::script::Script;
use super::{member, script, Member, RedisIndex};
use crate::due::DueError;

static ADD_LEASED: LazyLock<Script> = LazyLock::new(|| script(include_str!("lua/add_leased.lua")));

/// Whether Redis refused a command for an option it does not know (`ERR
/// syntax error`: `ZADD GT` before 6.2). Nothing ran.
fn refused_option<T>(result: &Result<T, DueError>) -> bool {
    match result {
        Err(DueError::Unavailable(error)) => {
            error
                .downcast_ref::<redis::RedisError>()
                .is_some_and(|error| {
                    error.code() == Some("ERR") && error.to_string().contains("syntax")
                })
        }
        _ => false,
    }
}

impl RedisIndex {
    /// Adds notifications to `inflight`, leased until `until`, in one
    /// command: handed to this process's dispatcher, they are not claimed.
    /// Leased as a claim leases (`lease::LostClaims`): a command whose
    /// answer never came may still run, and the next claim then returns
    /// what it leased.
    pub async fn add_leased(&self, ids: &[Uuid], until: DateTime<Utc>) -> Result<(), DueError> {
        let (lease, added) = self.lease_ids(ids, until).await;
        if let (Some(lease), Err(_)) = (lease, &added) {
            self.lost_lease(lease, until);
        }
        added
    }

    /// `add_leased`'s write, with the lease score it wrote (none for no
    /// ids, or when it could not connect and sent nothing); the caller
    /// says whether it is lost (`lost_lease`). A lease that ends later is
    /// kept (the module's doc says why).
    pub(super) async fn lease_ids(
        &self,
        ids: &[Uuid],
        until: DateTime<Utc>,
    ) -> (Option<String>, Result<(), DueError>) {
        if ids.is_empty() {
            return (None, Ok(()));
        }
        // Not connected: nothing was sent, and no lease to remember.
        let mut conn = match self.conn().await {
            Ok(conn) => conn,
            Err(error) => return (None, Err(error)),
        };
        let lease = (self.lost.lock().expect("lost claims lock")).lease(until);
        if !self.link.without_zadd_gt.load(Ordering::Relaxed) {
            let items: Vec<(&str, Member)> =
                ids.iter().map(|id| (lease.as_str(), member(id))).collect();
            let key = &self.keys.inflight;
            let later = redis::SortedSetAddOptions::add_or_update(Some(redis::UpdateCheck::GT));
            let added = self
                .run_on::<()>(&mut conn, |p| {
                    p.zadd_multiple_options(key, &items, &later).ignore();
                })
                .await;
            if !refused_option(&added) {
                return (Some(lease), added);
            }
            tracing::info!("Redis has no ZADD GT (6.2 on): hand-offs use a script instead");
            self.link.without_zadd_gt.store(true, Ordering::Relaxed);
        }
        let added = self
            .eval_on::<i64>(&mut conn, &ADD_LEASED, self.timeout, |invocation| {
                invocation.arg(&lease);
                for id in ids {
                    invocation.arg(member(id));
                }
            })
            .await;
        (Some(lease), added.map(drop))
    }

    /// Hand-offs through the script a Redis before 6.2 needs, as if it
    /// had refused `ZADD GT`: for the conformance suite to run that path.
    #[doc(hidden)]
    pub fn hand_off_by_script(self) -> Self {
        self.link.without_zadd_gt.store(true, Ordering::Relaxed);
        self
    }

    /// Remembers a lease written by a call whose answer was lost, or
    /// whose caller hands nothing it leased to a dispatcher: the next
    /// claim returns what it leased (`lease::LostClaims`).
    pub(super) fn lost_lease(&self, lease: String, until: DateTime<Utc>) {
        (self.lost.lock().expect("lost claims lock")).add(lease, until);
    }
}
