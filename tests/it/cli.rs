//! The `hookd` command as a person or a supervisor meets it: help for every
//! subcommand, a version, one-line refusals that name the key, and exit codes
//! that tell a bad configuration (78) from a failure to start (1).

mod modes;

use std::process::{Command, Output};

use crate::helpers::free_port;

/// `hookd args` without the test runner's own HOOKD_* variables and
/// RUST_LOG, which must not leak into these runs.
fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookd"));
    command.args(args).env_remove("RUST_LOG");
    for (key, _) in std::env::vars() {
        if key.starts_with("HOOKD_") {
            command.env_remove(key);
        }
    }
    command
}

fn hookd(args: &[&str], env: &[(&str, &str)]) -> Output {
    command(args)
        .envs(env.iter().copied())
        .output()
        .expect("hookd runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn every_subcommand_has_help_and_the_version_is_printed() {
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["migrate", "--help"],
        &["config", "--help"],
        &["config", "check", "--help"],
        &["version", "--help"],
        &["openapi", "--help"],
    ] {
        let output = hookd(args, &[]);
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("Usage: hookd"),
            "{args:?}"
        );
    }
    let output = hookd(&["--help"], &[]);
    assert!(String::from_utf8_lossy(&output.stdout).contains("Exit codes"));
    let output = hookd(&["version"], &[]);
    assert_eq!(output.status.code(), Some(0));
    let newest = |migrator: &sqlx::migrate::Migrator| migrator.iter().last().unwrap().version;
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!(
            "hookd {} (schema: PostgreSQL {}, embedded {})",
            env!("CARGO_PKG_VERSION"),
            newest(&hookd::store::postgres::MIGRATOR),
            newest(&hookd::store::sqlite::MIGRATOR)
        )
    );
    assert_eq!(
        hookd(&["serve", "--rolee", "api"], &[]).status.code(),
        Some(2)
    );
}

/// The clients are generated from what `hookd openapi` prints
/// (`scripts/clients`): the served document, byte for byte.
#[tokio::test]
async fn hookd_openapi_prints_the_document_the_api_serves() {
    let output = hookd(&["openapi"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let app = crate::backends::Backend::sqlite().await.spawn().await;
    let served = reqwest::get(format!("{}/openapi.json", app.base))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let mut printed = output.stdout;
    assert_eq!(printed.pop(), Some(b'\n'), "one line, ended");
    assert!(printed == served.as_ref(), "the served bytes");
}

#[test]
fn a_bad_configuration_exits_78_with_one_line_naming_the_key_and_hiding_the_secret() {
    for (env, key) in [
        (("HOOKD_API__TOKENS", "hunter2hunter2"), "api.tokens"),
        (("HOOKD_SENDER__TIMEOUT_MS", "soon"), "sender.timeout_ms"),
        (("HOOKD_REDIS__URL", "http://u:hunter2@cache"), "redis.url"),
    ] {
        for command in [&["serve"][..], &["config", "check"], &["migrate"]] {
            let output = hookd(command, &[env]);
            let message = stderr(&output);
            assert_eq!(
                output.status.code(),
                Some(78),
                "{command:?} {env:?}: {message}"
            );
            assert_eq!(message.trim().lines().count(), 1, "{message}");
            assert!(message.contains(key), "{message}");
            assert!(!message.contains("hunter2"), "{message}");
        }
    }
    let output = hookd(&["serve", "--config", "/nonexistent/hookd.toml"], &[]);
    assert_eq!(output.status.code(), Some(78));
    assert!(stderr(&output).contains("/nonexistent/hookd.toml"));
}

#[test]
fn config_check_prints_the_effective_values_with_secrets_masked() {
    let output = hookd(
        &["config", "check"],
        &[
            (
                "HOOKD_DATABASE__URL",
                "postgres://hookd:hunter2@db.internal/hookd",
            ),
            ("HOOKD_REDIS__URL", "redis://:hunter2@redis.internal:1"),
            ("HOOKD_API__TOKENS", r#"["token-hunter2-0123456789abcdef"]"#),
            ("HOOKD_SENDER__TIMEOUT_MS", "4321"),
        ],
    );
    let printed = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(printed.contains("timeout_ms = 4321"), "{printed}");
    assert!(printed.contains(r#"url = "***""#), "{printed}");
    assert!(!printed.contains("hunter2"), "{printed}");
    // An unset secret shows as empty: the operator webhook is off.
    assert!(printed.contains("[operator]\nurl = \"\""), "{printed}");
}

#[test]
fn an_unreachable_database_exits_1_with_one_line_saying_so() {
    let port = free_port();
    let url = format!("postgres://postgres:hunter2@127.0.0.1:{port}/hookd");
    let output = hookd(
        &["serve"],
        &[
            ("HOOKD_DATABASE__URL", url.as_str()),
            ("HOOKD_REDIS__URL", "redis://127.0.0.1:1"),
            ("HOOKD_DATABASE__ACQUIRE_TIMEOUT_MS", "500"),
            ("HOOKD_SERVER__LISTEN", "127.0.0.1:0"),
            ("HOOKD_LOG__FILTER", "off"),
        ],
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert_eq!(message.trim().lines().count(), 1, "{message}");
    // What was refused, and where: not only that a pool timed out.
    assert!(
        message.contains(&format!("PostgreSQL at 127.0.0.1:{port}"))
            && message.contains("Connection refused"),
        "{message}"
    );
    assert!(!message.contains("hunter2"), "{message}");
}

/// `--config <(envsubst < hookd.toml)` hands hookd a pipe, not a file.
#[test]
fn a_config_file_may_be_a_pipe_and_a_directory_is_refused_as_one() {
    use std::io::Write;
    let mut child = command(&["config", "check", "--config", "/dev/stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"[sender]\ntimeout_ms = 4321\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("timeout_ms = 4321"));

    let dir = tempfile::tempdir().unwrap();
    let output = hookd(
        &["config", "check", "--config", dir.path().to_str().unwrap()],
        &[],
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(78), "{message}");
    assert!(message.contains("is a directory"), "{message}");
}

/// An empty variable is an unset one, as a unit file's `Environment=X=`
/// or a compose file's `X: ${X:-}` means it: an empty HOOKD_CONFIG was
/// read as `--config` without its file, and an empty RUST_LOG let
/// nothing but errors through.
#[test]
fn an_empty_hookd_config_or_rust_log_is_as_if_unset() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hookd.toml");
    std::fs::write(&file, "[sender]\ntimeout_ms = 4321\n").unwrap();
    let file = file.to_str().unwrap();
    let shown = |output: &Output| {
        assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let named = shown(&hookd(&["config", "check"], &[("HOOKD_CONFIG", file)]));
    assert!(named.contains("timeout_ms = 4321"), "{named}");
    let empty = shown(&hookd(&["config", "check"], &[("HOOKD_CONFIG", "")]));
    assert!(
        empty.contains("timeout_ms = 15000"),
        "the defaults: {empty}"
    );
    let other = dir.path().join("other.toml");
    std::fs::write(&other, "[sender]\ntimeout_ms = 1234\n").unwrap();
    let flag = shown(&hookd(
        &["config", "check", "--config", other.to_str().unwrap()],
        &[("HOOKD_CONFIG", file)],
    ));
    assert!(flag.contains("timeout_ms = 1234"), "--config wins: {flag}");

    let data = dir.path().join("data");
    let output = command(&["migrate", "--data-dir", data.to_str().unwrap()])
        .env("RUST_LOG", "")
        .output()
        .unwrap();
    let logged = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{logged}");
    assert!(logged.contains("migrations applied"), "{logged}");
}

#[test]
fn a_copy_given_a_source_that_is_no_sqlite_url_is_a_wrong_command_line() {
    let output = hookd(
        &[
            "copy",
            "--from",
            "./hookd.db",
            "--to",
            "postgres://db.internal/hookd",
        ],
        &[],
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("--from must be sqlite:PATH"), "{message}");
}

/// A file that is not a database says so once: sqlx's error carries its
/// cause's text and names it as its source too, and the line held it twice.
#[test]
fn a_copy_from_a_file_that_is_no_database_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    std::fs::write(&path, "not a database, not even close\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let from = format!("sqlite:{}", path.display());
    let output = hookd(
        &[
            "copy",
            "--from",
            &from,
            "--to",
            "postgres://127.0.0.1:1/unused",
        ],
        &[],
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert_eq!(
        message.matches("file is not a database").count(),
        1,
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
}

/// figment types what it reads from the environment: a text setting whose
/// value reads as a number or a boolean was refused (`HOOKD_REDIS__PREFIX=123`).
#[test]
fn a_text_setting_from_the_environment_is_text_whatever_it_looks_like() {
    let output = hookd(
        &["config", "check"],
        &[
            ("HOOKD_REDIS__PREFIX", "123"),
            ("HOOKD_PORTAL__NAME", "2024"),
            ("HOOKD_TELEMETRY__SERVICE_NAME", "true"),
            ("HOOKD_EMBEDDED__PATH", "2024"),
        ],
    );
    let shown = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for line in [
        "prefix = \"123\"",
        "name = \"2024\"",
        "service_name = \"true\"",
        "path = \"2024\"",
    ] {
        assert!(shown.contains(line), "{line}: {shown}");
    }
}

/// A value out of range says where it was given, as a value of the wrong
/// type does: the variable, or the file as named on the command line.
#[test]
fn a_value_out_of_range_says_where_it_was_given() {
    let output = hookd(&["config", "check"], &[("HOOKD_SENDER__TIMEOUT_MS", "0")]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(78), "{message}");
    assert!(
        message.contains(
            "`sender.timeout_ms` must be between 1 and 300000 (in HOOKD_SENDER__TIMEOUT_MS)"
        ),
        "{message}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hookd.toml");
    std::fs::write(&file, "[database]\nmax_connections = 0\n").unwrap();
    let output = hookd(
        &["config", "check", "--config", file.to_str().unwrap()],
        &[],
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(78), "{message}");
    assert!(
        message.contains(&format!("(in {})", file.display())),
        "{message}"
    );
}

#[test]
fn a_reader_that_stops_reading_ends_the_output_and_the_command_still_succeeds() {
    // `hookd openapi | head`: the output's reader has gone before hookd
    // writes. hookd once said "Broken pipe" and exited 1 here, and
    // `config check` panicked (exit 101).
    for args in [&["openapi"][..], &["config", "check"], &["version"]] {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let output = command(args).stdout(writer).output().expect("hookd runs");
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(stderr(&output), "", "{args:?}");
    }
}
