//! Re-indexing from PostgreSQL. A marker key says the index is complete; when
//! Redis restarts empty, is flushed or fails over, the marker is gone and one
//! process (holding a short lock) rebuilds `due` from the pending rows. Adds
//! never touch ids that are in flight or already due: the same script serves
//! the rebuild and the periodic sweep for rows that fell through the cracks.

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use redis::Script;
use uuid::Uuid;

use super::{member, parse_member, score, RedisIndex};
use crate::due::{DueError, RestoreError, Restored};
use crate::store::seams::PendingRows;

static ADD_MISSING: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
-- KEYS[1] due, KEYS[2] inflight; ARGV[1] '0' only to look, '1' to add,
-- '2' to add and also to move earlier a member due later than its score;
-- then score1, member1, score2, member2, ...
-- Per chunk: one ZMSCORE on each set, one ZADD of the members to write.
-- ZMSCORE needs Redis 6.2; before it, one ZSCORE per member.
-- Returns the members written ('0': that would be added).
local function scores(key, members)
  local found = redis.pcall('ZMSCORE', key, unpack(members))
  if type(found) == 'table' and found.err then
    found = {}
    for k = 1, #members do found[k] = redis.call('ZSCORE', key, members[k]) end
  end
  return found
end
local mode = ARGV[1]
local found = {}
for i = 2, #ARGV, 1000 do
  local last = math.min(i + 999, #ARGV)
  local members = {}
  for j = i + 1, last, 2 do members[#members + 1] = ARGV[j] end
  local leased = scores(KEYS[2], members)
  local queued = scores(KEYS[1], members)
  local missing = {}
  for k = 1, #members do
    local score = ARGV[i + 2 * (k - 1)]
    if not leased[k] and (not queued[k]
        or (mode == '2' and tonumber(queued[k]) > tonumber(score))) then
      missing[#missing + 1] = score
      missing[#missing + 1] = members[k]
      found[#found + 1] = members[k]
    end
  end
  if mode ~= '0' and #missing > 0 then
    redis.call('ZADD', KEYS[1], unpack(missing))
  end
end
return found
"#,
    )
});

/// What `ADD_MISSING` does with the entries it is given.
#[derive(Clone, Copy)]
enum Mode {
    /// Changes nothing; says which are in neither set.
    Look,
    /// Adds those in neither set.
    Add,
    /// Adds those in neither set, and moves to its time one due later.
    AddOrMoveEarlier,
}

impl Mode {
    fn arg(self) -> &'static str {
        match self {
            Mode::Look => "0",
            Mode::Add => "1",
            Mode::AddOrMoveEarlier => "2",
        }
    }
}

static RELEASE_LOCK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"#,
    )
});

/// The marker's value starts with the format of the index's members. A
/// build that changes the format changes this, and the first process of the
/// new build to look clears the index and rebuilds it from PostgreSQL.
/// `f2`: compact 14-byte members (before it, the marker held a bare time and
/// members were 16 bytes).
pub const INDEX_FORMAT: &str = "f2:";

/// A member of `due` that is never due (score +inf) and is no id (9
/// bytes), added with the marker. When `due` disappears on its own (evicted,
/// deleted by hand, missing on a promoted replica), it goes too, while the
/// marker stays: that is how the loss of `due` alone is noticed within a
/// housekeeping tick instead of by the sweep.
pub const DUE_SENTINEL: &[u8] = b"hookd:due";

/// What the marker (and the sentinel member of `due`) say about the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexState {
    /// Complete, in this build's format.
    Complete,
    /// Lost (Redis restarted empty, was flushed or failed over) or never built.
    Missing,
    /// The marker is there but `due` lost its sentinel: `due` itself was
    /// evicted, deleted or not replicated. Rebuilt like `Missing`.
    DueLost,
    /// Complete, but written by a build with another member format.
    OtherFormat,
}

impl RedisIndex {
    fn marker_key(&self) -> String {
        format!("{0}:{{{0}}}:indexed", self.prefix())
    }

    fn lock_key(&self) -> String {
        format!("{0}:{{{0}}}:rebuild-lock", self.prefix())
    }

    /// Whether the index is known to be complete, and in this build's format.
    pub async fn index_state(&self) -> Result<IndexState, DueError> {
        let key = self.marker_key();
        let due = &self.keys().due;
        let (marker, sentinel): (Option<String>, Option<f64>) = self
            .run(|p| {
                p.get(&key);
                p.zscore(due, DUE_SENTINEL);
            })
            .await?;
        Ok(match marker {
            None => IndexState::Missing,
            Some(value) if !value.starts_with(INDEX_FORMAT) => IndexState::OtherFormat,
            Some(_) if sentinel.is_none() => IndexState::DueLost,
            Some(_) => IndexState::Complete,
        })
    }

    /// Whether the index is complete and current (see `index_state`).
    pub async fn is_indexed(&self) -> Result<bool, DueError> {
        Ok(self.index_state().await? == IndexState::Complete)
    }

    /// Marks the index complete: the marker, and the sentinel in `due`.
    pub async fn mark_indexed(&self) -> Result<(), DueError> {
        let key = self.marker_key();
        let due = &self.keys().due;
        let value = format!("{INDEX_FORMAT}{}", Utc::now().timestamp_millis());
        self.run::<()>(|p| {
            p.atomic();
            p.cmd("ZADD")
                .arg(due)
                .arg("+inf")
                .arg(DUE_SENTINEL)
                .ignore();
            p.set(&key, value).ignore();
        })
        .await
    }

    /// Drops the whole index, leases included, and its marker: what a rebuild
    /// does first when it finds an index of another format. Deliveries in
    /// flight then may be sent once more (the rebuild cannot tell them from
    /// the rest), as after any loss of Redis.
    pub async fn clear_index(&self) -> Result<(), DueError> {
        let keys = self.keys().clone();
        let marker = self.marker_key();
        self.run::<()>(|p| {
            p.atomic();
            p.del(&keys.due).ignore();
            p.del(&keys.inflight).ignore();
            p.del(&marker).ignore();
        })
        .await
    }

    /// Takes the rebuild lock for `ttl`, or returns `None` if another process
    /// holds it. Renew by calling again with the same token.
    pub async fn lock_rebuild(&self, token: &str, ttl: Duration) -> Result<bool, DueError> {
        let key = self.lock_key();
        let ttl_ms = ttl.as_millis() as u64;
        let (held,): (Option<String>,) = self
            .run(|p| {
                p.cmd("SET")
                    .arg(&key)
                    .arg(token)
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl_ms);
            })
            .await?;
        if held.is_some() {
            return Ok(true);
        }
        // Ours already? Then extend it.
        let (current,): (Option<String>,) = self
            .run(|p| {
                p.get(&key);
            })
            .await?;
        if current.as_deref() == Some(token) {
            self.run::<()>(|p| {
                p.pexpire(&key, ttl_ms as i64).ignore();
            })
            .await?;
            return Ok(true);
        }
        Ok(false)
    }

    pub async fn unlock_rebuild(&self, token: &str) -> Result<(), DueError> {
        let mut conn = self.conn().await?;
        let released: Result<i64, _> = RELEASE_LOCK
            .key(self.lock_key())
            .arg(token)
            .invoke_async(&mut conn)
            .await;
        self.observed(released.map_err(DueError::from))?;
        Ok(())
    }

    /// Adds the entries that are in neither `due` nor `inflight`; returns how
    /// many were added.
    pub async fn add_missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError> {
        Ok(self.missing_among(entries, Mode::Add).await?.len())
    }

    /// As `add_missing`, and moves to its time an entry that is due later
    /// (a retry whose write Redis refused left it at its old time); returns
    /// how many were added or moved.
    pub async fn add_marked(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError> {
        Ok(self
            .missing_among(entries, Mode::AddOrMoveEarlier)
            .await?
            .len())
    }

    /// The ids among `entries` that are in neither `due` nor `inflight`,
    /// changing nothing.
    pub async fn missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<Vec<Uuid>, DueError> {
        self.missing_among(entries, Mode::Look).await
    }

    async fn missing_among(
        &self,
        entries: &[(Uuid, DateTime<Utc>)],
        mode: Mode,
    ) -> Result<Vec<Uuid>, DueError> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn().await?;
        let mut invocation = ADD_MISSING.prepare_invoke();
        invocation
            .key(&self.keys().due)
            .key(&self.keys().inflight)
            .arg(mode.arg());
        for (id, at) in entries {
            invocation.arg(score(*at)).arg(member(id));
        }
        let found: Vec<Vec<u8>> = self.observed(
            match tokio::time::timeout(self.timeout * 10, invocation.invoke_async(&mut conn)).await
            {
                Ok(result) => result.map_err(DueError::from),
                Err(_) => Err(DueError::Timeout(self.timeout * 10)),
            },
        )?;
        found.iter().map(|m| parse_member(m)).collect()
    }
}

/// Rows read per page of a rebuild.
const PAGE: i64 = 5000;
/// How long the rebuild lock lasts without being renewed.
const LOCK_TTL: std::time::Duration = std::time::Duration::from_secs(30);

impl RedisIndex {
    /// Rebuilds `due` from every pending row when the marker says it was
    /// lost, if this process gets the lock.
    pub(super) async fn restore_from(
        &self,
        rows: &dyn PendingRows,
        shutdown: &tokio_util::sync::CancellationToken,
    ) -> Result<Option<Restored>, RestoreError> {
        if self.index_state().await? == IndexState::Complete {
            return Ok(None);
        }
        let token = &*self.token;
        if !self.lock_rebuild(token, LOCK_TTL).await? {
            return Ok(None);
        }
        // Looked at again under the lock: another process may have rebuilt it.
        match self.index_state().await? {
            IndexState::Complete => {
                self.unlock_rebuild(token).await?;
                return Ok(None);
            }
            IndexState::Missing => tracing::warn!(
                "the due index marker is missing (Redis restarted, flushed or failed over): rebuilding"
            ),
            IndexState::DueLost => tracing::warn!(
                "the due set lost its sentinel while the marker stayed (evicted, deleted or not replicated): rebuilding"
            ),
            IndexState::OtherFormat => {
                tracing::warn!(
                    "the due index was written by a build with another member format: clearing and rebuilding it"
                );
                self.clear_index().await?;
            }
        }
        let started = std::time::Instant::now();
        let mut cursor = None;
        let mut added = 0;
        loop {
            if shutdown.is_cancelled() {
                self.unlock_rebuild(token).await?;
                return Ok(None);
            }
            let page = rows.pending_page(cursor, PAGE).await?;
            added += self.add_missing(&page).await?;
            if (page.len() as i64) < PAGE {
                break;
            }
            cursor = page.last().map(|(id, at)| (*at, *id));
            self.lock_rebuild(token, LOCK_TTL).await?;
        }
        self.mark_indexed().await?;
        self.unlock_rebuild(token).await?;
        Ok(Some(Restored {
            added,
            took: started.elapsed(),
        }))
    }
}
