//! The mode the settings choose (embedded or server) and what each
//! refuses: one store URL without the other, a role or a data directory
//! the mode does not take, a misspelt variable, a data directory open to
//! others, a dispatcher turned off.

use super::{hookd, stderr};

#[test]
fn config_check_says_which_mode_the_settings_choose_and_why() {
    let embedded = hookd(
        &["config", "check"],
        &[("HOOKD_EMBEDDED__PATH", "/srv/hookd/hookd.db")],
    );
    let printed = String::from_utf8_lossy(&embedded.stdout);
    assert_eq!(embedded.status.code(), Some(0), "{}", stderr(&embedded));
    assert!(
        printed.starts_with(
            "# mode: embedded (database.url and redis.url are empty): SQLite at /srv/hookd/hookd.db"
        ),
        "{printed}"
    );
    let server = hookd(
        &["config", "check"],
        &[
            ("HOOKD_DATABASE__URL", "postgres://db.internal/hookd"),
            ("HOOKD_REDIS__URL", "redis://redis.internal"),
        ],
    );
    let printed = String::from_utf8_lossy(&server.stdout);
    assert!(
        printed.starts_with("# mode: server (database.url and redis.url are set)"),
        "{printed}"
    );
}

#[test]
fn one_store_url_without_the_other_exits_78_naming_both() {
    for (set, missing) in [
        ("HOOKD_DATABASE__URL", "redis.url"),
        ("HOOKD_REDIS__URL", "database.url"),
    ] {
        let value = if missing == "redis.url" {
            "postgres://db.internal/hookd"
        } else {
            "redis://redis.internal"
        };
        for args in [&["serve"][..], &["config", "check"], &["migrate"]] {
            let output = hookd(args, &[(set, value), ("HOOKD_LOG__FILTER", "off")]);
            let message = stderr(&output);
            assert_eq!(output.status.code(), Some(78), "{args:?} {message}");
            assert_eq!(message.trim().lines().count(), 1, "{message}");
            assert!(
                message.contains(&format!("but {missing} is empty")),
                "{message}"
            );
        }
    }
}

#[test]
fn embedded_mode_refuses_a_role_other_than_all_as_a_configuration_error_and_touches_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    for role in ["api", "dispatcher"] {
        let output = hookd(
            &["serve", "--role", role, "--data-dir", data],
            &[
                ("HOOKD_LOG__FILTER", "off"),
                ("HOOKD_SERVER__LISTEN", "127.0.0.1:0"),
            ],
        );
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(78), "{message}");
        assert!(
            message.contains(&format!("--role {role} needs server mode")),
            "{message}"
        );
    }
    assert!(!dir.path().join("hookd.db").exists());
}

#[test]
fn migrate_in_embedded_mode_creates_the_data_dir_and_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("new").join("dir");
    let output = hookd(
        &["migrate", "--data-dir", data.to_str().unwrap()],
        &[("HOOKD_LOG__FILTER", "off")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(data.join("hookd.db").exists());
    // A second run finds nothing to apply and succeeds too.
    let again = hookd(
        &["migrate", "--data-dir", data.to_str().unwrap()],
        &[("HOOKD_LOG__FILTER", "off")],
    );
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
}

#[test]
fn a_data_dir_given_in_server_mode_is_a_configuration_error() {
    for args in [
        &["serve", "--data-dir", "/srv"][..],
        &["config", "check", "--data-dir", "/srv"],
    ] {
        let output = hookd(
            args,
            &[
                ("HOOKD_DATABASE__URL", "postgres://db.internal/hookd"),
                ("HOOKD_REDIS__URL", "redis://redis.internal"),
                ("HOOKD_LOG__FILTER", "off"),
            ],
        );
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(78), "{args:?} {message}");
        assert!(
            message.contains("--data-dir is for embedded mode"),
            "{message}"
        );
    }
}

/// `HOOKD_DATABASE_URL` (one underscore) once started an embedded hookd
/// beside a PostgreSQL nobody used, and an `embedded.path` that left
/// `--data-dir` put the file elsewhere.
#[test]
fn a_misspelt_variable_or_a_path_outside_the_data_dir_exits_78_touching_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    for (env, said) in [
        (
            ("HOOKD_DATABASE_URL", "postgres://db.internal/hookd"),
            "HOOKD_DATABASE_URL is not read",
        ),
        (
            ("HOOKD_EMBEDDED__PATH", "../elsewhere.db"),
            "must name a file inside --data-dir",
        ),
    ] {
        for command in [
            &["serve", "--data-dir", data][..],
            &["migrate", "--data-dir", data],
        ] {
            let output = hookd(
                command,
                &[
                    env,
                    ("HOOKD_LOG__FILTER", "off"),
                    ("HOOKD_SERVER__LISTEN", "127.0.0.1:0"),
                ],
            );
            let message = stderr(&output);
            assert_eq!(
                output.status.code(),
                Some(78),
                "{command:?} {env:?}: {message}"
            );
            assert!(message.contains(said), "{message}");
            assert_eq!(message.trim().lines().count(), 1, "{message}");
        }
    }
    assert!(!dir.path().join("hookd.db").exists());
}

/// `config check` refuses the data directory `serve` would refuse, as
/// `serve` does (it passed a file and a directory open to others).
#[test]
fn config_check_refuses_the_data_directory_serve_would_refuse() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    for (data, said) in [(&open, "chmod 700"), (&file, "is not a directory")] {
        let data = data.to_str().unwrap();
        for command in [
            &["config", "check", "--data-dir", data][..],
            &["serve", "--data-dir", data],
        ] {
            let output = hookd(
                command,
                &[
                    ("HOOKD_LOG__FILTER", "off"),
                    ("HOOKD_SERVER__LISTEN", "127.0.0.1:0"),
                ],
            );
            let message = stderr(&output);
            assert_eq!(output.status.code(), Some(78), "{command:?}: {message}");
            assert!(message.contains(said), "{command:?}: {message}");
        }
    }
    assert!(!open.join("hookd.db").exists());
}

/// `dispatcher.enabled = false` in embedded mode holds what it accepts
/// (a warning says so); beside `--role dispatcher` it would leave the
/// process nothing to do, and is refused.
#[test]
fn a_dispatcher_turned_off_is_a_warning_embedded_and_refused_beside_role_dispatcher() {
    let output = hookd(
        &["config", "check"],
        &[("HOOKD_DISPATCHER__ENABLED", "false")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(
        shown.contains("# warning: dispatcher.enabled is false in embedded mode"),
        "{shown}"
    );
    let output = hookd(
        &["serve", "--role", "dispatcher"],
        &[
            ("HOOKD_DISPATCHER__ENABLED", "false"),
            ("HOOKD_DATABASE__URL", "postgres://db.internal/hookd"),
            ("HOOKD_REDIS__URL", "redis://redis.internal"),
            ("HOOKD_LOG__FILTER", "off"),
        ],
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(78), "{message}");
    assert!(message.contains("nothing to do"), "{message}");
}
