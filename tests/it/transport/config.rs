//! What `hookd` says of its TLS settings at start and in `config check`:
//! a missing or broken CA file, a remote database without verified TLS.

use super::*;

/// Runs the hookd binary with only `env` as its HOOKD_* configuration.
fn hookd(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookd"));
    command
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("PGSSLMODE");
    for (key, _) in std::env::vars() {
        if key.starts_with("HOOKD_") {
            command.env_remove(key);
        }
    }
    command.envs(env.iter().copied());
    command.output().expect("hookd runs")
}

#[test]
fn a_missing_or_broken_ca_file_stops_hookd_with_one_line_naming_its_key() {
    for (key, var) in [
        ("sender.ca_file", "HOOKD_SENDER__CA_FILE"),
        ("redis.ca_file", "HOOKD_REDIS__CA_FILE"),
    ] {
        for path in [
            "/nonexistent/ca.pem",
            concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"),
        ] {
            let output = hookd(
                &["serve"],
                &[(var, path), ("HOOKD_REDIS__URL", "rediss://127.0.0.1:1")],
            );
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(78), "{key} {path}: {stderr}");
            assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
            assert!(stderr.contains(key), "{stderr}");
        }
    }
}

#[test]
fn config_check_warns_about_a_remote_database_without_verified_tls() {
    let check = |url: &str| {
        let output = hookd(
            &["config", "check"],
            &[
                ("HOOKD_DATABASE__URL", url),
                ("HOOKD_REDIS__URL", "redis://127.0.0.1:1"),
            ],
        );
        assert_eq!(output.status.code(), Some(0));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let warned = check("postgres://hookd:hunter2@db.internal/hookd");
    assert!(
        warned
            .lines()
            .any(|l| l.starts_with("# warning: ") && l.contains("sslmode=prefer")),
        "{warned}"
    );
    assert!(!warned.contains("hunter2"));
    let verified = check("postgres://db.internal/hookd?sslmode=verify-full&sslrootcert=/ca.pem");
    assert!(
        !verified
            .lines()
            .any(|l| l.starts_with("# warning: ") && l.contains("sslmode")),
        "{verified}"
    );
}
