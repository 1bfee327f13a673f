//! `[portal]`: the key that signs portal links (docs/design.md §11) and the
//! origin the links point at. Rotating the key revokes every link issued
//! under the old one.

use serde::{Deserialize, Serialize};

use super::{ConfigError, Secret};

/// The shortest `portal.key`: 32 bytes, the HMAC-SHA256 output size, so a
/// key is never weaker than the MAC it keys.
pub const MIN_PORTAL_KEY_BYTES: usize = 32;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PortalSettings {
    /// Signs portal links; empty: issuing links is refused (409
    /// `portal_disabled`) and no link is accepted.
    pub key: Secret,
    /// `scheme://host[:port]` the links point at, for hookd behind a proxy;
    /// empty: the origin the issuing request was addressed to.
    pub base_url: String,
}

impl PortalSettings {
    /// The key, once set.
    pub fn key(&self) -> Option<&[u8]> {
        let key = self.key.expose();
        (!key.is_empty()).then_some(key.as_bytes())
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, reason: &str| ConfigError::Invalid {
            key,
            reason: reason.to_string(),
        };
        let key = self.key.expose();
        if !key.is_empty() && key.len() < MIN_PORTAL_KEY_BYTES {
            // The length only: the value is a secret.
            return Err(invalid(
                "portal.key",
                "must be at least 32 bytes (e.g. `openssl rand -base64 32`)",
            ));
        }
        if !self.base_url.is_empty() && origin(&self.base_url).is_none() {
            return Err(invalid(
                "portal.base_url",
                "must be an http or https origin: scheme://host[:port], without path, query or userinfo",
            ));
        }
        Ok(())
    }
}

/// `text` as an origin (`https://hooks.example.com`), if it is one: a
/// trailing `/` is allowed, nothing else after the authority.
fn origin(text: &str) -> Option<String> {
    let url = url::Url::parse(text).ok()?;
    let plain = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none();
    plain.then(|| url.origin().ascii_serialization())
}

impl PortalSettings {
    /// `portal.base_url` as an origin, without a trailing `/`.
    pub fn base_origin(&self) -> Option<String> {
        origin(&self.base_url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(key: &str, base_url: &str) -> PortalSettings {
        PortalSettings {
            key: Secret::new(key),
            base_url: base_url.to_string(),
        }
    }

    #[test]
    fn a_short_key_is_refused_without_showing_it() {
        let error = settings("short-key-value", "").validate().unwrap_err();
        assert!(!error.to_string().contains("short-key-value"), "{error}");
        assert!(settings(&"k".repeat(32), "").validate().is_ok());
        assert!(settings("", "").validate().is_ok());
        assert!(settings("", "").key().is_none());
    }

    #[test]
    fn config_check_shows_whether_the_key_is_set_never_its_value() {
        let key = "portal-key-0123456789abcdefghijklmnop";
        let set =
            crate::config::Settings::from_toml_overrides(&format!("[portal]\nkey = \"{key}\"\n"))
                .unwrap();
        let shown = set.to_masked_toml();
        assert!(shown.contains("[portal]\nkey = \"***\""), "{shown}");
        assert!(!shown.contains(key));
        assert_eq!(set.portal.key(), Some(key.as_bytes()));
        let unset = crate::config::Settings::from_toml_overrides("").unwrap();
        assert!(unset.to_masked_toml().contains("[portal]\nkey = \"\""));
        let error =
            crate::config::Settings::from_toml_overrides("[portal]\nkey = \"too-short-1234\"\n")
                .unwrap_err()
                .to_string();
        assert!(
            error.contains("portal.key") && !error.contains("too-short-1234"),
            "{error}"
        );
    }

    #[test]
    fn the_base_url_is_an_origin_only() {
        for good in ["https://hooks.example.com", "http://127.0.0.1:8080/"] {
            assert!(settings("", good).validate().is_ok(), "{good}");
        }
        assert_eq!(
            settings("", "https://Hooks.Example.com:443/").base_origin(),
            Some("https://hooks.example.com".to_string())
        );
        for bad in [
            "hooks.example.com",
            "ftp://hooks.example.com",
            "https://hooks.example.com/console",
            "https://user@hooks.example.com",
            "https://hooks.example.com/?a=1",
        ] {
            assert!(settings("", bad).validate().is_err(), "{bad}");
        }
    }
}
