//! The API's own TLS (`server.tls_cert`, `server.tls_key`): read and
//! checked at load, so a bad file fails `hookd config check` and start-up
//! with the key named, not the first handshake.

use std::sync::Arc;

use super::ServerSettings;

impl ServerSettings {
    /// The rustls server configuration, or `None` without TLS files.
    pub fn tls_config(&self) -> Result<Option<tokio_rustls::rustls::ServerConfig>, String> {
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
        match (self.tls_cert.is_empty(), self.tls_key.is_empty()) {
            (true, true) => return Ok(None),
            (false, false) => {}
            (true, false) => {
                return Err("server.tls_cert: must be set with server.tls_key (a certificate and its key go together)".into())
            }
            (false, true) => {
                return Err("server.tls_key: must be set with server.tls_cert (a certificate and its key go together)".into())
            }
        }
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&self.tls_cert)
            .and_then(Iterator::collect)
            .map_err(|e| {
                format!(
                    "server.tls_cert: cannot read PEM certificates from {}: {e}",
                    self.tls_cert
                )
            })?;
        if certs.is_empty() {
            return Err("server.tls_cert: no PEM certificate in the file".into());
        }
        let key = PrivateKeyDer::from_pem_file(&self.tls_key).map_err(|e| {
            format!(
                "server.tls_key: cannot read a PEM private key from {}: {e}",
                self.tls_key
            )
        })?;
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let mut config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("server.tls_cert: {e}"))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| format!("server.tls_key: does not fit server.tls_cert: {e}"))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Some(config))
    }
}
