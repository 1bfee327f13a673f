//! The layout of the index in Redis: how many shards it is cut into. A
//! notification's shard follows from its id and the shard count
//! (`domain::shard`), so every process of a deployment must count alike: a
//! process with another count would look for ids where others never put
//! them, and complete leases in shards that do not hold them. The first
//! process to connect records its count in `P:{P}:shards`; every process
//! compares its own with it when it connects, and refuses to work with
//! another (`hookd serve` refuses to start when Redis answers at start).
//! A running process records and compares again every second
//! (`Link::check_layout`): a Redis that restarted empty lost the record,
//! and a process started meanwhile with another count would record its
//! own beside theirs, two layouts each delivering what the other leased.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::link::Conn;
use super::{RedisIndex, ShardedIndex};
use crate::config::RedisSettings;
use crate::due::{DueError, SharedIndex};

/// The shard count this process was configured with is not the one the
/// deployment's index was laid out with.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "redis.shards is {configured}, but the due index in Redis was laid out with {stored} shard(s) \
     (key {key}): set redis.shards = {stored}, or stop every hookd and delete the keys of \
     redis.prefix so that the index is rebuilt from PostgreSQL"
)]
pub struct LayoutMismatch {
    pub configured: u16,
    pub stored: String,
    pub key: String,
}

/// The key that records the shard count.
pub(crate) fn key(prefix: &str) -> String {
    format!("{prefix}:{{{prefix}}}:shards")
}

/// Records `shards` unless a count is recorded already, then compares.
pub(crate) async fn check(
    conn: &mut Conn,
    prefix: &str,
    shards: u16,
    limit: Duration,
) -> Result<(), DueError> {
    let key = key(prefix);
    let mut pipe = redis::pipe();
    pipe.cmd("SET").arg(&key).arg(shards).arg("NX").ignore();
    pipe.get(&key);
    let (stored,): (Option<String>,) =
        match tokio::time::timeout(limit, pipe.query_async(conn)).await {
            Ok(result) => result?,
            Err(_) => return Err(DueError::Timeout(limit)),
        };
    match stored {
        Some(stored) if stored == shards.to_string() => Ok(()),
        stored => Err(DueError::Unavailable(Box::new(LayoutMismatch {
            configured: shards,
            stored: stored.unwrap_or_default(),
            key,
        }))),
    }
}

/// How often a running process records and compares its layout again
/// (`Link::check_layout`).
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What a running process's checks of the layout found: when the last
/// ran, and the mismatch it found, which every command then fails with.
#[derive(Default)]
pub(crate) struct Guard {
    checked: Mutex<Option<Instant>>,
    mismatch: Mutex<Option<LayoutMismatch>>,
}

impl Guard {
    /// The error every command fails with while the last check found
    /// another count recorded.
    pub(crate) fn refusal(&self) -> Option<DueError> {
        let mismatch = self.mismatch.lock().expect("redis layout lock").clone();
        mismatch.map(|mismatch| DueError::Unavailable(Box::new(mismatch)))
    }

    /// Whether a check is due (at most one per `CHECK_EVERY`); taken if so.
    pub(crate) fn due(&self) -> bool {
        let mut checked = self.checked.lock().expect("redis layout lock");
        if checked.is_some_and(|at| at.elapsed() < CHECK_EVERY) {
            return false;
        }
        *checked = Some(Instant::now());
        true
    }

    /// Records `shards` again unless a count is recorded (`check`), and
    /// keeps what it found; a Redis that does not answer changes nothing.
    pub(crate) async fn check(&self, conn: &mut Conn, prefix: &str, shards: u16, limit: Duration) {
        let found = match check(conn, prefix, shards, limit).await {
            Ok(()) => None,
            Err(DueError::Unavailable(error)) => match error.downcast::<LayoutMismatch>() {
                Ok(mismatch) => Some(*mismatch),
                // Redis did not answer: the next check asks again.
                Err(_) => return,
            },
            Err(_) => return,
        };
        let mut mismatch = self.mismatch.lock().expect("redis layout lock");
        match (&*mismatch, &found) {
            (None, Some(found)) => {
                tracing::error!(error = %found, "the due index in Redis is laid out for another shard count now; deliveries pause until it is this process's again")
            }
            (Some(_), None) => tracing::warn!(
                "the due index in Redis is laid out with this process's shard count again"
            ),
            _ => {}
        }
        *mismatch = found;
    }
}

/// What `hookd config check` tells of Redis, within `limit` a question
/// and changing nothing: a trial check with another `redis.shards` must
/// not record its count for the deployment (a process that connects
/// does). Warnings: a recorded count other than `settings`'s, and a
/// `maxmemory-policy` that may evict the index.
pub async fn inspect(settings: &RedisSettings, limit: Duration) -> Vec<String> {
    let mut warnings = Vec::new();
    let Ok(link) = super::link::Link::new(settings) else {
        return warnings;
    };
    let Ok(Ok(mut conn)) = tokio::time::timeout(limit, link.unchecked()).await else {
        return warnings;
    };
    let key = key(&settings.prefix);
    let mut get = redis::cmd("GET");
    get.arg(&key);
    let stored = tokio::time::timeout(limit, get.query_async::<Option<String>>(&mut conn)).await;
    if let Ok(Ok(Some(stored))) = stored {
        if stored != settings.shard_count().to_string() {
            let configured = settings.shard_count();
            warnings.push(
                LayoutMismatch {
                    configured,
                    stored,
                    key,
                }
                .to_string(),
            );
        }
    }
    // As one command, as `RedisIndex::maxmemory_policies` asks: every
    // master's answer on a cluster.
    let mut info = redis::cmd("INFO");
    info.arg("memory");
    let info = tokio::time::timeout(limit, info.query_async::<redis::Value>(&mut conn)).await;
    if let Ok(Ok(info)) = info {
        warnings.extend(super::policy_warnings(&super::policies_in(&info)));
    }
    warnings
}

/// Why `open` gave no index.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("invalid redis.url, redis.cluster or redis.ca_file: {0}")]
    Invalid(#[source] DueError),
    #[error(transparent)]
    Layout(#[from] LayoutMismatch),
}

/// The index `redis.shards` asks for: the unsharded `RedisIndex` for one
/// shard (the layout of earlier versions), a `ShardedIndex` for more. When
/// Redis answers now, its recorded layout is checked, and a mismatch
/// refused; when it does not, hookd starts anyway (the API accepts
/// notifications while Redis is down) and checks at the first connection.
pub async fn open(settings: &RedisSettings) -> Result<SharedIndex, OpenError> {
    let index: SharedIndex = if settings.shard_count() > 1 {
        Arc::new(ShardedIndex::new(settings).map_err(OpenError::Invalid)?)
    } else {
        Arc::new(RedisIndex::new(settings).map_err(OpenError::Invalid)?)
    };
    let limit = Duration::from_millis(settings.timeout_ms) * 4;
    if let Ok(Err(DueError::Unavailable(error))) = tokio::time::timeout(limit, index.ping()).await {
        if let Ok(mismatch) = error.downcast::<LayoutMismatch>() {
            return Err(OpenError::Layout(*mismatch));
        }
    }
    Ok(index)
}
