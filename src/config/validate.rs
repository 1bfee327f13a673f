//! The checks made once at load, each refusal naming its key (the
//! warnings about settings that work are `warnings`).

use super::read_ca_file;
use super::{
    ConfigError, Settings, LEASE_MARGIN, MAX_ENDPOINT_TIMEOUT, MAX_ROTATION_OVERLAP, PULL_MAX_WAIT,
    STORED_BODY_BYTES,
};

/// The most connections a PostgreSQL pool may hold: PostgreSQL's own
/// `max_connections` is seldom past a few thousand.
const MAX_DATABASE_CONNECTIONS: u32 = 10_000;

impl Settings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, reason: &str| ConfigError::Invalid {
            key,
            reason: reason.to_string(),
        };
        if self.redis.prefix.is_empty()
            || self.redis.prefix.contains(char::is_whitespace)
            || self.redis.prefix.contains(['{', '}'])
        {
            return Err(invalid(
                "redis.prefix",
                "must be non-empty, without spaces or braces",
            ));
        }
        for (key, url, schemes) in [
            (
                "database.url",
                &self.database.url,
                &["postgres", "postgresql"][..],
            ),
            (
                "database.read_url",
                &self.database.read_url,
                &["postgres", "postgresql"][..],
            ),
            (
                "redis.url",
                &self.redis.url,
                &["redis", "rediss", "unix", "redis+unix"][..],
            ),
        ] {
            if url.expose().is_empty() {
                // Embedded mode, or one half of server mode: `mode` says which.
                continue;
            }
            // The parser's message names what is wrong (`invalid port
            // number`) and nothing of the URL, which may hold a password.
            match url::Url::parse(url.expose()) {
                Ok(u) if schemes.contains(&u.scheme()) => {}
                Ok(_) => {
                    return Err(invalid(
                        key,
                        &format!("must be a URL with scheme {}", schemes.join(" or ")),
                    ))
                }
                Err(error) => {
                    return Err(invalid(
                        key,
                        &format!(
                            "is not a URL ({error}): it must be one with scheme {}",
                            schemes.join(" or ")
                        ),
                    ))
                }
            }
        }
        if self.embedded.path.as_os_str().is_empty() || self.embedded.path.ends_with("..") {
            return Err(invalid("embedded.path", "must name a file"));
        }
        for sentinel in &self.redis.sentinels {
            let valid = sentinel.rsplit_once(':').is_some_and(|(host, port)| {
                !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
            });
            if !valid {
                return Err(invalid(
                    "redis.sentinels",
                    &format!("`{sentinel}` is not host:port"),
                ));
            }
        }
        if !self.redis.cluster.is_empty() && !self.redis.sentinels.is_empty() {
            return Err(invalid(
                "redis.cluster",
                "cannot be used with redis.sentinels: a Redis Cluster fails over by itself; set one of them",
            ));
        }
        for (n, node) in self.redis.cluster.iter().enumerate() {
            if !url::Url::parse(node.expose())
                .is_ok_and(|u| ["redis", "rediss"].contains(&u.scheme()))
            {
                return Err(invalid(
                    "redis.cluster",
                    &format!("entry {n} must be a URL with scheme redis or rediss"),
                ));
            }
        }
        if self
            .redis
            .shards
            .is_some_and(|n| !(1..=crate::domain::shard::MAX_SHARDS).contains(&n))
        {
            return Err(invalid("redis.shards", "must be 1 to 1024"));
        }
        if !self.redis.sentinels.is_empty()
            && (self.redis.master_name.is_empty()
                || self.redis.master_name.contains(char::is_whitespace))
        {
            return Err(invalid(
                "redis.master_name",
                "must be the sentinels' name for the master (non-empty, no spaces)",
            ));
        }
        if let Err(reason) = self.server.tls_config() {
            let key = if reason.starts_with("server.tls_key") {
                "server.tls_key"
            } else {
                "server.tls_cert"
            };
            return Err(invalid(
                key,
                reason.split_once(": ").map_or(&*reason, |(_, r)| r),
            ));
        }
        // sqlx sizes the pool's bookkeeping by it: 4000000000, a typo, took
        // hookd past a gigabyte before it connected once.
        if !(1..=MAX_DATABASE_CONNECTIONS).contains(&self.database.max_connections) {
            return Err(invalid(
                "database.max_connections",
                &format!("must be between 1 and {MAX_DATABASE_CONNECTIONS}"),
            ));
        }
        if self.database.min_connections > self.database.max_connections {
            return Err(invalid(
                "database.min_connections",
                &format!(
                    "must be at most database.max_connections ({})",
                    self.database.max_connections
                ),
            ));
        }
        if let Some(metrics) = self.server.metrics_listen {
            let listen = self.server.listen;
            if metrics.port() != 0 && metrics.port() == listen.port() && {
                let (a, b) = (metrics.ip(), listen.ip());
                a == b || a.is_unspecified() || b.is_unspecified()
            } {
                return Err(invalid(
                    "server.metrics_listen",
                    &format!(
                        "must not take server.listen's port ({listen}): it is a listener of its own for /metrics, /healthz and /readyz"
                    ),
                ));
            }
        }
        if self.api.max_payload_bytes == 0 {
            return Err(invalid("api.max_payload_bytes", "must be at least 1"));
        }
        if !(1..=1_000_000).contains(&self.api.max_deliveries_per_request) {
            return Err(invalid(
                "api.max_deliveries_per_request",
                "must be 1 to 1000000",
            ));
        }
        if !(1..=100_000).contains(&self.api.max_concurrent_per_credential) {
            return Err(invalid(
                "api.max_concurrent_per_credential",
                "must be 1 to 100000",
            ));
        }
        if self.api.max_request_bytes < self.api.max_payload_bytes {
            return Err(invalid(
                "api.max_request_bytes",
                "must be at least api.max_payload_bytes",
            ));
        }
        for (n, pattern) in self.api.secret_path_patterns.iter().enumerate() {
            if pattern.len() > 1024 || regex::Regex::new(pattern).is_err() {
                return Err(invalid(
                    "api.secret_path_patterns",
                    &format!("entry {n} is not a regular expression of at most 1024 bytes"),
                ));
            }
        }
        for (key, value, max) in [
            (
                "server.shutdown_timeout_ms",
                self.server.shutdown_timeout_ms,
                3_600_000,
            ),
            (
                "server.header_timeout_ms",
                self.server.header_timeout_ms,
                600_000,
            ),
            (
                "server.request_timeout_ms",
                self.server.request_timeout_ms,
                3_600_000,
            ),
            (
                "server.max_connections",
                self.server.max_connections as u64,
                1_000_000,
            ),
            (
                "server.listen_backlog",
                u64::from(self.server.listen_backlog),
                65_535,
            ),
            (
                "database.acquire_timeout_ms",
                self.database.acquire_timeout_ms,
                600_000,
            ),
            ("redis.timeout_ms", self.redis.timeout_ms, 600_000),
            (
                "embedded.busy_timeout_ms",
                self.embedded.busy_timeout_ms,
                600_000,
            ),
            ("embedded.readers", u64::from(self.embedded.readers), 64),
            (
                "sender.timeout_ms",
                self.sender.timeout_ms,
                MAX_ENDPOINT_TIMEOUT.as_millis() as u64,
            ),
            (
                "sender.connect_timeout_ms",
                self.sender.connect_timeout_ms,
                300_000,
            ),
            (
                "sender.max_in_flight",
                self.sender.max_in_flight as u64,
                100_000,
            ),
            (
                "dispatcher.batch_size",
                self.dispatcher.batch_size as u64,
                10_000,
            ),
            (
                "dispatcher.max_idle_ms",
                self.dispatcher.max_idle_ms,
                60_000,
            ),
        ] {
            if !(1..=max).contains(&value) {
                return Err(invalid(key, &format!("must be between 1 and {max}")));
            }
        }
        if self.dispatcher.claim_ahead_ms > 1000 {
            return Err(invalid(
                "dispatcher.claim_ahead_ms",
                "must be between 0 and 1000",
            ));
        }
        if !(STORED_BODY_BYTES..=64 << 20).contains(&self.sender.max_response_bytes) {
            return Err(invalid(
                "sender.max_response_bytes",
                &format!(
                    "must be between {} (the part of a response kept) and 67108864",
                    STORED_BODY_BYTES
                ),
            ));
        }
        let mut names = std::collections::HashSet::new();
        let mut digests = std::collections::HashSet::new();
        for (i, spec) in self.api.tokens.iter().enumerate() {
            let credential = spec
                .credential(i)
                .map_err(|reason| invalid("api.tokens", &reason))?;
            if !names.insert(credential.name.clone()) {
                return Err(invalid(
                    "api.tokens",
                    &format!("the name `{}` is used twice", credential.name),
                ));
            }
            if !digests.insert(credential.digest) {
                return Err(invalid("api.tokens", "two entries hold the same token"));
            }
        }
        self.portal.validate()?;
        if let Err(error) = self.try_keyring() {
            return Err(invalid("secrets.keys", &error.to_string()));
        }
        if self.secrets.rotation_overlap_ms > MAX_ROTATION_OVERLAP.as_millis() as u64 {
            return Err(invalid(
                "secrets.rotation_overlap_ms",
                "must be at most 604800000 (7 days; 0 ends the overlap at once)",
            ));
        }
        if !humantime::parse_duration(self.pull.max_wait.trim())
            .is_ok_and(|wait| PULL_MAX_WAIT.contains(&wait))
        {
            return Err(invalid(
                "pull.max_wait",
                "must be a duration from 1s to 365d, such as \"7d\" or \"12h\"",
            ));
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log.filter).is_err() {
            return Err(invalid(
                "log.filter",
                "must be a tracing filter such as \"info\" or \"info,hookd::dispatcher=debug\"",
            ));
        }
        if self.dispatcher.endpoint_max_in_flight == 0 {
            return Err(invalid(
                "dispatcher.endpoint_max_in_flight",
                "must be at least 1",
            ));
        }
        if let Some(limit) = &self.dispatcher.default_rate_limit {
            use crate::domain::rate::{RateLimit, RateLimitError};
            match RateLimit::new(limit.per_second, limit.burst) {
                Err(RateLimitError::PerSecond) => {
                    return Err(invalid(
                        "dispatcher.default_rate_limit.per_second",
                        "must be a number from 0.001 to 100000",
                    ))
                }
                Err(RateLimitError::Burst) => {
                    return Err(invalid(
                        "dispatcher.default_rate_limit.burst",
                        "must be a whole number from 1 to 100000",
                    ))
                }
                Ok(_) => {}
            }
        }
        if !(0.0..=1.0).contains(&self.dispatcher.fresh_share) {
            return Err(invalid(
                "dispatcher.fresh_share",
                "must be a number from 0 to 1",
            ));
        }
        if self.dispatcher.lease_ms > 24 * 3600 * 1000 {
            return Err(invalid(
                "dispatcher.lease_ms",
                "must be at most a day (86400000)",
            ));
        }
        if self.retention.days > 36_500 {
            return Err(invalid(
                "retention.days",
                "must be at most 36500 (0 keeps everything)",
            ));
        }
        if self.dispatcher.disable_failing_endpoints_after_hours > 365 * 24 {
            return Err(invalid(
                "dispatcher.disable_failing_endpoints_after_hours",
                "must be at most 8760 (a year; 0 never disables)",
            ));
        }
        if let Some((field, must)) = self.dispatcher.breaker.policy().invalid() {
            let key = match field {
                "failures" => "dispatcher.breaker.failures",
                "open_ms" => "dispatcher.breaker.open_ms",
                _ => "dispatcher.breaker.max_open_ms",
            };
            return Err(invalid(key, &format!("must be {must}")));
        }
        if !(1..=365 * 24 * 3600 * 1000).contains(&self.dispatcher.breaker.max_hold_ms) {
            return Err(invalid(
                "dispatcher.breaker.max_hold_ms",
                "must be from 1 to 31536000000 (a year)",
            ));
        }
        if !self.telemetry.otlp_endpoint.is_empty() {
            crate::telemetry::spans::traces_url(&self.telemetry.otlp_endpoint)
                .map_err(|reason| invalid("telemetry.otlp_endpoint", &reason))?;
        }
        for (name, value) in &self.telemetry.otlp_headers {
            if hyper::header::HeaderName::from_bytes(name.as_bytes()).is_err()
                || hyper::header::HeaderValue::from_str(value.expose()).is_err()
            {
                return Err(invalid(
                    "telemetry.otlp_headers",
                    &format!(
                        "`{}` is not a valid header name and value",
                        crate::domain::problem::shown(name)
                    ),
                ));
            }
        }
        if !(1..=1_000_000).contains(&self.telemetry.queue_size) {
            return Err(invalid("telemetry.queue_size", "must be 1 to 1000000"));
        }
        if !(1..=60_000).contains(&self.telemetry.export_interval_ms) {
            return Err(invalid(
                "telemetry.export_interval_ms",
                "must be 1 to 60000",
            ));
        }
        if !self.operator.enabled() && !self.operator.secret.expose().is_empty() {
            return Err(invalid(
                "operator.secret",
                "is set but operator.url is not: operator events go nowhere; set both, or neither",
            ));
        }
        if self.operator.enabled() {
            match url::Url::parse(self.operator.url.expose()) {
                Ok(u) if self.sender.https_only && u.scheme() == "http" => {
                    return Err(invalid(
                        "operator.url",
                        "must be an https URL when sender.https_only is true",
                    ))
                }
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
                _ => {
                    return Err(invalid(
                        "operator.url",
                        "must be an http or https URL, or empty",
                    ))
                }
            }
            if crate::domain::secret::SigningSecret::parse(self.operator.secret.expose()).is_err() {
                return Err(invalid(
                    "operator.secret",
                    "must be `whsec_` followed by the base64 of 24 to 64 bytes when operator.url is set",
                ));
            }
        }
        for (key, path) in [
            ("sender.ca_file", &self.sender.ca_file),
            ("redis.ca_file", &self.redis.ca_file),
        ] {
            if !path.is_empty() {
                read_ca_file(path).map_err(|reason| invalid(key, &reason))?;
            }
        }
        let tls = match self.redis.cluster.first() {
            Some(node) => node.expose().starts_with("rediss://"),
            None => self.redis.url.expose().starts_with("rediss://"),
        };
        if !self.redis.ca_file.is_empty() && !tls {
            return Err(invalid(
                "redis.ca_file",
                "needs a rediss:// redis.url or redis.cluster (TLS)",
            ));
        }
        // A lease shorter than the longest attempt would let a second process
        // take over a delivery that is still running: a guaranteed duplicate.
        let longest_attempt = self.sender_timeout();
        if self.lease() < longest_attempt + LEASE_MARGIN {
            return Err(invalid(
                "dispatcher.lease_ms",
                &format!(
                    "must be at least the longest attempt, sender.timeout_ms ({} ms), plus a {} ms margin: raise dispatcher.lease_ms to at least {} or lower sender.timeout_ms",
                    longest_attempt.as_millis(),
                    LEASE_MARGIN.as_millis(),
                    (longest_attempt + LEASE_MARGIN).as_millis()
                ),
            ));
        }
        Ok(())
    }
}
