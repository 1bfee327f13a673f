//! Layering: the compiled-in defaults, then a file or TOML strings, then
//! the environment; and the two renderings that must never show a secret,
//! load errors and the effective configuration.

use std::path::Path;

use figment::providers::{Env, Format, Toml};
use figment::Figment;

use super::{ConfigError, Settings};

/// The defaults, compiled in so hookd never depends on its working directory.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");

impl Settings {
    /// Loads defaults, then `file` if given, then the environment, and validates.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut figment = Figment::from(Toml::string(DEFAULT_TOML));
        if let Some(path) = file {
            if !path.is_file() {
                return Err(ConfigError::Load(format!(
                    "config file {} does not exist",
                    path.display()
                )));
            }
            figment = figment.merge(Toml::file(path));
        }
        // Only HOOKD_<SECTION>__<KEY> names are configuration; other HOOKD_*
        // variables (a wrapper script's, say) are not mistaken for typos.
        figment = figment.merge(
            Env::prefixed("HOOKD_")
                .filter(|key| key.as_str().contains("__"))
                .split("__"),
        );
        Self::from_figment(figment)
    }

    /// Builds settings from the defaults with `overrides` (TOML) merged on top.
    /// Tests and tools use it to configure hookd without files or environment.
    pub fn from_toml_overrides(overrides: &str) -> Result<Self, ConfigError> {
        Self::from_toml_layers(&[overrides])
    }

    /// Like `from_toml_overrides`, with several layers, later ones winning.
    pub fn from_toml_layers(layers: &[&str]) -> Result<Self, ConfigError> {
        let figment = layers.iter().fold(
            Figment::from(Toml::string(DEFAULT_TOML)),
            |figment, layer| figment.merge(Toml::string(layer)),
        );
        Self::from_figment(figment)
    }

    fn from_figment(figment: Figment) -> Result<Self, ConfigError> {
        let settings: Settings = figment
            .extract()
            .map_err(|e| ConfigError::Load(one_line(&e)))?;
        settings.validate()?;
        Ok(settings)
    }

    /// The effective configuration as TOML, secrets masked.
    pub fn to_masked_toml(&self) -> String {
        toml_string(self)
    }
}

fn toml_string(settings: &Settings) -> String {
    toml::to_string(settings).unwrap_or_else(|e| format!("# cannot render settings: {e}\n"))
}

/// Keys whose values are `Secret`s: an error about one never shows its value.
const SECRET_KEYS: [&str; 8] = [
    "database.url",
    "redis.url",
    "redis.cluster",
    "api.tokens",
    "operator.url",
    "operator.secret",
    "secrets.keys",
    "portal.key",
];

/// Every error figment found, on one line, each naming its key and where the
/// value came from. The value itself is shown only for keys that are not
/// secrets; a TOML syntax error keeps its position and reason but not the
/// offending line, which may hold a secret.
fn one_line(error: &figment::Error) -> String {
    use figment::error::Kind;
    let messages: Vec<String> = error
        .clone()
        .into_iter()
        .map(|e| {
            let key = e.path.join(".");
            let secret = SECRET_KEYS.iter().any(|k| key.starts_with(k));
            let what = match &e.kind {
                Kind::InvalidType(_, expected) | Kind::InvalidValue(_, expected) if secret => {
                    format!("invalid value (not shown), expected {expected}")
                }
                Kind::Unsupported(_) | Kind::UnsupportedKey(..) if secret => {
                    "unsupported value (not shown)".to_string()
                }
                Kind::Message(message) => {
                    let lines: Vec<&str> =
                        message.lines().filter(|l| !l.trim().is_empty()).collect();
                    match (lines.first(), lines.last()) {
                        (Some(first), Some(last)) if lines.len() > 1 => {
                            format!("{first}: {}", last.trim())
                        }
                        _ => message.clone(),
                    }
                }
                kind => kind.to_string(),
            };
            let source = e
                .metadata
                .as_ref()
                .map_or_else(String::new, |m| match &m.source {
                    Some(source) => format!(" (in {source})"),
                    None => format!(" (in {})", m.name),
                });
            if key.is_empty() {
                format!("{what}{source}")
            } else {
                format!("`{key}`: {what}{source}")
            }
        })
        .collect();
    messages.join("; ")
}
