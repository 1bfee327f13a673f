//! Settings: the compiled-in `config/default.toml`, then an optional file, then
//! `HOOKD_<SECTION>__<KEY>` environment variables. Validated once, at load, so
//! the rest of hookd can trust every value.
//!
//! `sections` holds the settings types and the limits they are checked
//! against, `load` the layering and the error and TOML renderings,
//! `validate` the checks made at load and the warnings, `tokens` the
//! `api.tokens` entries. Everything public is named here, so other modules
//! use `crate::config::X` whichever file defines it.

mod load;
mod mode;
mod portal;
mod readers;
mod sections;
mod tls;
mod tokens;
mod validate;
mod warnings;

pub use load::DEFAULT_TOML;
pub use mode::{Mode, NO_SERVER_MODE};
pub use portal::{PortalSettings, MIN_PORTAL_KEY_BYTES};
pub use sections::RateLimitSettings;
pub use sections::{
    ApiSettings, DatabaseSettings, DispatcherSettings, EmbeddedSettings, LogFormat, LogSettings,
    OperatorSettings, PullSettings, RedisSettings, RetentionSettings, Secret, SecretKeySettings,
    SecretsSettings, SenderSettings, ServerSettings, Settings, TelemetrySettings, LEASE_MARGIN,
    MAX_ENDPOINT_TIMEOUT, MAX_ROTATION_OVERLAP, PULL_MAX_WAIT, STORED_BODY_BYTES,
};
pub use tls::read_ca_file;
pub use tokens::{digest, Credential, ScopedToken, TokenSpec, MIN_TOKEN_CHARS};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid configuration: {0}")]
    Load(String),
    #[error("invalid configuration: `{key}` {reason}")]
    Invalid { key: &'static str, reason: String },
}

#[cfg(test)]
mod tests;
