//! The rate limiter: for the notifications a batch would start, which may
//! go now and when each of the others may (`domain::rate`, GCRA with
//! reservations). Its state must be shared as widely as the due index's,
//! so `beside` composes it on the index (`startup`): `redis` beside the
//! Redis index (every process of a deployment, one script call per batch)
//! and `memory` beside the in-process one (embedded mode, one process).
//! The limiter knows the index, never the other way round.

pub mod memory;
#[cfg(feature = "server")]
pub mod redis;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::lane::Lane;
use crate::domain::rate::{Decision, RateLimit};
use crate::due::DueError;

/// What the limiter was asked for one endpoint: its notifications in the
/// batch, in the order they would start.
#[derive(Debug, Clone)]
pub struct Ask {
    pub endpoint: Uuid,
    pub limit: RateLimit,
    /// Fresh notifications' part of the limit (`RateLimit::lanes`): 0
    /// turns lanes off, one bucket for all.
    pub share: f64,
    /// How many may start now: what the endpoint's concurrency cap leaves.
    pub room: usize,
    /// Each with its lane (`domain::lane`).
    pub notifications: Vec<(Uuid, Lane)>,
}

/// Why the limiter could not decide.
#[derive(Debug, thiserror::Error)]
pub enum LimiterError {
    #[error("rate limiter unavailable: {0}")]
    Unavailable(#[from] DueError),
    #[error("the rate limiter answered {got} values for {asked} notifications")]
    Malformed { got: usize, asked: usize },
}

#[async_trait::async_trait]
pub trait Limiter: Send + Sync + 'static {
    /// Decides for every notification of `asks`, in one step whatever
    /// their number: a decision per notification, in the order asked
    /// (each ask's, one ask after the other). Those whose slot is by
    /// `due_by` are `Send`; the others hold a slot to come back at.
    async fn admit(
        &self,
        now: DateTime<Utc>,
        due_by: DateTime<Utc>,
        asks: &[Ask],
    ) -> Result<Vec<Decision>, LimiterError>;
    /// Of `ids`, those holding a slot later than `now` (given by `admit`,
    /// not yet used), and when: what a rate-limited notification waits
    /// for (`domain::waiting`). One call whatever their number.
    async fn slots(
        &self,
        ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, LimiterError>;
}

pub type SharedLimiter = Arc<dyn Limiter>;

/// The limiter whose state is shared as widely as `due`'s: on its Redis
/// connection and prefix, or in this process for an index of this process.
pub fn beside(due: &dyn crate::due::DueIndex) -> SharedLimiter {
    #[cfg(feature = "server")]
    if let Some(index) = due.redis() {
        return Arc::new(redis::RedisLimiter::new(index.clone()));
    }
    #[cfg(not(feature = "server"))]
    let _ = due;
    Arc::new(memory::MemoryLimiter::default())
}
