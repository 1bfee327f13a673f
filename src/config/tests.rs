//! Unit tests of the settings: defaults, refusals that name their key and
//! never echo a secret, tokens, keys and warnings.

use std::time::Duration;

use super::*;
use crate::domain::scope::Scope;

#[test]
fn defaults_load_and_validate() {
    let settings = Settings::from_toml_overrides("").unwrap();
    assert_eq!(settings.redis.prefix, "hookd");
    assert_eq!(settings.api.max_payload_bytes, 262_144);
}

#[test]
fn unknown_key_is_rejected_with_its_name() {
    let err = Settings::from_toml_overrides("[sender]\ntimeout = 5\n").unwrap_err();
    assert!(err.to_string().contains("timeout"), "{err}");
}

#[test]
fn lease_shorter_than_attempt_timeout_is_refused() {
    let err = Settings::from_toml_overrides("[dispatcher]\nlease_ms = 1000\n").unwrap_err();
    assert!(err.to_string().contains("dispatcher.lease_ms"), "{err}");
}

#[test]
fn open_api_binds_loopback_only() {
    let settings = Settings::from_toml_overrides("[server]\nlisten = \"0.0.0.0:9000\"\n").unwrap();
    assert_eq!(settings.bind_address(), "127.0.0.1:9000".parse().unwrap());
    let settings = Settings::from_toml_overrides(
        "[server]\nlisten = \"0.0.0.0:9000\"\n[api]\ntokens = [\"0123456789abcdefghijklmn\"]\n",
    )
    .unwrap();
    assert_eq!(settings.bind_address(), "0.0.0.0:9000".parse().unwrap());
}

#[test]
fn secrets_never_print() {
    let settings = Settings::from_toml_overrides(
        "[database]\nurl = \"postgres://u:hunter2@db/hookd\"\n[api]\ntokens = [\"tok-hunter2-0123456789abcdef\"]\n",
    )
    .unwrap();
    assert!(!format!("{settings:?}").contains("hunter2"));
    assert!(!settings.to_masked_toml().contains("hunter2"));
}

/// Every refusal is one line that names the key, and never echoes a
/// secret it was given.
#[test]
fn each_bad_value_is_refused_in_one_line_naming_its_key() {
    let cases = [
        ("[sender]\ntimeout_ms = \"soon\"\n", "sender.timeout_ms"),
        ("[sender]\ntimeout_ms = 0\n", "sender.timeout_ms"),
        ("[sender]\nmax_in_flight = 0\n", "sender.max_in_flight"),
        (
            "[sender]\nallow_networks = [\"10.0.0.0/33\"]\n",
            "sender.allow_networks",
        ),
        ("[server]\nlisten = \"localhost\"\n", "server.listen"),
        ("[pull]\nmax_wait = \"soon\"\n", "pull.max_wait"),
        ("[embedded]\npath = \"\"\n", "embedded.path"),
        ("[pull]\nmax_wait = \"500ms\"\n", "pull.max_wait"),
        ("[pull]\nmax_wait = \"400d\"\n", "pull.max_wait"),
        ("[server]\nheader_timeout_ms = 0\n", "server.header_timeout_ms"),
        ("[server]\nrequest_timeout_ms = 0\n", "server.request_timeout_ms"),
        ("[server]\nmax_connections = 0\n", "server.max_connections"),
        ("[server]\nlisten_backlog = 0\n", "server.listen_backlog"),
        ("[server]\nlisten_backlog = 65536\n", "server.listen_backlog"),
        ("[server]\ntls_cert = \"/nonexistent.pem\"\n", "server.tls_cert"),
        (
            "[server]\ntls_cert = \"/nonexistent.pem\"\ntls_key = \"/nonexistent.pem\"\n",
            "server.tls_cert",
        ),
        ("[server]\nmetrics_listen = \"nowhere\"\n", "server.metrics_listen"),
        (
            "[database]\nurl = \"mysql://u:hunter2@db/x\"\n",
            "database.url",
        ),
        (
            "[database]\nmax_connections = 0\n",
            "database.max_connections",
        ),
        (
            "[database]\nread_url = \"mysql://u:hunter2@replica/x\"\n",
            "database.read_url",
        ),
        ("[redis]\nurl = \"http://hunter2@cache\"\n", "redis.url"),
        ("[redis]\nprefix = \"a b\"\n", "redis.prefix"),
        ("[redis]\nsentinels = [\"10.0.0.5\"]\n", "redis.sentinels"),
        (
            "[redis]\nsentinels = [\"10.0.0.5:26379\"]\nmaster_name = \"\"\n",
            "redis.master_name",
        ),
        (
            "[redis]\ncluster = [\"redis://10.0.0.5:6379\"]\nsentinels = [\"10.0.0.5:26379\"]\n",
            "redis.cluster",
        ),
        ("[redis]\ncluster = [\"http://hunter2@h:1\"]\n", "redis.cluster"),
        ("[redis]\nshards = 0\n", "redis.shards"),
        ("[redis]\nshards = 1025\n", "redis.shards"),
        ("[api]\ntokens = [\"hunter2\"]\n", "api.tokens"),
        ("[api]\nmax_request_bytes = 1\n", "api.max_request_bytes"),
        ("[dispatcher]\nbatch_size = 0\n", "dispatcher.batch_size"),
        ("[dispatcher]\nmax_idle_ms = 0\n", "dispatcher.max_idle_ms"),
        (
            "[dispatcher]\nendpoint_max_in_flight = 0\n",
            "dispatcher.endpoint_max_in_flight",
        ),
        (
            "[dispatcher.default_rate_limit]\nper_second = 0\nburst = 5\n",
            "dispatcher.default_rate_limit.per_second",
        ),
        (
            "[dispatcher.default_rate_limit]\nper_second = 1e6\nburst = 5\n",
            "dispatcher.default_rate_limit.per_second",
        ),
        (
            "[dispatcher.default_rate_limit]\nper_second = 10\nburst = 0\n",
            "dispatcher.default_rate_limit.burst",
        ),
        ("[dispatcher]\nfresh_share = 1.5\n", "dispatcher.fresh_share"),
        ("[dispatcher]\nfresh_share = -0.1\n", "dispatcher.fresh_share"),
        ("[dispatcher]\nfresh_share = nan\n", "dispatcher.fresh_share"),
        (
            "[dispatcher]\ndisable_failing_endpoints_after_hours = 9999\n",
            "dispatcher.disable_failing_endpoints_after_hours",
        ),
        (
            "[dispatcher.breaker]\nfailures = 0\n",
            "dispatcher.breaker.failures",
        ),
        (
            "[dispatcher.breaker]\nopen_ms = 700000\n",
            "dispatcher.breaker.max_open_ms",
        ),
        (
            "[dispatcher.breaker]\nmax_hold_ms = 0\n",
            "dispatcher.breaker.max_hold_ms",
        ),
        ("[retention]\ndays = -1\n", "retention.days"),
        ("[log]\nformat = \"xml\"\n", "log.format"),
        ("[operator]\nurl = \"ftp://ops\"\n", "operator.url"),
        (
            "[operator]\nurl = \"https://ops.example.com\"\nsecret = \"hunter2\"\n",
            "operator.secret",
        ),
        ("[nonsense]\nx = 1\n", "nonsense"),
        (
            "[sender]\nmax_in_flight = 100000000\n",
            "sender.max_in_flight",
        ),
        ("[sender]\ntimeout_ms = 300001\n", "sender.timeout_ms"),
        (
            "[sender]\nconnect_timeout_ms = 0\n",
            "sender.connect_timeout_ms",
        ),
        (
            "[sender]\nmax_response_bytes = 100\n",
            "sender.max_response_bytes",
        ),
        ("[redis]\ntimeout_ms = 0\n", "redis.timeout_ms"),
        ("[redis]\nprefix = \"\"\n", "redis.prefix"),
        ("[redis]\nprefix = \"a{b}\"\n", "redis.prefix"),
        (
            "[database]\nacquire_timeout_ms = 0\n",
            "database.acquire_timeout_ms",
        ),
        (
            "[server]\nshutdown_timeout_ms = 0\n",
            "server.shutdown_timeout_ms",
        ),
        ("[api]\nmax_payload_bytes = 0\n", "api.max_payload_bytes"),
        (
            "[api]\nmax_deliveries_per_request = 0\n",
            "api.max_deliveries_per_request",
        ),
        (
            "[dispatcher]\nbatch_size = 10001\n",
            "dispatcher.batch_size",
        ),
        (
            "[dispatcher]\nmax_idle_ms = 60001\n",
            "dispatcher.max_idle_ms",
        ),
        (
            "[dispatcher]\nclaim_ahead_ms = 1001\n",
            "dispatcher.claim_ahead_ms",
        ),
        ("[dispatcher]\nlease_ms = 86400001\n", "dispatcher.lease_ms"),
        ("[retention]\ndays = 36501\n", "retention.days"),
        ("[log]\nfilter = \"hookd=loud\"\n", "log.filter"),
        ("[operator]\nurl = \"https://\"\n", "operator.url"),
        // Wrong types for secret keys: the message must not echo them.
        ("[api]\ntokens = \"hunter2hunter2\"\n", "api.tokens"),
        (
            "[database]\nurl = [\"postgres://u:hunter2@db\"]\n",
            "database.url",
        ),
        ("[operator]\nsecret = 42\n", "operator.secret"),
        (
            "[database]\nurl = \"postgres://u:hunter2@db:badport/x\"\n",
            "database.url",
        ),
        (
            "[secrets]\nkeys = [{ id = \"a\", key = \"aHVudGVyMg==\" }]\n",
            "secrets.keys",
        ),
        (
            "[secrets]\nkeys = [{ id = \"a:b\", key = \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\" }]\n",
            "secrets.keys",
        ),
        (
            "[secrets]\nkeys = [{ id = \"a\", key = [\"hunter2\"] }]\n",
            "secrets.keys",
        ),
        (
            "[secrets]\nrotation_overlap_ms = 604800001\n",
            "secrets.rotation_overlap_ms",
        ),
        (
            "[sender]\nca_file = \"/nonexistent/ca.pem\"\n",
            "sender.ca_file",
        ),
        ("[sender]\nca_file = \"Cargo.toml\"\n", "sender.ca_file"),
        (
            "[redis]\nca_file = \"/nonexistent/ca.pem\"\n",
            "redis.ca_file",
        ),
        (
            "[sender]\nhttps_only = true\n[operator]\nurl = \"http://ops.example.com\"\n\
             secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n",
            "operator.url",
        ),
        // A syntax error keeps its position, not the line it is on.
        ("[api]\ntokens = [\"hunter2\n", "line 2"),
        (
            "[database]\nmax_connections = 4000000000\n",
            "database.max_connections",
        ),
        (
            "[database]\nmax_connections = 2\nmin_connections = 50\n",
            "database.min_connections",
        ),
        (
            "[server]\nlisten = \"127.0.0.1:8080\"\nmetrics_listen = \"0.0.0.0:8080\"\n",
            "server.metrics_listen",
        ),
        (
            "[api]\ntokens = [\"hunter2hunter2hunter2hunter2 \"]\n",
            "printable ASCII without spaces",
        ),
        (
            "[api]\ntokens = [\"                          \"]\n",
            "api.tokens",
        ),
        (
            "[[api.tokens]]\nname = \"ci\"\ntoken = \"hunter2hunter2hunter2hunter2\"\nscopes = [\"superuser\"]\n",
            "`api.tokens.0.scopes.0`: unknown variant: found `superuser`",
        ),
        (
            "[[api.tokens]]\nname = \"ci\"\ntoken = \"hunter2hunter2hunter2hunter2\"\nscope = [\"read\"]\n",
            "`api.tokens.0.scope`: unknown field",
        ),
        (
            "[server]\ntls_key = \"/etc/hookd/key.pem\"\n",
            "`server.tls_cert` must be set with server.tls_key",
        ),
        (
            "[sender]\ntimeout_ms = 200000\n",
            "lower sender.timeout_ms",
        ),
        (
            "[telemetry]\notlp_endpoint = \"http://otlp:hunter2@collector:4318\"\n",
            "telemetry.otlp_endpoint",
        ),
        (
            "[telemetry]\notlp_endpoint = \"http://collector:4318/v1/logs\"\n",
            "not another signal's",
        ),
    ];
    for (toml, key) in cases {
        let message = Settings::from_toml_overrides(toml).unwrap_err().to_string();
        assert!(message.contains(key), "{toml:?} gave {message:?}");
        assert!(!message.contains('\n'), "{toml:?} gave {message:?}");
        assert!(!message.contains("hunter2"), "{toml:?} gave {message:?}");
    }
}

#[test]
fn scoped_tokens_load_by_token_or_digest_and_plain_ones_mean_admin() {
    let settings = Settings::from_toml_overrides(
        "[api]\ntokens = [\"plain-0123456789abcdefghij\", \
         { name = \"checkout\", token = \"checkout-0123456789abcdef\", scopes = [\"write\"] }, \
         { name = \"dash\", sha256 = \"d0c1a6ef0bc8f4cdf6d4ea55e1cc4f6f1e9a2a10cd1fd3c5e4a5b7ef2b73f7a2\", scopes = [\"read\"] }]\n",
    )
    .unwrap();
    let credentials = settings.api.credentials();
    assert_eq!(credentials.len(), 3);
    assert_eq!(credentials[0].name, "token-1");
    assert!(credentials[0].scopes.allow(Scope::Secrets));
    assert_eq!(credentials[1].digest, digest("checkout-0123456789abcdef"));
    assert!(credentials[1].scopes.allow(Scope::Write));
    assert!(!credentials[1].scopes.allow(Scope::Read));
    assert_eq!(credentials[2].digest[0], 0xd0);
    let shown = settings.to_masked_toml();
    assert!(!shown.contains("checkout-0123456789abcdef"), "{shown}");
    assert!(shown.contains("checkout"), "{shown}");
}

#[test]
fn bad_token_entries_are_refused_without_echoing_them() {
    for toml in [
        "[api]\ntokens = [{ name = \"a\", token = \"hunter2-short\", scopes = [\"read\"] }]\n",
        "[api]\ntokens = [{ name = \"a\", token = \"hunter2-0123456789abcdefgh\", scopes = [] }]\n",
        "[api]\ntokens = [{ name = \"a b\", token = \"hunter2-0123456789abcdefgh\", scopes = [\"read\"] }]\n",
        "[api]\ntokens = [{ name = \"a\", sha256 = \"hunter2\", scopes = [\"read\"] }]\n",
        "[api]\ntokens = [{ name = \"a\", scopes = [\"read\"] }]\n",
        "[api]\ntokens = [{ name = \"a\", token = \"hunter2-0123456789abcdefgh\", scopes = [\"root\"] }]\n",
        "[api]\ntokens = [{ name = \"a\", token = \"hunter2-0123456789abcdefgh\", scopes = [\"read\"] }, \
         { name = \"a\", token = \"hunter2-0123456789abcdefgX\", scopes = [\"read\"] }]\n",
        "[api]\ntokens = [\"hunter2-0123456789abcdefgh\", \"hunter2-0123456789abcdefgh\"]\n",
        // Bearer tokens starting `hkc_` are read as pull consumer tokens.
        "[api]\ntokens = [\"hkc_hunter2-0123456789abcdefgh\"]\n",
        "[api]\ntokens = [{ name = \"a\", token = \"hkc_hunter2-0123456789abcdef\", scopes = [\"read\"] }]\n",
    ] {
        let message = Settings::from_toml_overrides(toml).unwrap_err().to_string();
        assert!(message.contains("api.tokens"), "{toml:?} gave {message:?}");
        assert!(!message.contains("hunter2"), "{toml:?} gave {message:?}");
    }
}

#[test]
fn secret_keys_load_masked_and_their_absence_is_a_warning() {
    let settings = Settings::from_toml_overrides(
        "[secrets]\nkeys = [{ id = \"2026-11\", key = \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\" }]\n",
    )
    .unwrap();
    assert_eq!(settings.keyring().current_id(), Some("2026-11"));
    assert!(settings.warnings().is_empty());
    let shown = settings.to_masked_toml();
    assert!(
        !shown.contains("AAECAwQF") && shown.contains("2026-11"),
        "{shown}"
    );
    let plain = Settings::from_toml_overrides("").unwrap();
    assert!(plain.warnings()[0].contains("secrets.keys"));
    assert_eq!(plain.rotation_overlap(), Duration::from_secs(86_400));
}

#[test]
fn a_remote_database_without_verified_tls_is_warned_about() {
    let warning = |url: &str| {
        Settings::from_toml_overrides(&format!("[database]\nurl = \"{url}\"\n"))
            .unwrap()
            .database_tls_warning()
    };
    assert!(warning("postgres://u:hunter2@db.internal/hookd")
        .is_some_and(|w| w.contains("sslmode=prefer") && !w.contains("hunter2")));
    assert!(warning("postgres://db.internal/hookd?sslmode=require").is_some());
    assert!(warning("postgres://db.internal/hookd?sslmode=verify-full").is_none());
    assert!(warning("postgres://db.internal/hookd?sslmode=verify-ca").is_none());
    assert!(warning("postgres://127.0.0.1:5432/hookd").is_none());
    assert!(warning("postgres://[::1]/hookd").is_none());
    assert!(warning("postgres://localhost/hookd").is_none());
    assert!(warning("postgres:///hookd?host=/var/run/postgresql").is_none());
}

#[test]
fn an_operator_url_with_a_whsec_secret_is_accepted() {
    let settings = Settings::from_toml_overrides(
        "[operator]\nurl = \"https://ops.example.com/hooks\"\n\
         secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n",
    )
    .unwrap();
    assert!(settings.operator.enabled());
    assert!(!settings.to_masked_toml().contains("MfKQ9r8G"));
    assert!(!settings.to_masked_toml().contains("ops.example.com/hooks"));
}

#[test]
fn a_url_that_does_not_parse_says_why() {
    let toml = "[database]\nurl = \"postgres://u:hunter2@db:badport/x\"\n";
    let message = Settings::from_toml_layers(&[toml]).unwrap_err().to_string();
    assert!(message.contains("invalid port number"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}

#[test]
fn a_read_replica_without_server_mode_is_refused_naming_it() {
    let settings =
        Settings::from_toml_layers(&["[database]\nread_url = \"postgres://replica/hookd\"\n"])
            .expect("loads: the mode is checked where one is needed");
    let error = settings.mode().expect_err("embedded mode has no replica");
    assert!(error.to_string().contains("database.read_url"), "{error}");
    let server = Settings::from_toml_layers(&[
        "[database]\nurl = \"postgres://db/hookd\"\nread_url = \"postgres://replica/hookd\"\n\
         [redis]\nurl = \"redis://cache\"\n",
    ])
    .unwrap();
    #[cfg(feature = "server")]
    assert_eq!(server.mode().unwrap(), Mode::Server);
    #[cfg(not(feature = "server"))]
    assert!(server.mode().is_err());
}

/// A build without the `server` feature (scripts/run's) refuses server
/// settings as invalid configuration, saying how to get a build with it.
#[cfg(not(feature = "server"))]
#[test]
fn a_build_without_server_mode_refuses_server_settings_saying_how_to_build_it() {
    let server = Settings::from_toml_layers(&[
        "[database]\nurl = \"postgres://db/hookd\"\n[redis]\nurl = \"redis://cache\"\n",
    ])
    .unwrap();
    let error = server
        .mode()
        .expect_err("no server mode in this build")
        .to_string();
    assert!(error.contains("built without server mode"), "{error}");
    assert!(error.contains("cargo build --release"), "{error}");
}

#[test]
fn a_network_may_be_one_address_and_a_listen_address_is_refused_showing_the_form() {
    let settings = Settings::from_toml_overrides(
        "[sender]\nallow_networks = [\"10.0.0.5\", \"fd00::1\", \"192.168.0.0/16\"]\n",
    )
    .unwrap();
    let shown: Vec<String> = settings
        .sender
        .allow_networks
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(shown, ["10.0.0.5/32", "fd00::1/128", "192.168.0.0/16"]);
    let message = Settings::from_toml_overrides("[server]\nlisten = \"0.0.0.0\"\n")
        .unwrap_err()
        .to_string();
    assert!(message.contains("such as 127.0.0.1:8080"), "{message}");
    let everything =
        Settings::from_toml_overrides("[sender]\nallow_networks = [\"0.0.0.0/0\"]\n").unwrap();
    assert!(
        everything
            .warnings()
            .iter()
            .any(|w| w.contains("sender.allow_networks holds 0.0.0.0/0")),
        "{:?}",
        everything.warnings()
    );
}

#[test]
fn a_variable_that_names_a_setting_in_another_spelling_is_refused_naming_the_right_one() {
    let refused =
        |names: &[&str]| load::misspelt_variable(names.iter().map(std::ffi::OsString::from));
    let message = refused(&["PATH", "HOOKD_DATABASE_URL"]).unwrap();
    assert!(
        message.starts_with("HOOKD_DATABASE_URL is not read"),
        "{message}"
    );
    assert!(message.ends_with("HOOKD_DATABASE__URL"), "{message}");
    let message = refused(&["hookd_server__listen"]).unwrap();
    assert!(message.ends_with("HOOKD_SERVER__LISTEN"), "{message}");
    assert!(refused(&["HOOKD_DISPATCHER_LEASE_MS"])
        .unwrap()
        .ends_with("HOOKD_DISPATCHER__LEASE_MS"));
    // What names no setting is a wrapper's own, and the right spelling is read.
    assert_eq!(
        refused(&[
            "HOOKD_BIN",
            "HOOKD_TEST_LOG",
            "HOOKD_CONFIG",
            "HOOKD_DATABASE__URL"
        ]),
        None
    );
}
