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
use crate::domain::index_owner::{AnotherIndex, OwnerUnknown, BLIND_AFTER};
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

/// The key that holds the index's name (`domain::index_owner`).
pub(crate) fn identity_key(prefix: &str) -> String {
    format!("{prefix}:{{{prefix}}}:identity")
}

/// The index's name: read, and a new one recorded when there is none
/// (the first process to ask, on a new or emptied Redis, names it).
pub(crate) async fn identity(
    conn: &mut Conn,
    prefix: &str,
    limit: Duration,
) -> Result<String, DueError> {
    let key = identity_key(prefix);
    let asked = async {
        let mut get = redis::cmd("GET");
        get.arg(&key);
        if let Some(identity) = get.query_async::<Option<String>>(conn).await? {
            return Ok(identity);
        }
        let mut pipe = redis::pipe();
        let named = uuid::Uuid::new_v4().simple().to_string();
        pipe.cmd("SET").arg(&key).arg(named).arg("NX").ignore();
        pipe.get(&key);
        let (identity,): (String,) = pipe.query_async(conn).await?;
        Ok(identity)
    };
    match tokio::time::timeout(limit, asked).await {
        Ok(result) => result,
        Err(_) => Err(DueError::Timeout(limit)),
    }
}

/// How often a running process records and compares its layout again
/// (`Link::check_layout`).
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What a running process's checks of the layout found: when the last
/// ran, and the mismatch it found, which every command then fails with.
/// And which index owns the database (`domain::index_owner`), as this
/// process's beats found it.
#[derive(Default)]
pub(crate) struct Guard {
    checked: Mutex<Option<Instant>>,
    mismatch: Mutex<Option<LayoutMismatch>>,
    owner: Mutex<Owner>,
    /// Beats in a row that found another index owning the database.
    another_streak: Mutex<u32>,
}

/// What this process knows of the index that owns the database.
#[derive(Default)]
enum Owner {
    /// Nothing beats in this process (a test's index, `hookd config
    /// check`): no command is refused for it.
    #[default]
    Unasked,
    /// Beats started; none reached the database yet.
    Unknown,
    /// The last beat that reached the database, and what it found.
    Beaten {
        at: Instant,
        another: Option<AnotherIndex>,
    },
}

impl Owner {
    /// Whether every command is refused for it.
    fn refuses(&self) -> bool {
        match self {
            Owner::Unasked => false,
            Owner::Unknown => true,
            Owner::Beaten { at, another } => another.is_some() || at.elapsed() > BLIND_AFTER,
        }
    }
}

impl Guard {
    /// The error every command fails with while the last check found
    /// another count recorded, or while another index owns the database
    /// or this process cannot tell (`Owner`).
    pub(crate) fn refusal(&self) -> Option<DueError> {
        if let Some(mismatch) = self.layout_refusal() {
            return Some(mismatch);
        }
        let owner = self.owner.lock().expect("redis layout lock");
        let unknown = |when| Some(DueError::Unavailable(Box::new(OwnerUnknown { when })));
        match &*owner {
            Owner::Unasked => None,
            Owner::Unknown => unknown("yet"),
            Owner::Beaten { at, .. } if at.elapsed() > BLIND_AFTER => unknown("for 15 s"),
            Owner::Beaten { another, .. } => another
                .clone()
                .map(|another| DueError::Unavailable(Box::new(another))),
        }
    }

    /// The refusal of a layout mismatch alone: what a command that only
    /// prolongs leases already held meets (`Link::lease_conn`).
    pub(crate) fn layout_refusal(&self) -> Option<DueError> {
        let mismatch = self.mismatch.lock().expect("redis layout lock").clone();
        mismatch.map(|mismatch| DueError::Unavailable(Box::new(mismatch)))
    }

    /// Beats start: until the first reaches the database, every command
    /// is refused.
    pub(crate) fn beats_start(&self) {
        let mut owner = self.owner.lock().expect("redis layout lock");
        if matches!(*owner, Owner::Unasked) {
            *owner = Owner::Unknown;
        }
    }

    /// Keeps what a beat that reached the database found: another index
    /// that owns the database (every command then fails with it), or
    /// none. Says whether this process's index serves again after it did
    /// not (another owned the database, or no beat got through for
    /// `BLIND_AFTER`): what the index holds may be stale.
    pub(crate) fn set_owner(&self, found: Option<AnotherIndex>, at: Instant) -> bool {
        let mut owner = self.owner.lock().expect("redis layout lock");
        // Not before the first beat got through: a start is no resumption.
        let was_paused = matches!(&*owner, Owner::Beaten { .. }) && owner.refuses();
        let resumed = was_paused && found.is_none();
        // Said from the second beat in a row that finds another owner: a
        // start beside rows of processes killed a moment ago waits one
        // beat behind them (`Beat::apply`'s outage rule), and that is no
        // misconfiguration.
        let mut streak = self.another_streak.lock().expect("redis layout lock");
        match &found {
            Some(found) => {
                *streak += 1;
                if *streak == 2 {
                    tracing::error!(error = %found, "deliveries pause: another due index serves this database")
                }
            }
            None => {
                if *streak >= 2 {
                    tracing::warn!(
                        "this process's due index serves the database now; deliveries go on"
                    )
                }
                *streak = 0;
            }
        }
        *owner = Owner::Beaten { at, another: found };
        resumed
    }

    /// Whether the beats refuse every command now (`refusal`).
    pub(crate) fn paused(&self) -> bool {
        self.owner.lock().expect("redis layout lock").refuses()
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
