//! The due index on Redis (server mode): *when* each pending notification
//! is next due, and the leases of what is being delivered now. It holds
//! nothing that PostgreSQL does not: losing it loses nothing (see
//! `rebuild`, its `Recovery`). Keys, the marker and the rebuild lock stay in
//! this module, and so do Redis's errors: they leave it as `DueError`s.
//!
//! Keys start with the configured prefix `P`; the `{P}` hash tag keeps them
//! in one Redis Cluster slot, so scripts may touch several:
//! - `P:{P}:due`      zset, the directory of the due set's buckets: bucket
//!   → a time no later than its earliest member's (and a sentinel)
//! - `P:{P}:due:<id>` zset, a bucket: notification id → due time (unix ms),
//!   for the ids from `<id>` (its range's first) to the next range's first
//! - `P:{P}:due:ranges` zset, the first id of every bucket's range
//! - `P:{P}:due:count` how many ids the buckets hold
//! - `P:{P}:inflight` zset, notification id → lease expiry (unix ms; a
//!   claim's with a fraction of its own, `lease::LostClaims`)
//! - `P:{P}:indexed`  marker: present while `due` is known to be complete
//! - `P:{P}:rebuild-lock` the process rebuilding the index, if one is
//! - `P:{P}:shards`   how many shards the index is laid out in (`layout`)
//!
//! A sharded index (`sharded`, for a Redis Cluster) is one such set of keys
//! per shard `N`, under the hash tag `{P:N}` instead of `{P}`.
//!
//! The due set is many small sorted sets, not one: Redis keeps a sorted set
//! of up to 128 members in a listpack (~26 bytes per member here), and one
//! large sorted set in a skiplist with a dict (~110 bytes per member, the
//! same whatever the member's length). Each bucket holds a range of ids,
//! cut in two as it fills and merged into its neighbour as it empties, so
//! each stays small whatever the number pending; ids sort by creation time,
//! so a bucket holds rows created together, as PostgreSQL stores them. The
//! directory tells a claim which buckets hold something due. The scripts
//! in `lua/` share `buckets.lua`, which says how.
//!
//! Members are the 14 bytes of the notification's compact id (`domain::id`),
//! not its 36-character text: the index costs Redis memory per pending
//! notification, and a member of 14 bytes or less fits Redis's 16-byte
//! allocation class where the 16 bytes of a full UUID take 24. An id that is
//! not compact (made elsewhere) is stored as its 16 bytes.

mod clients;
mod hand_off;
mod layout;
pub mod lease;
mod link;
mod policy;
pub mod rebuild;
pub(crate) mod script;
mod sentinel;
pub mod sharded;

pub use layout::{inspect, open, LayoutMismatch};
pub use policy::NodePolicy;
use policy::{policies_in, policy_warnings};
pub use sharded::ShardedIndex;

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use self::script::{Invocation, Script};
use crate::config::RedisSettings;
use crate::domain::id;
pub use crate::due::score;
use crate::due::DueError;

#[derive(Debug, Clone)]
pub struct Keys {
    /// The directory of the due set's buckets (and its sentinel).
    pub due: String,
    /// The first id of each bucket's range.
    pub ranges: String,
    /// How many ids the buckets hold.
    pub count: String,
    pub inflight: String,
}

impl Keys {
    /// The keys of an unsharded index: hash tag `{prefix}`.
    pub fn new(prefix: &str) -> Self {
        Self::tagged(prefix, prefix)
    }

    /// The keys under hash tag `{tag}` (a shard's: `prefix:N`).
    pub fn tagged(prefix: &str, tag: &str) -> Self {
        Self {
            due: format!("{prefix}:{{{tag}}}:due"),
            ranges: format!("{prefix}:{{{tag}}}:due:ranges"),
            count: format!("{prefix}:{{{tag}}}:due:count"),
            inflight: format!("{prefix}:{{{tag}}}:inflight"),
        }
    }

    /// Whether `key` is a bucket's (not the ranges' or the count's).
    pub fn is_bucket(&self, key: &[u8]) -> bool {
        key.starts_with(self.due.as_bytes())
            && key.get(self.due.len()) == Some(&b':')
            && key != self.ranges.as_bytes()
            && key != self.count.as_bytes()
    }

    /// A `SCAN` pattern for every bucket (and the ranges and the count):
    /// the prefix's glob characters escaped.
    pub fn buckets_pattern(&self) -> String {
        let mut pattern = String::with_capacity(self.due.len() + 4);
        for c in self.due.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push_str(":*");
        pattern
    }
}

/// The buckets' shared functions, put before each script's own lines.
const BUCKETS: &str = include_str!("lua/buckets.lua");

/// One of the index's scripts: `buckets.lua`, then `body`. Every one takes
/// the keys `due`, `ranges`, `inflight` and `count`, in that order (see
/// `eval`).
pub(super) fn script(body: &str) -> Script {
    Script::new(&[BUCKETS, body].concat())
}

pub(super) static COMPLETE: LazyLock<Script> =
    LazyLock::new(|| script(include_str!("lua/complete.lua")));
static REMOVE: LazyLock<Script> = LazyLock::new(|| script(include_str!("lua/remove.lua")));
static DUE_AT: LazyLock<Script> = LazyLock::new(|| script(include_str!("lua/due_at.lua")));

/// Handle to the due index. Cheap to clone. Connects on first use, so hookd
/// starts (and accepts notifications) while Redis is down.
#[derive(Clone)]
pub struct RedisIndex {
    link: Arc<link::Link>,
    /// Names this process in the rebuild lock.
    token: Arc<str>,
    keys: Arc<Keys>,
    prefix: Arc<str>,
    /// The hash tag of its keys: the prefix, or a shard's `prefix:N`.
    tag: Arc<str>,
    pub(crate) timeout: Duration,
    /// Claims whose answer never came, whose leases the next claims return.
    lost: Arc<std::sync::Mutex<lease::LostClaims>>,
}

impl From<redis::RedisError> for DueError {
    fn from(error: redis::RedisError) -> Self {
        DueError::Unavailable(Box::new(error))
    }
}

/// A notification id as a due-index member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    bytes: [u8; 16],
    len: u8,
}

impl Member {
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl redis::ToRedisArgs for Member {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        out.write_arg(self.as_bytes());
    }
}

/// One member is one argument (`ZSCORE` takes exactly one).
impl redis::ToSingleRedisArg for Member {}

pub fn member(id: &Uuid) -> Member {
    match id::compact(id) {
        Some(compact) => {
            let mut bytes = [0u8; 16];
            bytes[..id::COMPACT_LEN].copy_from_slice(&compact);
            Member {
                bytes,
                len: id::COMPACT_LEN as u8,
            }
        }
        None => Member {
            bytes: *id.as_bytes(),
            len: 16,
        },
    }
}

pub fn parse_member(bytes: &[u8]) -> Result<Uuid, DueError> {
    match <&[u8; id::COMPACT_LEN]>::try_from(bytes) {
        Ok(compact) => Ok(id::expand(compact)),
        Err(_) => Uuid::from_slice(bytes).map_err(|_| DueError::Malformed(bytes.len())),
    }
}

impl RedisIndex {
    /// The unsharded index (hash tag `{prefix}`), whatever `redis.shards`
    /// says: `open` chooses between it and a `ShardedIndex`.
    pub fn new(settings: &RedisSettings) -> Result<Self, DueError> {
        let link = Arc::new(link::Link::new(settings)?);
        Ok(Self::on(link, settings, &settings.prefix))
    }

    /// The index under hash tag `{tag}`, over a link shared with others.
    fn on(link: Arc<link::Link>, settings: &RedisSettings, tag: &str) -> Self {
        Self {
            link,
            token: Uuid::now_v7().to_string().into(),
            keys: Arc::new(Keys::tagged(&settings.prefix, tag)),
            prefix: settings.prefix.as_str().into(),
            tag: tag.into(),
            timeout: Duration::from_millis(settings.timeout_ms),
            lost: Arc::default(),
        }
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The hash tag of its keys (without the braces).
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// Counts the masters hookd has connected to (see `link`): when it
    /// moves, the housekeeper re-adds recent rows the new master may lack.
    pub fn epoch(&self) -> u64 {
        self.link.epoch()
    }

    pub(crate) async fn conn(&self) -> Result<link::Conn, DueError> {
        self.observed(self.link.conn().await)
    }

    /// Passes a result through, telling the link about failures (a failover
    /// makes the next command look for the new master) and successes.
    pub(crate) fn observed<T>(&self, result: Result<T, DueError>) -> Result<T, DueError> {
        match &result {
            Ok(_) => self.link.succeeded(),
            Err(error) => self.link.failed(error),
        }
        result
    }

    /// Runs a command or pipeline with the configured time limit.
    pub(crate) async fn run<T: redis::FromRedisValue>(
        &self,
        cmd: impl FnOnce(&mut redis::Pipeline),
    ) -> Result<T, DueError> {
        let mut conn = self.conn().await?;
        self.run_on(&mut conn, cmd).await
    }

    /// `run` on a connection the caller has: a failure to connect, which
    /// sends nothing, is then the caller's to tell from one after sending.
    pub(crate) async fn run_on<T: redis::FromRedisValue>(
        &self,
        conn: &mut link::Conn,
        cmd: impl FnOnce(&mut redis::Pipeline),
    ) -> Result<T, DueError> {
        let mut pipe = redis::pipe();
        cmd(&mut pipe);
        self.observed(
            match tokio::time::timeout(self.timeout, pipe.query_async::<T>(conn)).await {
                Ok(result) => result.map_err(DueError::from),
                Err(_) => Err(DueError::Timeout(self.timeout)),
            },
        )
    }

    /// Runs one of the index's scripts (see `script`) on its keys, with
    /// `args`, within `limit`.
    pub(crate) async fn eval<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        limit: Duration,
        args: impl FnOnce(&mut Invocation),
    ) -> Result<T, DueError> {
        let mut conn = self.conn().await?;
        self.eval_on(&mut conn, script, limit, args).await
    }

    /// `eval` on a connection the caller has (`run_on` says why).
    pub(crate) async fn eval_on<T: redis::FromRedisValue>(
        &self,
        conn: &mut link::Conn,
        script: &Script,
        limit: Duration,
        args: impl FnOnce(&mut Invocation),
    ) -> Result<T, DueError> {
        let mut invocation = script.prepare_invoke();
        invocation
            .key(&self.keys.due)
            .key(&self.keys.ranges)
            .key(&self.keys.inflight)
            .key(&self.keys.count);
        args(&mut invocation);
        self.observed(
            match tokio::time::timeout(limit, invocation.invoke_async(conn)).await {
                Ok(result) => result.map_err(DueError::from),
                Err(_) => Err(DueError::Timeout(limit)),
            },
        )
    }

    pub async fn ping(&self) -> Result<(), DueError> {
        let _: (String,) = self
            .run(|p| {
                p.cmd("PING");
            })
            .await?;
        Ok(())
    }

    /// `PING` as one command, not in a pipeline: on a cluster the client
    /// sends it to every master and succeeds only if all answer (a
    /// pipeline goes to one node), so readiness covers every shard.
    pub(crate) async fn ping_every_master(&self) -> Result<(), DueError> {
        let mut conn = self.conn().await?;
        let ping = redis::cmd("PING");
        self.observed(
            match tokio::time::timeout(self.timeout, ping.query_async::<String>(&mut conn)).await {
                Ok(result) => result.map(drop).map_err(DueError::from),
                Err(_) => Err(DueError::Timeout(self.timeout)),
            },
        )
    }

    /// Redis's `maxmemory-policy`, from `INFO memory` (CONFIG may be
    /// disabled on managed Redis), on every master: sent as one command,
    /// not in a pipeline, a cluster client asks each master (a pipeline
    /// goes to one node) and answers by node.
    pub async fn maxmemory_policies(&self) -> Result<Vec<NodePolicy>, DueError> {
        let mut conn = self.conn().await?;
        let mut info = redis::cmd("INFO");
        info.arg("memory");
        let answer = self.observed(
            match tokio::time::timeout(self.timeout, info.query_async::<redis::Value>(&mut conn))
                .await
            {
                Ok(result) => result.map_err(DueError::from),
                Err(_) => Err(DueError::Timeout(self.timeout)),
            },
        )?;
        Ok(policies_in(&answer))
    }

    /// A warning for each master whose policy may evict hookd's keys: any
    /// policy but `noeviction` lets it drop `due` under memory pressure.
    /// Nothing is lost then (the sentinel member notices within a second
    /// and the index is rebuilt), but deliveries wait for the rebuild.
    pub async fn eviction_warnings(&self) -> Vec<String> {
        policy_warnings(&self.maxmemory_policies().await.unwrap_or_default())
    }

    /// Why every command fails, when this process refuses to use the
    /// index (another layout recorded, another index owning the
    /// database), then the eviction warnings: what `/readyz` lists.
    pub(crate) async fn index_warnings(&self) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .link
            .refusal()
            .map(|e| e.to_string())
            .into_iter()
            .collect();
        warnings.extend(self.eviction_warnings().await);
        warnings
    }

    /// Adds (or moves) notifications to the due set, in one script call.
    pub async fn add(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<(), DueError> {
        self.complete(&[], entries).await
    }

    /// Removes notifications from the index (cancelled ones, say). Best effort:
    /// the dispatcher also skips any id whose row is no longer pending.
    pub async fn remove(&self, ids: &[Uuid]) -> Result<(), DueError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.eval::<()>(&REMOVE, self.timeout, |invocation| {
            for id in ids {
                invocation.arg(member(id));
            }
        })
        .await
    }

    /// The due time of a notification, if it is in the due set.
    pub async fn due_at(&self, id: Uuid) -> Result<Option<i64>, DueError> {
        self.eval(&DUE_AT, self.timeout, |invocation| {
            invocation.arg(member(&id));
        })
        .await
    }
}

#[async_trait::async_trait]
impl crate::due::DueIndex for RedisIndex {
    async fn add(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<(), DueError> {
        RedisIndex::add(self, entries).await
    }

    async fn add_leased(&self, ids: &[Uuid], lease_until: DateTime<Utc>) -> Result<(), DueError> {
        RedisIndex::add_leased(self, ids, lease_until).await
    }

    async fn remove(&self, ids: &[Uuid]) -> Result<(), DueError> {
        RedisIndex::remove(self, ids).await
    }

    async fn claim(
        &self,
        now: DateTime<Utc>,
        due_by: DateTime<Utc>,
        limit: usize,
        lease_until: DateTime<Utc>,
    ) -> Result<crate::due::Claim, DueError> {
        RedisIndex::claim(self, now, due_by, limit, lease_until).await
    }

    async fn complete(
        &self,
        done: &[Uuid],
        next: &[(Uuid, DateTime<Utc>)],
    ) -> Result<(), DueError> {
        RedisIndex::complete(self, done, next).await
    }

    async fn reschedule(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<(), DueError> {
        RedisIndex::reschedule(self, entries).await
    }

    async fn forget(&self, ids: &[Uuid]) -> Result<(), DueError> {
        RedisIndex::forget(self, ids).await
    }

    async fn extend(&self, ids: &[Uuid], until: DateTime<Utc>) -> Result<(), DueError> {
        RedisIndex::extend(self, ids, until).await
    }

    async fn leased(&self, id: Uuid, now: DateTime<Utc>) -> Result<bool, DueError> {
        RedisIndex::leased(self, id, now).await
    }

    async fn lease_ends(
        &self,
        ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, DueError> {
        RedisIndex::lease_ends(self, ids, now).await
    }

    async fn depth(&self) -> Result<(u64, u64), DueError> {
        RedisIndex::depth(self).await
    }

    async fn add_missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError> {
        RedisIndex::add_missing(self, entries).await
    }

    async fn add_marked(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError> {
        RedisIndex::add_marked(self, entries).await
    }

    async fn ping(&self) -> Result<(), DueError> {
        RedisIndex::ping(self).await
    }

    async fn warnings(&self) -> Vec<String> {
        self.index_warnings().await
    }

    /// Redis restarts, fails over and evicts while hookd runs (`rebuild`).
    fn recovery(&self) -> Option<&dyn crate::due::Recovery> {
        Some(self)
    }

    fn redis(&self) -> Option<&RedisIndex> {
        Some(self)
    }
}
