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
            figment = figment.merge(ConfigFile::read(path)?);
        }
        // Only HOOKD_<SECTION>__<KEY> names are configuration; other HOOKD_*
        // variables (a wrapper script's, say) are not mistaken for typos,
        // but one that names a setting in another spelling is refused.
        if let Some(refusal) = misspelt_variable(std::env::vars_os().map(|(name, _)| name)) {
            return Err(ConfigError::Load(refusal));
        }
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
        settings.validate().map_err(|error| match error {
            ConfigError::Invalid { key, reason } => ConfigError::Invalid {
                key,
                reason: format!("{reason}{}", where_given(&figment, key)),
            },
            other => other,
        })?;
        Ok(settings)
    }

    /// The effective configuration as TOML, secrets masked.
    pub fn to_masked_toml(&self) -> String {
        toml_string(self)
    }
}

/// Where the value of `key` came from, as a type error says it (` (in
/// hookd.toml)`, ` (in HOOKD_SENDER__TIMEOUT_MS)`); nothing for the
/// compiled-in defaults and for TOML given as a string (tests, tools).
fn where_given(figment: &Figment, key: &str) -> String {
    let Some(metadata) = figment.find_metadata(key) else {
        return String::new();
    };
    if let Some(source) = &metadata.source {
        return format!(" (in {source})");
    }
    if metadata.name.contains("environment") {
        return format!(
            " (in HOOKD_{})",
            key.replace('.', "__").to_ascii_uppercase()
        );
    }
    String::new()
}

/// A config file's TOML, read by hookd itself: a pipe (`--config
/// <(envsubst < hookd.toml)`) is read once, as figment's file provider,
/// which wants a regular file, could not; and a file that cannot be read
/// is said in one line with its path as given.
struct ConfigFile {
    path: String,
    text: String,
}

impl ConfigFile {
    fn read(path: &Path) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        let refuse = |why: String| ConfigError::Load(format!("config file {shown}: {why}"));
        if path.is_dir() {
            return Err(refuse("is a directory, not a TOML file".into()));
        }
        let bytes = std::fs::read(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => refuse("does not exist".into()),
            _ => refuse(format!("cannot be read: {e}")),
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            refuse(format!(
                "is not UTF-8 text (byte {})",
                e.utf8_error().valid_up_to()
            ))
        })?;
        Ok(Self { path: shown, text })
    }
}

impl figment::Provider for ConfigFile {
    fn metadata(&self) -> figment::Metadata {
        figment::Metadata::from("TOML file", figment::Source::Custom(self.path.clone()))
    }

    fn data(
        &self,
    ) -> Result<figment::value::Map<figment::Profile, figment::value::Dict>, figment::Error> {
        Toml::string(&self.text).data()
    }
}

/// A refusal of the first `HOOKD_` variable that names a setting but is
/// not read: one underscore between section and key
/// (`HOOKD_DATABASE_URL`), or not in capitals (`hookd_server__listen`).
/// Left alone, server mode quietly became embedded mode.
pub(super) fn misspelt_variable(names: impl Iterator<Item = std::ffi::OsString>) -> Option<String> {
    let keys = setting_keys();
    names.filter_map(|name| name.into_string().ok()).find_map(|name| {
        let read = name.starts_with("HOOKD_") && name.contains("__");
        let rest = name.get(..6)?.eq_ignore_ascii_case("hookd_").then(|| &name[6..])?;
        let flat = rest.to_ascii_lowercase().replace("__", "_");
        let key = keys.iter().find(|key| key.replace('.', "_") == flat)?;
        (!read).then(|| {
            format!(
                "{name} is not read: a setting's variable is HOOKD_ and its key in capitals, two underscores between section and key: {}",
                format!("HOOKD_{}", key.replace('.', "__")).to_ascii_uppercase()
            )
        })
    })
}

/// Every setting's dotted key, as the compiled-in defaults name them.
fn setting_keys() -> Vec<String> {
    use figment::value::{Dict, Value};
    fn walk(prefix: &str, dict: &Dict, keys: &mut Vec<String>) {
        for (name, value) in dict {
            let key = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            match value {
                Value::Dict(_, inner) => walk(&key, inner, keys),
                _ => keys.push(key),
            }
        }
    }
    let mut keys = Vec::new();
    if let Ok(profiles) = figment::Provider::data(&Toml::string(DEFAULT_TOML)) {
        for dict in profiles.values() {
            walk("", dict, &mut keys);
        }
    }
    keys
}

fn toml_string(settings: &Settings) -> String {
    toml::to_string(settings).unwrap_or_else(|e| format!("# cannot render settings: {e}\n"))
}

/// Keys whose values are `Secret`s: an error about one never shows its value.
const SECRET_KEYS: [&str; 10] = [
    "database.url",
    "database.read_url",
    "telemetry.otlp_headers",
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
