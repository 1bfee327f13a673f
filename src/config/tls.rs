//! The API's own TLS (`server.tls_cert`, `server.tls_key`), and the CA
//! files hookd's clients trust (`sender.ca_file`, `redis.ca_file`, ...):
//! read and checked at load, so a bad file fails `hookd config check` and
//! start-up with the key named, not the first handshake.

use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::ServerSettings;

impl ServerSettings {
    /// The rustls server configuration, or `None` without TLS files.
    pub fn tls_config(&self) -> Result<Option<tokio_rustls::rustls::ServerConfig>, String> {
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

/// Reads a PEM file of CA certificates: at least one, all well-formed.
pub fn read_ca_file(path: &str) -> Result<Vec<u8>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let certificates: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&pem).collect();
    match certificates {
        Ok(certificates) if !certificates.is_empty() => Ok(pem),
        Ok(_) => Err(format!("{path} holds no PEM certificate")),
        Err(e) => Err(format!("{path} is not a PEM certificate bundle: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::read_ca_file;

    #[test]
    fn a_ca_file_is_read_only_when_it_holds_well_formed_pem_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path.to_string_lossy().into_owned()
        };
        let none = file("none.pem", "no certificate here\n");
        let message = read_ca_file(&none).unwrap_err();
        assert!(message.ends_with("holds no PEM certificate"), "{message}");
        let broken = file(
            "broken.pem",
            "-----BEGIN CERTIFICATE-----\n!!not base64!!\n-----END CERTIFICATE-----\n",
        );
        let message = read_ca_file(&broken).unwrap_err();
        assert!(
            message.contains("is not a PEM certificate bundle"),
            "{message}"
        );
    }
}
