//! `[portal]`: the key that signs portal links (docs/design.md §11), the
//! origin the links point at, and how the portal presents the deployment
//! to a link's holder (§18: a name, a logo, an accent colour). Rotating
//! the key revokes every link issued under the old one.

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
    /// The deployment's name in the portal's header; empty: "Webhooks".
    #[serde(deserialize_with = "super::readers::text")]
    pub name: String,
    /// An http(s) image shown beside the name; empty: none. The console's
    /// Content-Security-Policy admits images from its origin alone.
    pub logo_url: String,
    /// The portal's accent colour, `#rgb` or `#rrggbb`; empty: hookd's.
    pub accent: String,
}

/// The longest `portal.name`.
const MAX_NAME_CHARS: usize = 64;
/// The longest `portal.logo_url`.
const MAX_LOGO_URL_BYTES: usize = 2048;

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
        if self.name.chars().count() > MAX_NAME_CHARS || self.name.chars().any(char::is_control) {
            return Err(invalid(
                "portal.name",
                "must be at most 64 characters, none of them control characters",
            ));
        }
        if !self.logo_url.is_empty() && self.logo_origin().is_none() {
            return Err(invalid(
                "portal.logo_url",
                "must be an http or https URL of at most 2048 bytes, without userinfo",
            ));
        }
        if !self.accent.is_empty() && !accent(&self.accent) {
            return Err(invalid(
                "portal.accent",
                "must be a colour as #rgb or #rrggbb (e.g. \"#0a7d5a\")",
            ));
        }
        Ok(())
    }

    /// The origin `portal.logo_url` is served from, when it is a usable
    /// logo URL: the console's CSP admits images from it.
    pub fn logo_origin(&self) -> Option<String> {
        if self.logo_url.len() > MAX_LOGO_URL_BYTES {
            return None;
        }
        let url = url::Url::parse(&self.logo_url).ok()?;
        let plain = matches!(url.scheme(), "http" | "https")
            && url.host_str().is_some()
            && url.username().is_empty()
            && url.password().is_none();
        plain.then(|| url.origin().ascii_serialization())
    }
}

/// Whether `text` is `#rgb` or `#rrggbb`.
fn accent(text: &str) -> bool {
    text.strip_prefix('#')
        .is_some_and(|hex| matches!(hex.len(), 3 | 6) && hex.bytes().all(|b| b.is_ascii_hexdigit()))
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
            name: String::new(),
            logo_url: String::new(),
            accent: String::new(),
        }
    }

    #[test]
    fn the_brand_is_a_short_name_an_http_logo_and_a_hex_colour() {
        let brand = |name: &str, logo_url: &str, accent: &str| PortalSettings {
            name: name.to_string(),
            logo_url: logo_url.to_string(),
            accent: accent.to_string(),
            ..settings("", "")
        };
        let good = brand(
            "Acme Payments",
            "https://cdn.acme.example/logo.svg?v=2",
            "#0a7d5a",
        );
        assert!(good.validate().is_ok());
        assert_eq!(
            good.logo_origin().as_deref(),
            Some("https://cdn.acme.example")
        );
        assert!(brand("", "", "").validate().is_ok());
        assert!(brand("", "", "#FFF").validate().is_ok());
        for bad in [
            brand(&"n".repeat(65), "", ""),
            brand("Acme\nPayments", "", ""),
            brand("", "javascript:alert(1)", ""),
            brand("", "data:image/svg+xml,<svg/>", ""),
            brand("", "https://user:pw@cdn.acme.example/logo.svg", ""),
            brand(
                "",
                &format!("https://cdn.acme.example/{}", "a".repeat(2048)),
                "",
            ),
            brand("", "", "red"),
            brand("", "", "#12345"),
            brand("", "", "#0a7d5a; background: url(x)"),
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
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
