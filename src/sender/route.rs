//! How the receivers' HTTP clients are built (`client`: TLS, the guard as
//! resolver, a pool of their own) and which one carries an attempt. The
//! endpoint's own URL goes through a client whose guard admits every
//! network of `sender.allow_networks`
//! (endpoints are an admin's to set). A per-notification URL, which any
//! `write` token names, goes through a client whose guard admits only the
//! entries the endpoint's own URL resolves into: its addresses are vetted
//! as they are resolved, at connect time, as the endpoint's are (DNS
//! rebinding), and its connection pool is its own, so a connection opened
//! under a wider guard never carries its request.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::CertificateDer;

use super::client::Client;
use super::guard::{Guard, Networks};
use super::{Delivery, SenderError, Target};

#[derive(Clone)]
pub(super) struct Routes {
    wide: Client,
    /// Per-notification URLs' clients, by the entries their guard keeps.
    narrowed: Arc<Mutex<HashMap<Networks, Client>>>,
    build: Arc<ClientSettings>,
}

/// Bounds the routes kept for per-notification URLs: one per distinct set
/// of allowed networks endpoints lie in, which a sane `allow_networks`
/// keeps to a handful. Past it, a client is built for the one delivery.
const MAX_NARROWED: usize = 64;

/// What building a client takes besides its guard.
pub(super) struct ClientSettings {
    pub tls: Arc<rustls::ClientConfig>,
    pub connect_timeout: Duration,
    pub max_idle_per_host: usize,
}

/// How receivers are verified: ring, the bundled webpki roots plus the CAs
/// of `sender.ca_file`, TLS 1.2 and 1.3, ALPN h2 then http/1.1. Built here
/// because reqwest 0.13's own rustls set-up means aws-lc-rs and the
/// platform's trust store, which would make trust depend on the host
/// (the span exporter's reqwest client takes it too).
pub(super) fn tls_config(ca_file: &str) -> Result<rustls::ClientConfig, SenderError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if !ca_file.is_empty() {
        let pem = crate::config::read_ca_file(ca_file).map_err(SenderError::CaFile)?;
        let invalid = |e: &dyn std::fmt::Display| SenderError::CaFile(format!("{ca_file}: {e}"));
        for certificate in CertificateDer::pem_slice_iter(&pem) {
            let certificate = certificate.map_err(|e| invalid(&e))?;
            roots.add(certificate).map_err(|e| invalid(&e))?;
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

impl ClientSettings {
    fn client(&self, guard: &Guard) -> Client {
        // As many idle connections per receiver as deliveries may be in
        // flight at once: a receiver kept busy never has a connection
        // closed after its request only to open another (pool churn).
        Client::new(
            guard.clone(),
            self.tls.clone(),
            self.connect_timeout,
            self.max_idle_per_host,
        )
    }
}

impl Routes {
    pub fn new(build: ClientSettings, guard: Guard) -> Self {
        Self {
            wide: build.client(&guard),
            narrowed: Default::default(),
            build: Arc::new(build),
        }
    }

    /// Whether the endpoints' guard admits `ip`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        self.wide.guard().permits(ip)
    }

    /// The client of a delivery.
    pub async fn of(&self, delivery: &Delivery<'_>) -> Client {
        if delivery.url.is_none() || !self.wide.guard().allows_networks() {
            return self.wide.clone();
        }
        let networks = delivery.target.networks(self.wide.guard()).await;
        let mut narrowed = self.narrowed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = narrowed.get(&networks) {
            return found.clone();
        }
        let found = self.build.client(&self.wide.guard().narrowed(&networks));
        if narrowed.len() < MAX_NARROWED {
            narrowed.insert(networks, found.clone());
        }
        found
    }
}

impl Target {
    /// The entries of `sender.allow_networks` the endpoint's URL resolves
    /// into now, found once per claimed batch. A name that does not resolve
    /// lies in none (and is looked up again by the next delivery that asks).
    async fn networks(&self, guard: &Guard) -> Networks {
        let Ok(url) = &self.url else {
            return Networks::default();
        };
        let found = self.networks.get_or_try_init(|| guard.networks_of_url(url));
        found.await.cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receivers_are_offered_h2_then_http_1_1_over_ring() {
        let config = tls_config("").unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        // aws-lc-rs, reqwest 0.13's default, adds a post-quantum group (X25519MLKEM768).
        let groups = |provider: &rustls::crypto::CryptoProvider| {
            let groups = provider.kx_groups.iter().map(|group| group.name());
            groups.collect::<Vec<_>>()
        };
        let ring = rustls::crypto::ring::default_provider();
        assert_eq!(groups(config.crypto_provider()), groups(&ring));
    }
}
