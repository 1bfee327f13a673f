//! What a notification's `waiting` is derived from (`domain::waiting`),
//! read at once for every notification a response shows: the disabled
//! endpoints among theirs (through the endpoint cache), their circuits (one
//! query), and the leases and rate-limit slots of the push ones that are
//! due (one call each to the due index and its limiter). A page of any
//! length costs those four, not four per row.
//! A source that cannot be read leaves its reason out rather than fail
//! the read.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::AppState;
use crate::domain::breaker::Circuit;
use crate::domain::status::Status;
use crate::domain::waiting::{waiting, Facts, Waiting};
use crate::store::notifications::Notification;

/// What holds the notifications of one response.
#[derive(Default)]
pub(super) struct Holds {
    now: DateTime<Utc>,
    disabled: HashSet<Uuid>,
    circuits: HashMap<Uuid, Circuit>,
    leases: HashMap<Uuid, DateTime<Utc>>,
    slots: HashMap<Uuid, DateTime<Utc>>,
}

impl Holds {
    /// Everything known about `rows`' waits.
    pub(super) async fn read<'a>(
        state: &AppState,
        rows: impl IntoIterator<Item = &'a Notification>,
    ) -> Self {
        let pending: Vec<&Notification> = rows
            .into_iter()
            .filter(|n| n.status == Status::Pending)
            .collect();
        let mut holds = Self::endpoints(state, pending.iter().copied()).await;
        let endpoints: Vec<Uuid> = pending
            .iter()
            .map(|n| n.endpoint_id)
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        if !endpoints.is_empty() {
            match state.breaker.circuits_of(&endpoints).await {
                Ok(circuits) => holds.circuits = circuits.into_iter().collect(),
                Err(error) => tracing::warn!(%error, "cannot read circuits"),
            }
        }
        // Only a push notification that is due can be under a claim's lease.
        let pushed: Vec<Uuid> = pending
            .iter()
            .filter(|n| !n.pull && n.next_attempt_at.is_some_and(|at| at <= holds.now))
            .map(|n| n.id)
            .collect();
        if !pushed.is_empty() && state.service.index_gate() {
            match state.due.lease_ends(&pushed, holds.now).await {
                Ok(leases) => holds.leases = leases.into_iter().collect(),
                Err(error) => tracing::warn!(%error, "cannot read leases"),
            }
            match state.limiter.slots(&pushed, holds.now).await {
                Ok(slots) => holds.slots = slots.into_iter().collect(),
                Err(error) => tracing::warn!(%error, "cannot read rate-limit slots"),
            }
        }
        holds
    }

    /// What the endpoint cache tells of `rows`' waits (whether their
    /// endpoints are disabled), with no query when it holds them: a
    /// create's answer.
    pub(super) async fn endpoints<'a>(
        state: &AppState,
        rows: impl IntoIterator<Item = &'a Notification>,
    ) -> Self {
        let ids: HashSet<Uuid> = rows
            .into_iter()
            .filter(|n| n.status == Status::Pending)
            .map(|n| n.endpoint_id)
            .collect();
        let disabled = match state.service.disabled_endpoints(ids).await {
            Ok(disabled) => disabled,
            Err(error) => {
                tracing::warn!(%error, "cannot read endpoints");
                HashSet::new()
            }
        };
        Self {
            now: state.service.now(),
            disabled,
            ..Self::default()
        }
    }

    /// Why `n` waits; `None` once final.
    pub(super) fn of(&self, n: &Notification) -> Option<Waiting> {
        // A pull consumer's lease ends at the row's due time.
        let leased_until = if n.leased {
            n.next_attempt_at
        } else {
            self.leases.get(&n.id).copied()
        };
        let facts = Facts {
            status: n.status,
            next_attempt_at: n.next_attempt_at,
            pull: n.pull,
            leased_until,
            disabled: self.disabled.contains(&n.endpoint_id),
            circuit: self.circuits.get(&n.endpoint_id),
            slot: self.slots.get(&n.id).copied(),
            behind: n.behind,
        };
        waiting(&facts, self.now)
    }
}
