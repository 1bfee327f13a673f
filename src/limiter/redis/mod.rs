//! The rate limiter on Redis (server mode): every process of a deployment
//! shares each endpoint's bucket. One script call (`gcra.lua`, EVALSHA)
//! decides a whole batch; the keys live beside the due index's, under its
//! prefix and hash tag, and expire by themselves (a bucket once its last
//! slot and the grace have passed, a reservation the grace after its slot).
//!
//! With lanes on (`Ask::share` above 0) an endpoint's buckets are
//! `<endpoint>:fresh` and `<endpoint>:backlog` beside the single
//! `<endpoint>` of lanes off. Turning lanes on (this version's default)
//! leaves the single bucket to expire by itself; the reservations made in
//! it name its epoch, so each takes a new slot in its lane when it comes
//! back (sooner or later than it held, once). While processes of the
//! previous version (one bucket) run beside this one, the two keep
//! separate buckets: an endpoint may get up to twice its rate until the
//! rollout ends.

use std::sync::LazyLock;

use crate::due::redis::script::Script;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Ask, Limiter, LimiterError};
use crate::domain::rate::{grace_us, Decision};
use crate::due::redis::RedisIndex;
use crate::due::DueError;

static GCRA: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("gcra.lua")));

/// Shares the due index's connection and prefix.
pub struct RedisLimiter {
    index: RedisIndex,
    base: String,
}

impl RedisLimiter {
    pub fn new(index: RedisIndex) -> Self {
        let prefix = index.prefix();
        let base = format!("{prefix}:{{{prefix}}}:rate");
        Self { index, base }
    }
}

#[async_trait::async_trait]
impl Limiter for RedisLimiter {
    /// The reservations' keys (`<base>:r:<notification>`, "<at>:<epoch>"),
    /// read in one `MGET`.
    async fn slots(
        &self,
        ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, LimiterError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = ids
            .iter()
            .map(|id| format!("{}:r:{}", self.base, id.simple()))
            .collect();
        let (held,): (Vec<Option<String>>,) = self
            .index
            .run(|p| {
                p.cmd("MGET").arg(&keys);
            })
            .await?;
        let now_us = now.timestamp_micros();
        Ok(ids
            .iter()
            .zip(held)
            .filter_map(|(id, held)| {
                let at_us: i64 = held?.split(':').next()?.parse().ok()?;
                (at_us > now_us).then_some((*id, DateTime::from_timestamp_micros(at_us)?))
            })
            .collect())
    }

    async fn admit(
        &self,
        now: DateTime<Utc>,
        due_by: DateTime<Utc>,
        asks: &[Ask],
    ) -> Result<Vec<Decision>, LimiterError> {
        let asked: usize = asks.iter().map(|a| a.notifications.len()).sum();
        if asked == 0 {
            return Ok(Vec::new());
        }
        let mut invocation = GCRA.prepare_invoke();
        invocation
            .key(&self.base)
            .arg(now.timestamp_micros())
            .arg(due_by.timestamp_micros())
            .arg(grace_us());
        for ask in asks {
            let limits = match ask.limit.lanes(ask.share) {
                Some(lanes) => lanes.to_vec(),
                None => vec![ask.limit],
            };
            invocation
                .arg(ask.endpoint.simple().to_string())
                .arg(ask.room)
                .arg(ask.notifications.len())
                .arg(limits.len());
            for limit in &limits {
                invocation
                    .arg(limit.tag())
                    .arg(limit.interval_us())
                    .arg(limit.tolerance_us());
            }
            for (id, lane) in &ask.notifications {
                let place = if limits.len() == 2 { lane.index() } else { 0 };
                invocation.arg(id.simple().to_string()).arg(place + 1);
            }
        }
        let mut conn = self.index.conn().await?;
        let limit = self.index.timeout;
        let reply: Vec<i64> = self.index.observed(
            match tokio::time::timeout(limit, invocation.invoke_async(&mut conn)).await {
                Ok(result) => result.map_err(DueError::from),
                Err(_) => Err(DueError::Timeout(limit)),
            },
        )?;
        if reply.len() != 2 * asked {
            return Err(LimiterError::Malformed {
                got: reply.len(),
                asked,
            });
        }
        reply
            .chunks_exact(2)
            .map(|pair| match pair[0] {
                0 => Ok(Decision::Send { at_us: pair[1] }),
                1 => Ok(Decision::Reserve { at_us: pair[1] }),
                2 => Ok(Decision::Wait { at_us: pair[1] }),
                _ => Err(LimiterError::Malformed {
                    got: reply.len(),
                    asked,
                }),
            })
            .collect()
    }
}
