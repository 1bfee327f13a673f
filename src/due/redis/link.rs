//! How hookd reaches Redis: one `redis.url`, or the master that Redis
//! Sentinel names (`redis.sentinels` + `redis.master_name`).
//!
//! With Sentinel, the master's address is asked of the sentinels at the first
//! use and again whenever a command fails the way a failover makes it fail
//! (connection refused or dropped, a timeout, `READONLY` from a demoted
//! master). When the answer is a new address, hookd connects there and
//! counts a new *epoch*; the housekeeper then re-adds recent rows, which a
//! promoted replica may not have received.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::DueError;
use crate::config::RedisSettings;

/// No sentinel named a master: hookd cannot tell where Redis is now.
#[derive(Debug, thiserror::Error)]
#[error("no sentinel named a master for redis.master_name")]
pub(crate) struct NoMaster;

impl From<NoMaster> for DueError {
    fn from(error: NoMaster) -> Self {
        DueError::Unavailable(Box::new(error))
    }
}

/// Least time between two questions to the sentinels, so a burst of failing
/// commands asks once.
const RESOLVE_EVERY: Duration = Duration::from_millis(250);

enum Source {
    Direct(redis::Client),
    Sentinel {
        sentinels: Vec<redis::Client>,
        master_name: String,
        /// `redis.url`: its scheme, credentials and database apply to the
        /// master; its address is replaced by the one the sentinels give.
        template: url::Url,
    },
}

pub(crate) struct Link {
    source: Source,
    /// For the master's client: `ca_file`, and the url's TLS.
    settings: RedisSettings,
    timeout: Duration,
    current: RwLock<Option<(ConnectionManager, String)>>,
    /// Held while (re)connecting, so concurrent callers connect once.
    connecting: tokio::sync::Mutex<Option<Instant>>,
    stale: std::sync::atomic::AtomicBool,
    epoch: AtomicU64,
}

impl Link {
    pub(crate) fn new(settings: &RedisSettings) -> Result<Self, DueError> {
        let source = if settings.sentinels.is_empty() {
            Source::Direct(client(settings.url.expose(), settings)?)
        } else {
            let sentinels = settings
                .sentinels
                .iter()
                .map(|address| redis::Client::open(format!("redis://{address}")))
                .collect::<Result<_, _>>()?;
            let template = url::Url::parse(settings.url.expose()).map_err(|_| {
                DueError::from(redis::RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "redis.url is not a URL",
                )))
            })?;
            Source::Sentinel {
                sentinels,
                master_name: settings.master_name.clone(),
                template,
            }
        };
        Ok(Self {
            source,
            settings: settings.clone(),
            timeout: Duration::from_millis(settings.timeout_ms),
            current: RwLock::new(None),
            connecting: tokio::sync::Mutex::new(None),
            stale: Default::default(),
            epoch: AtomicU64::new(0),
        })
    }

    /// How many times hookd has moved to another master; 0 before the first
    /// connection and without Sentinel, 1 after it connects.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// A connection to the current master.
    pub(crate) async fn conn(&self) -> Result<ConnectionManager, DueError> {
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

    /// Notes a failed command. With Sentinel, a failure that a failover
    /// causes makes the next command ask the sentinels again.
    pub(crate) fn failed(&self, error: &DueError) {
        if !matches!(self.source, Source::Sentinel { .. }) {
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
                        || e.code() == Some("READONLY")
                }
                None => source.is::<NoMaster>(),
            },
            DueError::Malformed(_) => false,
        };
        if failover {
            self.stale.store(true, Ordering::Release);
        }
    }

    /// The client for the master and its address.
    async fn resolve(&self) -> Result<(redis::Client, String), DueError> {
        match &self.source {
            Source::Direct(client) => Ok((client.clone(), String::new())),
            Source::Sentinel {
                sentinels,
                master_name,
                template,
            } => {
                let mut last_error = None;
                for sentinel in sentinels {
                    match self.ask(sentinel, master_name).await {
                        Ok((host, port)) => {
                            let mut url = template.clone();
                            let host_set = url.set_host(Some(&host)).is_ok();
                            if host_set && url.set_port(Some(port)).is_ok() {
                                let client = client(url.as_str(), &self.settings)?;
                                return Ok((client, format!("{host}:{port}")));
                            }
                        }
                        Err(error) => last_error = Some(error),
                    }
                }
                Err(last_error.unwrap_or_else(|| NoMaster.into()))
            }
        }
    }

    /// `SENTINEL get-master-addr-by-name`, of one sentinel.
    async fn ask(
        &self,
        sentinel: &redis::Client,
        master_name: &str,
    ) -> Result<(String, u16), DueError> {
        let question = async {
            let mut conn = sentinel.get_multiplexed_async_connection().await?;
            let answer: Option<(String, u16)> = redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(master_name)
                .query_async(&mut conn)
                .await?;
            Ok::<_, redis::RedisError>(answer)
        };
        match tokio::time::timeout(self.timeout, question).await {
            Ok(Ok(Some(address))) => Ok(address),
            Ok(Ok(None)) => Err(NoMaster.into()),
            Ok(Err(error)) => Err(error.into()),
            Err(_) => Err(DueError::Timeout(self.timeout)),
        }
    }

    async fn connect(&self, client: redis::Client) -> Result<ConnectionManager, DueError> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
            .set_number_of_retries(1);
        match tokio::time::timeout(
            self.timeout * 2,
            ConnectionManager::new_with_config(client, config),
        )
        .await
        {
            Ok(result) => result.map_err(DueError::from),
            Err(_) => Err(DueError::Timeout(self.timeout)),
        }
    }
}

/// A client for one Redis server at `url`. `rediss://` verifies against the
/// bundled public roots, or only against `redis.ca_file` when it is set (a
/// private CA replaces the public roots: only it may vouch).
fn client(url: &str, settings: &RedisSettings) -> Result<redis::Client, DueError> {
    if settings.ca_file.is_empty() {
        return Ok(redis::Client::open(url)?);
    }
    let pem = crate::config::read_ca_file(&settings.ca_file).map_err(|reason| {
        DueError::from(redis::RedisError::from((
            redis::ErrorKind::InvalidClientConfig,
            "redis.ca_file",
            reason,
        )))
    })?;
    Ok(redis::Client::build_with_tls(
        url,
        redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem),
        },
    )?)
}
