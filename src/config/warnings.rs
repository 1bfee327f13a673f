//! The warnings about settings that work but deserve an operator's
//! attention: printed by `config check` and logged at start.

use std::net::IpAddr;

use super::Settings;

impl Settings {
    /// Settings that work but that an operator should know about: printed by
    /// `config check` and logged at start.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.secrets.keys.is_empty() {
            warnings.push(
                "secrets.keys is empty: signing secrets and custom header values are stored in plaintext in the database"
                    .to_string(),
            );
        }
        warnings.extend(self.database_tls_warning());
        if !self.dispatcher.enabled && self.mode().is_ok_and(|mode| mode != super::Mode::Server) {
            warnings.push(
                "dispatcher.enabled is false in embedded mode: this process accepts notifications and delivers none; they wait until hookd runs on this file with it on"
                    .to_string(),
            );
        }
        if let Some(everything) = self
            .sender
            .allow_networks
            .iter()
            .find(|network| network.prefix_len() == 0)
        {
            warnings.push(format!(
                "sender.allow_networks holds {everything}: the private-address guard lets endpoints reach every address of that family, the cloud's metadata service and this host included"
            ));
        }
        warnings
    }

    /// Why the database connection may not be protected by verified TLS, if
    /// it may not: a host that is not loopback or a Unix socket, with an
    /// `sslmode` below `verify-ca`. libpq's and sqlx's default, `prefer`,
    /// falls back to plaintext without a word, and `require` accepts any
    /// certificate, so an attacker on the path can read or change every row.
    pub fn database_tls_warning(&self) -> Option<String> {
        let url = url::Url::parse(self.database.url.expose()).ok()?;
        let param = |name: &str| {
            url.query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        let host = param("host").unwrap_or_else(|| url.host_str().unwrap_or("").to_string());
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let local = host.is_empty()
            || host.starts_with('/')
            || host == "localhost"
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
        let mode = param("sslmode")
            .or_else(|| std::env::var("PGSSLMODE").ok())
            .unwrap_or_else(|| "prefer".to_string());
        if local || matches!(mode.as_str(), "verify-full" | "verify-ca") {
            return None;
        }
        Some(format!(
            "database.url reaches {host} with sslmode={mode}: the connection may be plaintext or \
             its certificate unchecked; use ?sslmode=verify-full&sslrootcert=/path/ca.pem"
        ))
    }
}
