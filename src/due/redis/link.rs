//! How hookd reaches Redis: one `redis.url`, the master that Redis
//! Sentinel names (`redis.sentinels` + `redis.master_name`), or a Redis
//! Cluster (`redis.cluster`), each behind one `Conn`.
//!
//! With Sentinel, the master's address is asked of the sentinels
//! (`sentinel`) at the first use and again whenever a command fails the
//! way a failover makes it fail (connection refused or dropped, a timeout,
//! `READONLY` from a demoted master). When the answer is a new address,
//! hookd connects there and counts a new *epoch*; the housekeeper then
//! re-adds recent rows, which a promoted replica may not have received.
//!
//! A switchover (`SENTINEL FAILOVER`, a replica promoted while the old
//! master still runs) fails no command: the old master takes writes until
//! the sentinels make it a replica, about ten seconds, and what hookd wrote
//! there is lost when it resyncs, while a process started meanwhile uses
//! the new master, and the two indexes each send what they hold (a review
//! saw 7 deliveries twice). So the housekeeper's tick asks a sentinel
//! which master it names, at most once per `CHECK_MASTER_EVERY`
//! (`Link::check_master`), and hookd follows a new one at once.
//!
//! A cluster connection follows the slots by itself after `MOVED`,
//! `READONLY` or a closed connection. It does not after a timeout: a
//! master that hangs (its machine frozen, its packets dropped) keeps its
//! sockets open and its slots in the client's map, and every command for
//! them times out long after its replica took over. So once commands have
//! kept failing the way a failover makes them fail for `RENEW_AFTER`,
//! hookd makes a new cluster connection, its map read afresh from the
//! nodes the old one still sees (`CLUSTER SLOTS` through it), then the
//! seed nodes: the seeds may be the node that hangs, or all be gone since
//! hookd started. In the background; commands go on over the old one
//! until it is ready. A new epoch is counted at the first command that
//! succeeds after one failed the way a failover makes it fail: by then the
//! replica has taken over, and what it may lack can be re-added.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;

use super::clients::{client, cluster_client, cluster_client_with, nodes_in_slots, Client};
use super::sentinel::Sentinels;
use super::DueError;
use crate::config::RedisSettings;

mod guarded;

/// Least time between two questions to the sentinels, so a burst of failing
/// commands asks once.
const RESOLVE_EVERY: Duration = Duration::from_millis(250);

/// Least time between two checks of the master the sentinels name while
/// every command succeeds (`Link::check_master`).
const CHECK_MASTER_EVERY: Duration = Duration::from_secs(1);

/// How long a cluster's commands keep failing the way a failover makes them
/// fail (with no pause as long between two failures) before hookd renews
/// its cluster connection; also the least time between two renewals. A
/// failover takes the cluster's `cluster-node-timeout` (15 s by default)
/// and an election: a renewal before the replica is promoted reads the
/// same map, and the next one, 5 s on, reads the new one.
const RENEW_AFTER: Duration = Duration::from_secs(5);

/// How many times a renewal asks for the slot map through the current
/// connection before it falls back on the seeds alone.
const KNOWN_NODES_TRIES: usize = 4;

enum Source {
    Direct(redis::Client),
    Sentinel(Sentinels),
    Cluster(Box<redis::cluster::ClusterClient>),
}

/// A connection to wherever Redis is: one server (direct or the master
/// Sentinel names) or a cluster, which routes each command (a script
/// call, a pipeline) to the master of its keys' slot.
#[derive(Clone)]
pub(crate) enum Conn {
    One(ConnectionManager),
    Cluster(ClusterConnection),
}

impl redis::aio::ConnectionLike for Conn {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            Conn::One(conn) => conn.req_packed_command(cmd),
            Conn::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Conn::One(conn) => conn.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::One(conn) => conn.get_db(),
            Conn::Cluster(conn) => conn.get_db(),
        }
    }
}

pub(crate) struct Link {
    source: Source,
    /// For the master's client: `ca_file`, and the url's TLS.
    settings: RedisSettings,
    timeout: Duration,
    current: RwLock<Option<(Conn, String)>>,
    /// Held while (re)connecting, so concurrent callers connect once.
    connecting: tokio::sync::Mutex<Option<Instant>>,
    stale: AtomicBool,
    /// On a cluster: a command failed as a failover makes it fail.
    failing: AtomicBool,
    /// On a cluster: when the current run of failures began and when its
    /// last failure was (see `RENEW_AFTER`).
    streak: Mutex<Option<(Instant, Instant)>>,
    /// On a cluster: a new connection is being made in the background.
    renewing: AtomicBool,
    /// Set once the recorded layout matched this process's (`layout`).
    laid_out: tokio::sync::OnceCell<()>,
    /// What the checks of a running process found (`check_layout`).
    layout: super::layout::Guard,
    /// Redis refused `ZADD GT` (before 6.2): hand-offs go through the
    /// script that does the same (`RedisIndex::lease_ids`).
    pub(crate) without_zadd_gt: AtomicBool,
    epoch: AtomicU64,
    /// With Sentinel: when the master was last checked (`check_master`).
    master_checked: Mutex<Option<Instant>>,
}

impl Link {
    pub(crate) fn new(settings: &RedisSettings) -> Result<Self, DueError> {
        let source = if !settings.cluster.is_empty() {
            Source::Cluster(Box::new(cluster_client(settings)?))
        } else if settings.sentinels.is_empty() {
            Source::Direct(client(settings.url.expose(), settings)?)
        } else {
            Source::Sentinel(Sentinels::new(settings)?)
        };
        Ok(Self {
            source,
            settings: settings.clone(),
            timeout: Duration::from_millis(settings.timeout_ms),
            current: RwLock::new(None),
            connecting: tokio::sync::Mutex::new(None),
            stale: Default::default(),
            failing: Default::default(),
            streak: Mutex::new(None),
            renewing: Default::default(),
            laid_out: tokio::sync::OnceCell::new(),
            layout: Default::default(),
            without_zadd_gt: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            master_checked: Mutex::new(None),
        })
    }

    /// How many times hookd has moved to another master; 0 before the first
    /// connection and without Sentinel, 1 after it connects.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    async fn connection(&self) -> Result<Conn, DueError> {
        if !self.stale.load(Ordering::Acquire) {
            if let Some((conn, _)) = &*self.current.read().expect("redis link lock") {
                return Ok(conn.clone());
            }
        }
        let mut last_try = self.connecting.lock().await;
        // Someone else may have connected while this caller waited.
        if !self.stale.load(Ordering::Acquire) {
            if let Some((conn, _)) = &*self.current.read().expect("redis link lock") {
                return Ok(conn.clone());
            }
        }
        if last_try.is_some_and(|at| at.elapsed() < RESOLVE_EVERY) {
            if let Some((conn, _)) = &*self.current.read().expect("redis link lock") {
                return Ok(conn.clone());
            }
        }
        *last_try = Some(Instant::now());
        let (client, address) = self.resolve().await?;
        let known = self
            .current
            .read()
            .expect("redis link lock")
            .as_ref()
            .filter(|(_, at)| *at == address)
            .map(|(conn, _)| conn.clone());
        let conn = match known {
            Some(conn) => conn,
            None => {
                let conn = self.connect(client).await?;
                let previous = self
                    .current
                    .write()
                    .expect("redis link lock")
                    .replace((conn.clone(), address.clone()));
                self.epoch.fetch_add(1, Ordering::AcqRel);
                if let Some((_, before)) = previous {
                    tracing::warn!(from = %before, to = %address, "the Redis master changed; following it");
                }
                conn
            }
        };
        self.stale.store(false, Ordering::Release);
        Ok(conn)
    }

    /// With Sentinel, asks a sentinel which master it names (at most once
    /// per `CHECK_MASTER_EVERY`) and, when it is not the one hookd is on,
    /// has the next command connect to it (see the module's doc). A
    /// sentinel that does not answer is passed over for the next; none
    /// answering changes nothing: commands that fail ask again.
    pub(crate) async fn check_master(&self) {
        let Source::Sentinel(sentinels) = &self.source else {
            return;
        };
        {
            let mut checked = self.master_checked.lock().expect("redis link check");
            if checked.is_some_and(|at| at.elapsed() < CHECK_MASTER_EVERY) {
                return;
            }
            *checked = Some(Instant::now());
        }
        let on = (self.current.read().expect("redis link lock").as_ref())
            .map(|(_, address)| address.clone());
        let Some(on) = on else {
            // Not connected yet: the first command asks.
            return;
        };
        if sentinels.named().await.is_some_and(|named| named != on) {
            self.stale.store(true, Ordering::Release);
        }
    }

    /// Notes a command that succeeded: on a cluster, the first after a
    /// failover counts a new epoch (see the module's doc).
    pub(crate) fn succeeded(&self) {
        if self.failing.load(Ordering::Acquire) && self.failing.swap(false, Ordering::AcqRel) {
            self.epoch.fetch_add(1, Ordering::AcqRel);
            tracing::warn!("the Redis Cluster answers again after a failure: re-adding recent rows a promoted replica may lack");
        }
    }

    /// Notes a failed command. With Sentinel, a failure that a failover
    /// causes makes the next command ask the sentinels again; on a cluster,
    /// the next success counts a new epoch, and failures that go on for
    /// `RENEW_AFTER` renew the connection.
    pub(crate) fn failed(self: &Arc<Self>, error: &DueError) {
        if matches!(self.source, Source::Direct(_)) {
            return;
        }
        let failover = match error {
            DueError::Timeout(_) => true,
            DueError::Unavailable(source) => match source.downcast_ref::<redis::RedisError>() {
                Some(e) => {
                    e.is_io_error()
                        || e.is_connection_refusal()
                        || e.is_connection_dropped()
                        || e.is_timeout()
                        || matches!(
                            e.code(),
                            Some("READONLY" | "CLUSTERDOWN" | "TRYAGAIN" | "MASTERDOWN")
                        )
                }
                None => source.is::<super::sentinel::NoMaster>(),
            },
            DueError::Malformed(_) => false,
        };
        match (&self.source, failover) {
            (Source::Cluster(client), true) => {
                self.failing.store(true, Ordering::Release);
                if self.failing_for(RENEW_AFTER, Instant::now()) {
                    self.renew((**client).clone());
                }
            }
            (_, true) => self.stale.store(true, Ordering::Release),
            (_, false) => {}
        }
    }

    /// Notes a failure at `now`; true when failures have gone on for
    /// `window`, none of them `window` after the one before, since the
    /// run began. A true answer begins a new run.
    fn failing_for(&self, window: Duration, now: Instant) -> bool {
        let mut streak = self.streak.lock().expect("redis link streak");
        let began = match *streak {
            Some((began, last)) if now.saturating_duration_since(last) < window => began,
            _ => now,
        };
        if now.saturating_duration_since(began) >= window {
            *streak = None;
            return true;
        }
        *streak = Some((began, now));
        false
    }

    /// Makes a new cluster connection in the background and puts it in
    /// place of the current one once it is ready; one at a time.
    fn renew(self: &Arc<Self>, client: redis::cluster::ClusterClient) {
        if self.renewing.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::warn!(
            after = ?RENEW_AFTER,
            "Redis Cluster commands keep failing: renewing the connection and its slot map"
        );
        let link = Arc::clone(self);
        tokio::spawn(async move {
            // The nodes the current connection can still see come first:
            // the seeds may all be gone (replaced since hookd started) or
            // be the very node that hangs.
            let known = link.known_nodes().await;
            let client = match cluster_client_with(&link.settings, &known) {
                Ok(fresh) if !known.is_empty() => fresh,
                _ => client,
            };
            match link.connect(Client::Cluster(client)).await {
                Ok(conn) => {
                    *link.current.write().expect("redis link lock") = Some((conn, String::new()));
                    tracing::info!("the Redis Cluster connection is renewed");
                }
                Err(error) => {
                    tracing::warn!(%error, "renewing the Redis Cluster connection failed")
                }
            }
            link.renewing.store(false, Ordering::Release);
        });
    }

    /// The nodes (host, port) of the cluster's slot map as a node that
    /// answers sees it (`CLUSTER SLOTS`, which the client sends to a node
    /// at random: a few tries pass over one that hangs); none if no node
    /// answers.
    async fn known_nodes(&self) -> Vec<(String, u16)> {
        let current =
            (self.current.read().expect("redis link lock").as_ref()).map(|(conn, _)| conn.clone());
        let Some(mut conn) = current else {
            return Vec::new();
        };
        let mut slots = redis::cmd("CLUSTER");
        slots.arg("SLOTS");
        for _ in 0..KNOWN_NODES_TRIES {
            let asked = tokio::time::timeout(self.timeout, slots.query_async(&mut conn)).await;
            if let Ok(Ok(redis::Value::Array(ranges))) = asked {
                return nodes_in_slots(&ranges);
            }
        }
        Vec::new()
    }

    /// The client for the master and its address.
    async fn resolve(&self) -> Result<(Client, String), DueError> {
        match &self.source {
            Source::Direct(client) => Ok((Client::One(client.clone()), String::new())),
            Source::Cluster(client) => Ok((Client::Cluster((**client).clone()), String::new())),
            Source::Sentinel(sentinels) => {
                let (client, address) = sentinels.master(&self.settings).await?;
                Ok((Client::One(client), address))
            }
        }
    }

    /// How long a new connection may take. A cluster connection connects to
    /// every seed node at once and checks each with a `PING` (a node that
    /// hangs answers none: the client's response timeout, 4 × `timeout_ms`),
    /// then reads the slot map and checks every node in it: twice that, and
    /// the connection timeout, with room to spare.
    fn connect_limit(&self) -> Duration {
        match self.source {
            Source::Cluster(_) => self.timeout * 12,
            _ => self.timeout * 2,
        }
    }

    async fn connect(&self, client: Client) -> Result<Conn, DueError> {
        let connecting = async {
            match client {
                Client::One(client) => {
                    let config = ConnectionManagerConfig::new()
                        .set_connection_timeout(Some(self.timeout))
                        .set_response_timeout(Some(self.timeout))
                        .set_number_of_retries(1);
                    ConnectionManager::new_with_config(client, config)
                        .await
                        .map(Conn::One)
                }
                Client::Cluster(client) => client.get_async_connection().await.map(Conn::Cluster),
            }
        };
        let limit = self.connect_limit();
        match tokio::time::timeout(limit, connecting).await {
            Ok(result) => result.map_err(DueError::from),
            Err(_) => Err(DueError::Timeout(limit)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;

    fn cluster_link() -> Link {
        let settings =
            Settings::from_toml_overrides("[redis]\ncluster = [\"redis://127.0.0.1:1\"]\n")
                .unwrap();
        Link::new(&settings.redis).unwrap()
    }

    #[test]
    fn failures_that_go_on_for_the_window_call_for_a_renewal_once_and_then_begin_a_new_run() {
        let link = cluster_link();
        let window = Duration::from_secs(5);
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        for second in 0..5 {
            assert!(!link.failing_for(window, at(second)), "at {second} s");
        }
        assert!(link.failing_for(window, at(5)), "5 s of failures");
        // A new run begins with the next failure.
        assert!(!link.failing_for(window, at(6)));
        assert!(!link.failing_for(window, at(10)));
        assert!(link.failing_for(window, at(11)));
    }

    #[test]
    fn a_pause_as_long_as_the_window_between_two_failures_begins_a_new_run() {
        let link = cluster_link();
        let window = Duration::from_secs(5);
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        assert!(!link.failing_for(window, at(0)));
        assert!(!link.failing_for(window, at(4)));
        // 5 s without a failure: the run that began at 0 is over.
        assert!(!link.failing_for(window, at(9)));
        assert!(!link.failing_for(window, at(13)));
        assert!(link.failing_for(window, at(14)));
    }
}
