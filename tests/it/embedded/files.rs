//! The embedded files are the account's own (issue #47, findings 1 and 6):
//! made 0700 and 0600 whatever the umask; a file open to other accounts,
//! or a link, refused by `serve`, `migrate` and `copy` in one line naming
//! it and the fix (exit 78), the link's target untouched, and so is a
//! `--data-dir` open to others or a link (`copy` has none); and after the
//! walk that seals stored secrets, no plaintext left in the database file
//! or its write-ahead log.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use super::{embedded_command, Embedded, DEADLINE};
use crate::helpers::{eventually, free_port, TOKEN};

const KEY: &str = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn beside(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// `command` run through `sh` with umask 022 (the usual one), so that the
/// files' modes come from hookd, not from the test's own umask.
fn under_umask_022(command: &Command) -> Command {
    let mut shell = Command::new("sh");
    shell
        .arg("-c")
        .arg("umask 022 && exec \"$0\" \"$@\"")
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => shell.env(key, value),
            None => shell.env_remove(key),
        };
    }
    shell
}

/// The three commands that open an embedded database.
#[derive(Debug, Clone, Copy)]
enum Opens {
    Serve,
    Migrate,
    Copy,
}

const COMMANDS: [Opens; 3] = [Opens::Serve, Opens::Migrate, Opens::Copy];

/// `hookd <command>` on the database `data/hookd.db`, embedded (the
/// test's own service URLs removed), logging off: hookd's own word is its
/// only output.
fn command(opens: Opens, data: &Path) -> Command {
    let mut args: Vec<OsString> = match opens {
        Opens::Serve => vec!["serve".into(), "--data-dir".into(), data.into()],
        Opens::Migrate => vec!["migrate".into(), "--data-dir".into(), data.into()],
        Opens::Copy => {
            let mut from = OsString::from("sqlite:");
            from.push(data.join("hookd.db"));
            // Never reached: the source is refused first.
            let to = "postgres://127.0.0.1:1/unused";
            vec![
                "copy".into(),
                "--from".into(),
                from,
                "--to".into(),
                to.into(),
            ]
        }
    };
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookd"));
    command
        .args(args.drain(..))
        .env_remove("HOOKD_DATABASE__URL")
        .env_remove("HOOKD_REDIS__URL")
        .env_remove("RUST_LOG")
        .env("HOOKD_LOG__FILTER", "off")
        .env("HOOKD_API__TOKENS", format!("[\"{TOKEN}\"]"))
        .env("HOOKD_SERVER__LISTEN", format!("127.0.0.1:{}", free_port()))
        .stdin(Stdio::null());
    command
}

/// Runs `command` to its exit, which must come within 10 s (a hookd that
/// started instead is killed, and the test fails).
fn run(mut command: Command) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "{command:?} did not exit: it started; {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A database hookd made (`hookd migrate`) in `data`, then released.
fn migrated(data: &Path) {
    let output = run(command(Opens::Migrate, data));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `opens` is refused with exit 78 and one line on stderr, which contains
/// every one of `says`.
fn refused(opens: Opens, data: &Path, says: &[&str]) {
    let output = run(command(opens, data));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{opens:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{opens:?}: {stderr}");
    for said in says {
        assert!(stderr.contains(said), "{opens:?} names {said:?}: {stderr}");
    }
}

#[tokio::test]
async fn a_fresh_serve_under_umask_022_makes_its_data_dir_0700_and_every_file_0600() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let listen = format!("127.0.0.1:{}", free_port());
    let log = dir.path().join("hookd.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut serve = under_umask_022(&embedded_command(&data, &[]));
    serve
        .env("HOOKD_SERVER__LISTEN", &listen)
        .stdout(file.try_clone().unwrap())
        .stderr(file);
    let mut hookd = crate::helpers::HookdProcess {
        child: serve.spawn().unwrap(),
    };
    let base = format!("http://{listen}");
    let ready = tokio::time::timeout(
        DEADLINE,
        crate::helpers::HookdProcess::wait_ready(&base, DEADLINE),
    );
    if ready.await.is_err() {
        panic!("not ready: {}", std::fs::read_to_string(&log).unwrap());
    }
    // A write, so that the write-ahead log and its index exist.
    let client = crate::helpers::http_client();
    let (status, body) = super::call_at(
        &client,
        &base,
        reqwest::Method::POST,
        "/v1/endpoints",
        Some(json!({"uid": "shop", "url": "http://127.0.0.1:9/hook"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let db = data.join("hookd.db");
    let mut modes = vec![(data.clone(), mode(&data))];
    for file in [
        db.clone(),
        beside(&db, "-wal"),
        beside(&db, "-shm"),
        beside(&db, ".lock"),
    ] {
        modes.push((file.clone(), mode(&file)));
    }
    let shown: Vec<String> = modes
        .iter()
        .map(|(path, mode)| format!("{} {mode:o}", path.display()))
        .collect();
    println!("modes under umask 022: {shown:?}");
    assert_eq!(modes[0].1, 0o700, "{shown:?}");
    for (file, mode) in &modes[1..] {
        assert_eq!(*mode, 0o600, "{}: {mode:o}", file.display());
    }
    hookd.signal("TERM");
    assert_eq!(hookd.wait(DEADLINE).await, Some(0));
}

#[tokio::test]
async fn a_data_dir_or_file_open_to_other_accounts_is_refused_by_each_command_naming_the_chmod() {
    // The database file a 0644 one under each command; the directory (a
    // 0755 --data-dir) under serve and migrate.
    for opens in COMMANDS {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        migrated(&data);
        let db = data.join("hookd.db");

        if !matches!(opens, Opens::Copy) {
            chmod(&data, 0o755);
            let fix = format!("chmod 700 {}", data.display());
            refused(opens, &data, &[&fix]);
            assert_eq!(
                mode(&data),
                0o755,
                "the directory's mode is left to its owner"
            );
            chmod(&data, 0o700);
        }

        chmod(&db, 0o644);
        let fix = format!("chmod 600 {}", db.display());
        refused(opens, &data, &[&fix]);
        assert_eq!(mode(&db), 0o644, "the file's mode is left to its owner");
    }
}

/// A data directory an older build made under umask 022 (0755, its files
/// 0644) is refused once, every open path named in one line with the one
/// command that fixes them all; that command as printed lets hookd start.
/// Named one a start, it took three to five refused starts, each exit 78,
/// which a supervisor does not retry (an upgrade review).
#[tokio::test]
async fn every_path_open_to_other_accounts_is_named_in_one_refusal_whose_command_fixes_them_all() {
    for opens in [Opens::Serve, Opens::Migrate] {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        migrated(&data);
        let db = data.join("hookd.db");
        let lock = beside(&db, ".lock");
        chmod(&data, 0o755);
        chmod(&db, 0o644);
        chmod(&lock, 0o644);
        let output = run(command(opens, &data));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(78), "{opens:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{opens:?}: {stderr}");
        let fix = format!(
            "chmod 700 {} && chmod 600 {} {}",
            data.display(),
            db.display(),
            lock.display()
        );
        assert!(stderr.contains(&format!("`{fix}`")), "{opens:?}: {stderr}");
        let fixed = Command::new("sh").arg("-c").arg(&fix).status().unwrap();
        assert!(fixed.success());
        migrated(&data);
    }
}

#[tokio::test]
async fn a_linked_lock_file_database_or_data_dir_is_refused_by_each_command_and_its_target_left_untouched(
) {
    for opens in COMMANDS {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        migrated(&data);
        let db = data.join("hookd.db");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        chmod(&victim, 0o600);

        let lock = beside(&db, ".lock");
        std::fs::remove_file(&lock).unwrap();
        std::os::unix::fs::symlink(&victim, &lock).unwrap();
        refused(
            opens,
            &data,
            &[&lock.display().to_string(), "symbolic link"],
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        std::fs::remove_file(&lock).unwrap();

        // The database file a link to one elsewhere.
        let other = dir.path().join("other");
        migrated(&other);
        std::fs::rename(&db, dir.path().join("moved.db")).unwrap();
        std::os::unix::fs::symlink(other.join("hookd.db"), &db).unwrap();
        refused(opens, &data, &[&db.display().to_string(), "symbolic link"]);

        // The data directory a link (`--data-dir`).
        if !matches!(opens, Opens::Copy) {
            let linked = dir.path().join("linked");
            std::os::unix::fs::symlink(&other, &linked).unwrap();
            refused(
                opens,
                &linked,
                &[&linked.display().to_string(), "symbolic link"],
            );
        }
    }
}

/// The bytes of `file` contain `needle` (a missing file contains nothing).
fn holds(file: &Path, needle: &str) -> bool {
    let bytes = std::fs::read(file).unwrap_or_default();
    bytes
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[tokio::test]
async fn after_the_walk_no_plaintext_secret_written_before_the_keys_is_left_in_the_file_or_its_log()
{
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut hookd = Embedded::start(&data, &[]).await;
    let mut plaintext = Vec::new();
    for n in 0..5 {
        let header = format!("Bearer header-credential-{n}-7f3a9c01");
        let (status, created) = hookd
            .post(
                "/v1/endpoints",
                json!({"uid": format!("shop-{n}"), "url": "http://127.0.0.1:9/hook",
                       "headers": {"Authorization": header}}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        plaintext.push(created["secret"].as_str().unwrap().to_string());
        plaintext.push(header);
    }
    // A notification with a credential among others without one, in one
    // page: the walk rewrites it alone, longer, so it moves within its
    // page, and the space it left holds the old value unless zeroed.
    for n in 0..9 {
        let mut body = json!({"endpoint": "shop-0", "payload": {"n": n}, "delay": "1h"});
        if n == 4 {
            let header = "notification-credential-c0ffee42";
            body["headers"] = json!({"X-Api-Key": header});
            plaintext.push(header.to_string());
        }
        hookd.notify(body).await;
    }
    assert_eq!(hookd.stop().await, Some(0));
    let db = data.join("hookd.db");
    let wal = beside(&db, "-wal");
    for value in &plaintext {
        assert!(
            holds(&db, value),
            "{value} written in plaintext without keys"
        );
    }

    let config = dir.path().join("keys.toml");
    std::fs::write(
        &config,
        format!(
            "[api]\ntokens = [\"{TOKEN}\"]\n\
             [secrets]\nkeys = [{{ id = \"k\", key = \"{KEY}\" }}]\n"
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let mut hookd = Embedded::start(
        &data,
        &[("HOOKD_CONFIG", config), ("HOOKD_LOG__FILTER", "info")],
    )
    .await;
    eventually(DEADLINE, "the walk to seal every stored value", || async {
        hookd
            .log()
            .contains("every stored secret and header value is encrypted")
            .then_some(())
    })
    .await;
    let started = Instant::now();
    eventually(
        Duration::from_secs(15),
        "no plaintext secret in hookd.db or hookd.db-wal",
        || async {
            let left: Vec<String> = [&db, &wal]
                .into_iter()
                .flat_map(|file| {
                    plaintext
                        .iter()
                        .filter(|value| holds(file, value))
                        .map(move |value| format!("{value} in {}", file.display()))
                })
                .collect();
            println!("left: {left:?}");
            left.is_empty().then_some(())
        },
    )
    .await;
    println!("plaintext gone {:?} after the walk", started.elapsed());
    // Still signing with the same secret, now sealed.
    let (status, shown) = hookd.get("/v1/endpoints/shop-2/secret").await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert_eq!(shown["secret"], json!(plaintext[4]));
    assert_eq!(hookd.stop().await, Some(0));
    for value in &plaintext {
        assert!(
            !holds(&db, value),
            "{value} back in the file after the stop"
        );
    }
}
