//! The circuit breaker's side of the store (`dispatcher::breaker`).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::StoreError;
use crate::domain::breaker::Circuit;
use crate::domain::operator_event::OperatorEvent;

/// Which of an endpoint's pending notifications `pending_of` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingOf {
    /// All of them: what a release moves, and a probe's candidates (whose
    /// URLs the caller reads to keep those that tell of the endpoint).
    All,
    /// Those without a URL of their own, which go to the endpoint's URL
    /// and so always tell of it: a probe's candidates when the earliest
    /// pending ones all go elsewhere (#47).
    WithoutOwnUrl,
}

/// What the circuit breaker needs (`dispatcher::breaker`): the state of
/// each endpoint's circuit, compare-and-set, and the pending rows a probe
/// sends and a release moves. The rule is `domain::breaker`'s.
#[async_trait::async_trait]
pub trait BreakerStore: crate::store::seams::Clocked + Send + Sync + 'static {
    /// Every circuit that is not clean (a clean one has no row).
    async fn circuits(&self) -> Result<Vec<(Uuid, Circuit)>, StoreError>;
    /// The circuits of `endpoints` that are not clean.
    async fn circuits_of(&self, endpoints: &[Uuid]) -> Result<Vec<(Uuid, Circuit)>, StoreError>;
    /// Writes `new` over the endpoint's circuit if it is still `seen` (the
    /// default: no row), with `event` in the same commit; whether it did.
    async fn set_circuit(
        &self,
        endpoint: Uuid,
        seen: &Circuit,
        new: &Circuit,
        event: Option<&OperatorEvent>,
    ) -> Result<bool, StoreError>;
    /// The endpoint's pending notifications due by `until` (`which` of
    /// them), in due order after `after`: the earliest is its probe, all
    /// of them its release.
    async fn pending_of(
        &self,
        endpoint: Uuid,
        which: PendingOf,
        after: Option<(DateTime<Utc>, Uuid)>,
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    /// Marks those of `ids` still pending and never attempted as released
    /// by a closing circuit, so they go out on the backlog lane
    /// (`domain::lane`).
    async fn mark_released(&self, ids: &[Uuid]) -> Result<(), StoreError>;
    /// How many of the endpoint's notifications are pending and due by `now`.
    async fn due_count(&self, endpoint: Uuid, now: DateTime<Utc>) -> Result<i64, StoreError>;
    /// Ends `failed` with `last_error` each `(id, attempts, series_start)`
    /// still pending with that many attempts in that series, with the
    /// events whose subject it ended; returns those it ended.
    async fn fail_held(
        &self,
        held: &[(Uuid, i32, i32)],
        last_error: &str,
        events: &[OperatorEvent],
    ) -> Result<Vec<Uuid>, StoreError>;
}

/// A shared handle to the breaker's side of the store.
pub type SharedBreaker = Arc<dyn BreakerStore>;
