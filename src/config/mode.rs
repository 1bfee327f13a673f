//! Which mode the settings choose (docs/design.md §12): embedded when neither
//! `database.url` nor a Redis (`redis.url`, `redis.sentinels` or
//! `redis.cluster`) is set, server when both are. Checked
//! where a mode is needed (`serve`, `migrate`, `config check`), not at load:
//! tests and tools that bring their own store load settings without one.

use std::path::PathBuf;

use super::{ConfigError, Settings};

/// Where hookd keeps its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// One process, a SQLite file at `path`, the due index in memory.
    Embedded { path: PathBuf },
    /// PostgreSQL and Redis, shared by any number of processes.
    Server,
}

impl Settings {
    /// The mode these settings choose, or why they choose none.
    pub fn mode(&self) -> Result<Mode, ConfigError> {
        let database = !self.database.url.expose().is_empty();
        let redis = self.redis.is_set();
        match (database, redis) {
            (false, false) if !self.database.read_url.expose().is_empty() => {
                Err(ConfigError::Invalid {
                    key: "database.read_url",
                    reason: "is a replica of database.url: it needs server mode \
                             (database.url and redis.url), and embedded mode has none"
                        .to_string(),
                })
            }
            (false, false) => Ok(Mode::Embedded {
                path: self.embedded.path.clone(),
            }),
            (true, true) if cfg!(feature = "server") => Ok(Mode::Server),
            (true, true) => Err(ConfigError::Invalid {
                key: "database.url",
                reason: NO_SERVER_MODE.to_string(),
            }),
            (true, false) => Err(half_server("database.url", "redis.url")),
            (false, true) => Err(half_server(self.redis_key(), "database.url")),
        }
    }

    /// One line for `config check`: the mode and why.
    pub fn mode_line(&self) -> Result<String, ConfigError> {
        Ok(match self.mode()? {
            Mode::Embedded { path } => format!(
                "embedded (database.url and redis.url are empty): SQLite at {}, the due index in this process",
                path.display()
            ),
            Mode::Server if !self.redis.cluster.is_empty() => {
                "server (database.url and redis.cluster are set): PostgreSQL and a Redis Cluster"
                    .to_string()
            }
            Mode::Server if !self.redis.sentinels.is_empty() => format!(
                "server (database.url and redis.sentinels are set): PostgreSQL and the Redis master \
                 the sentinels name for `{}`",
                self.redis.master_name
            ),
            Mode::Server => {
                "server (database.url and redis.url are set): PostgreSQL and Redis".to_string()
            }
        })
    }
}

impl Settings {
    /// The key that configures Redis here, for messages.
    fn redis_key(&self) -> &'static str {
        if !self.redis.cluster.is_empty() {
            "redis.cluster"
        } else if !self.redis.sentinels.is_empty() {
            "redis.sentinels"
        } else {
            "redis.url"
        }
    }
}

/// Why a build without the `server` feature refuses server settings.
pub const NO_SERVER_MODE: &str = "and a Redis are set (server mode), but this hookd was built \
     without server mode, as scripts/run builds it (`--no-default-features`): \
     build it with `cargo build --release`, or start it with scripts/run-server";

fn half_server(set: &'static str, missing: &str) -> ConfigError {
    ConfigError::Invalid {
        key: set,
        reason: format!(
            "is set but {missing} is empty: server mode needs both (PostgreSQL and Redis), \
             embedded mode neither"
        ),
    }
}
