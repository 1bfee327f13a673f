//! A database another build's migrations left is refused at start with
//! what to do, rather than run against. A build older than its schema
//! ignored what it did not know (an ordered key's hold, a payload filter,
//! an ed25519 key: it sent those unsigned); a build newer than its schema,
//! told not to migrate (`database.migrate = false`), answered ready and
//! then 500 to every request (an upgrade review found both).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::helpers::{redis_url, test_settings};
use hookd::startup::{App, Role};

/// A migration no build of hookd has, as a newer build's would be.
const NEWER: &str =
    "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
     VALUES (99990101000001, 'from a newer hookd', true, '\\x00', 1)";

/// The test database's URL and settings of a server-mode hookd on it.
fn server_settings(pool: &sqlx::PgPool, database: &str) -> hookd::config::Settings {
    let name = pool.connect_options().get_database().unwrap().to_string();
    let mut url = url::Url::parse(&std::env::var("DATABASE_URL").unwrap()).unwrap();
    url.set_path(&name);
    test_settings(
        &redis_url(),
        &format!("[database]\nurl = \"{url}\"\n{database}\n[server]\nlisten = \"127.0.0.1:0\"\n"),
    )
}

async fn refusal(settings: hookd::config::Settings) -> String {
    match App::build(settings, Role::All).await {
        Ok(_) => panic!("hookd started"),
        Err(error) => format!("{error:#}"),
    }
}

#[sqlx::test]
async fn a_server_told_not_to_migrate_refuses_a_schema_older_than_its_own(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    // As if this build's last migration had not run yet.
    sqlx::query(
        "DELETE FROM _sqlx_migrations WHERE version = (SELECT max(version) FROM _sqlx_migrations)",
    )
    .execute(&pool)
    .await
    .unwrap();
    let message = refusal(server_settings(&pool, "migrate = false")).await;
    assert!(
        message.contains("lacks 1 of this build's migrations") && message.contains("hookd migrate"),
        "{message}"
    );
}

#[sqlx::test]
async fn a_schema_a_newer_hookd_made_is_refused_whether_or_not_hookd_migrates(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    sqlx::query(NEWER).execute(&pool).await.unwrap();
    for database in ["migrate = true", "migrate = false"] {
        let message = refusal(server_settings(&pool, database)).await;
        assert!(
            message.contains("migrated by a newer hookd (migration 99990101000001"),
            "{database}: {message}"
        );
    }
}

#[tokio::test]
async fn an_embedded_file_a_newer_hookd_made_is_refused_by_migrate_and_by_serve() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let hookd = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hookd"));
        command.args(args).arg("--data-dir").arg(&data);
        for (key, _) in std::env::vars() {
            if key.starts_with("HOOKD_") {
                command.env_remove(key);
            }
        }
        let mut child = command
            .env("HOOKD_SERVER__LISTEN", "127.0.0.1:0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("hookd runs");
        // A `serve` that did not refuse would run on: stopped at a deadline.
        let deadline = Instant::now() + Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        child.wait_with_output().unwrap()
    };
    let made = hookd(&["migrate"]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(data.join("hookd.db"));
    let file = sqlx::SqlitePool::connect_with(options).await.unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99990101000001, 'from a newer hookd', 1, x'00', 1)",
    )
    .execute(&file)
    .await
    .unwrap();
    file.close().await;
    for command in ["migrate", "serve"] {
        let refused = hookd(&[command]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{command}: {stderr}");
        assert!(
            stderr.contains("migrated by a newer hookd (migration 99990101000001"),
            "{command}: {stderr}"
        );
    }
}
