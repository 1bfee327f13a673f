//! Where Redis Sentinel says the master is: `redis.sentinels` asked in
//! turn for `redis.master_name` (`SENTINEL get-master-addr-by-name`).
//!
//! `link` asks at the first use, after a command fails the way a failover
//! makes it fail, and once a second while every command succeeds (a
//! switchover fails no command; see `link`'s doc). Each sentinel's
//! connection is kept between questions and dropped when one fails, so the
//! check of every second opens no connection while the sentinels answer.

use std::time::Duration;

use redis::aio::MultiplexedConnection;

use super::clients::client;
use super::DueError;
use crate::config::RedisSettings;

/// No sentinel named a master: hookd cannot tell where Redis is now. It
/// says which sentinels it asked and what each answered: a wrong
/// `master_name` (they answer, naming none) reads otherwise than
/// sentinels that are all down.
#[derive(Debug, thiserror::Error)]
#[error("no sentinel named a master for redis.master_name `{name}`: {answers}")]
pub(crate) struct NoMaster {
    name: String,
    answers: String,
}

impl From<NoMaster> for DueError {
    fn from(error: NoMaster) -> Self {
        DueError::Unavailable(Box::new(error))
    }
}

/// One sentinel: its client, its address as configured (for errors), and
/// the connection kept from its last answer.
struct Sentinel {
    client: redis::Client,
    address: String,
    kept: tokio::sync::Mutex<Option<MultiplexedConnection>>,
}

pub(super) struct Sentinels {
    sentinels: Vec<Sentinel>,
    master_name: String,
    /// `redis.url`: its scheme, credentials and database apply to the
    /// master; its address is replaced by the one the sentinels give.
    template: url::Url,
    timeout: Duration,
}

impl Sentinels {
    pub(super) fn new(settings: &RedisSettings) -> Result<Self, DueError> {
        let sentinels = (settings.sentinels.iter())
            .map(|address| {
                Ok(Sentinel {
                    client: redis::Client::open(format!("redis://{address}"))?,
                    address: address.clone(),
                    kept: tokio::sync::Mutex::new(None),
                })
            })
            .collect::<Result<_, redis::RedisError>>()?;
        // Without `url`, the master is plain `redis://` with no credentials
        // and database 0 (the Sentinel example in docs/operating.md).
        let template = match settings.url.expose() {
            "" => "redis://sentinel-master",
            url => url,
        };
        let template = url::Url::parse(template).map_err(|_| {
            DueError::from(redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "redis.url is not a URL",
            )))
        })?;
        Ok(Self {
            sentinels,
            master_name: settings.master_name.clone(),
            template,
            timeout: Duration::from_millis(settings.timeout_ms),
        })
    }

    /// A client for the master the first answering sentinel names, and its
    /// address; `NoMaster`, with each sentinel's answer, when none names one.
    pub(super) async fn master(
        &self,
        settings: &RedisSettings,
    ) -> Result<(redis::Client, String), DueError> {
        let mut answers = Vec::new();
        for sentinel in &self.sentinels {
            match self.ask(sentinel).await {
                Ok((host, port)) => {
                    let mut url = self.template.clone();
                    let host_set = url.set_host(Some(&host)).is_ok();
                    if host_set && url.set_port(Some(port)).is_ok() {
                        let client = client(url.as_str(), settings)?;
                        return Ok((client, format!("{host}:{port}")));
                    }
                    answers.push(format!("{}: named `{host}:{port}`", sentinel.address));
                }
                Err(DueError::Unavailable(cause)) => {
                    answers.push(format!("{}: {cause}", sentinel.address))
                }
                Err(error) => answers.push(format!("{}: {error}", sentinel.address)),
            }
        }
        Err(NoMaster {
            name: self.master_name.clone(),
            answers: answers.join("; "),
        }
        .into())
    }

    /// The address (`host:port`) the first answering sentinel names; none
    /// when no sentinel answers with one.
    pub(super) async fn named(&self) -> Option<String> {
        for sentinel in &self.sentinels {
            if let Ok((host, port)) = self.ask(sentinel).await {
                return Some(format!("{host}:{port}"));
            }
        }
        None
    }

    /// `SENTINEL get-master-addr-by-name` of one sentinel, over its kept
    /// connection or a new one; a failure drops the connection.
    async fn ask(&self, sentinel: &Sentinel) -> Result<(String, u16), DueError> {
        let mut kept = sentinel.kept.lock().await;
        let question = async {
            let conn = match kept.as_mut() {
                Some(conn) => conn,
                None => kept.insert(sentinel.client.get_multiplexed_async_connection().await?),
            };
            let answer: Option<(String, u16)> = redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(&self.master_name)
                .query_async(conn)
                .await?;
            Ok::<_, redis::RedisError>(answer)
        };
        let answer = tokio::time::timeout(self.timeout, question).await;
        if !matches!(answer, Ok(Ok(_))) {
            *kept = None;
        }
        match answer {
            Ok(Ok(Some(address))) => Ok(address),
            Ok(Ok(None)) => Err(DueError::Unavailable(
                "it knows no master by that name (its `sentinel monitor` lines name the master)"
                    .into(),
            )),
            Ok(Err(error)) => Err(error.into()),
            Err(_) => Err(DueError::Timeout(self.timeout)),
        }
    }
}
