//! The file cannot be written: a full disk (a small tmpfs the test mounts,
//! then fills) and a database file made read-only. hookd answers 503 in the
//! error shape, loses nothing it accepted, and recovers by itself once the
//! file can be written again.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{run_to_exit, Embedded, DEADLINE};
use crate::helpers::{eventually, is_root};
use crate::receiver::Receiver;

/// A tmpfs of `size` mounted on a temporary directory; unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` when the kernel refuses (root in a container without
    /// CAP_SYS_ADMIN).
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        status.success().then_some(Self { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Writes zeros to `path` until the filesystem refuses; returns the bytes
/// written.
fn fill(path: &Path) -> u64 {
    let mut file = std::fs::File::create(path).unwrap();
    let mut written = 0;
    for chunk in [1 << 20, 4096, 1] {
        let bytes = vec![0u8; chunk];
        loop {
            match file.write_all(&bytes).and_then(|()| file.flush()) {
                Ok(()) => written += chunk as u64,
                Err(error) => {
                    assert_eq!(error.raw_os_error(), Some(28), "ENOSPC: {error}");
                    break;
                }
            }
        }
    }
    written
}

/// A refusal as the API must give it: 503, `{"error": {"code":
/// "unavailable", …}}`, and nothing of SQLite or the file in it.
fn assert_unavailable(body: &Value) {
    assert_eq!(body["error"]["code"], json!("unavailable"), "{body}");
    let text = body.to_string().to_lowercase();
    for internal in [
        "sqlite",
        "disk",
        "hookd.db",
        "readonly",
        "read-only",
        "full",
    ] {
        assert!(!text.contains(internal), "{internal} leaked: {body}");
    }
}

/// POSTs one notification to `shop` until one is accepted; returns its id
/// and how long that took.
async fn accepted_again(hookd: &Embedded, payload: Value) -> (String, Duration) {
    let started = Instant::now();
    let id = eventually(DEADLINE, "a 201 again", || async {
        let (status, body) = hookd
            .post(
                "/v1/notifications",
                json!({"endpoint": "shop", "payload": payload}),
            )
            .await;
        match status {
            StatusCode::CREATED => Some(body["id"].as_str().unwrap().to_string()),
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_unavailable(&body);
                None
            }
            other => panic!("unexpected {other}: {body}"),
        }
    })
    .await;
    (id, started.elapsed())
}

/// Waits until every id in `accepted` reached `receiver` on `/hook`.
async fn all_delivered(receiver: &Receiver, accepted: &[String]) -> usize {
    eventually(
        DEADLINE,
        "every accepted notification delivered",
        || async {
            let got: HashSet<String> = receiver
                .received("/hook")
                .iter()
                .filter_map(|r| r.header("webhook-id").map(str::to_string))
                .collect();
            accepted
                .iter()
                .all(|id| got.contains(id))
                .then(|| receiver.received("/hook").len())
        },
    )
    .await
}

#[tokio::test]
async fn a_full_disk_answers_503_loses_nothing_accepted_and_recovers_when_space_returns() {
    if !is_root() {
        println!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let Some(disk) = Tmpfs::mount("16m") else {
        println!("skipped: mount -t tmpfs was refused");
        return;
    };
    let data = disk.path().join("data");
    let hookd = Embedded::start(&data, &[]).await;
    let receiver = Receiver::start().await;
    hookd
        .endpoint("shop", &receiver.url("/hook"), json!({}))
        .await;
    let mut accepted = Vec::new();
    for n in 0..10 {
        accepted.push(
            hookd
                .notify(json!({"endpoint": "shop", "payload": {"n": n}}))
                .await,
        );
    }

    let filler = disk.path().join("filler");
    let filled = fill(&filler);
    // SQLite reuses the space its WAL already holds: writes go on until
    // that is used up too.
    // Random text, so that no compression makes it small.
    let big = || -> String {
        (0..900)
            .map(|_| uuid::Uuid::new_v4().simple().to_string())
            .collect()
    };
    // A fixed number of POSTs, not "until refused": before the writer was
    // closed after a failed write, 201s came between the 503s and were
    // never stored.
    let posts = 100;
    let mut refused = 0;
    for _ in 0..posts {
        let started = Instant::now();
        let (status, body) = hookd
            .post(
                "/v1/notifications",
                json!({"endpoint": "shop", "payload": {"big": big()}}),
            )
            .await;
        match status {
            StatusCode::CREATED => {
                let id = body["id"].as_str().unwrap().to_string();
                let (found, _) = hookd.get(&format!("/v1/notifications/{id}")).await;
                assert_eq!(found, StatusCode::OK, "a 201 on the full disk is stored");
                accepted.push(id);
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_unavailable(&body);
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "503 took {:?}",
                    started.elapsed()
                );
                refused += 1;
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert!(refused > 0, "the full disk refused writes");
    // Readiness says so, for a load balancer to send creates elsewhere (it
    // said `ready` while every create was refused).
    let readiness = || async {
        let (status, body) = hookd.get("/readyz").await;
        (
            status,
            body["sqlite"].as_str().unwrap_or_default().to_owned(),
        )
    };
    let full = eventually(DEADLINE, "readiness to see the full disk", || async {
        let (status, sqlite) = readiness().await;
        (status == StatusCode::SERVICE_UNAVAILABLE).then_some(sqlite)
    })
    .await;
    assert_eq!(full, "unwritable");

    std::fs::remove_file(&filler).unwrap();
    eventually(DEADLINE, "readiness once space returns", || async {
        (readiness().await == (StatusCode::OK, "ok".to_owned())).then_some(())
    })
    .await;
    let (id, recovered) = accepted_again(&hookd, json!({"after": "space"})).await;
    accepted.push(id);
    let total = all_delivered(&receiver, &accepted).await;
    println!(
        "full disk: filler {filled} bytes; {refused} of {posts} POSTs refused with 503 while full; \
         201 again {recovered:?} after the space returned; {total} deliveries for {} accepted",
        accepted.len()
    );
}

/// Who runs hookd when the test runs as root: root ignores file modes, so
/// a read-only file would not be read-only to it.
const NOBODY: (u32, u32) = (65534, 65534);

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown(path: &Path, (uid, gid): (u32, u32)) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
}

/// An embedded hookd on a directory of its own, as `nobody` when the test
/// runs as root (root writes whatever the modes say): the directory, that
/// user, and the process.
async fn started_unprivileged() -> (tempfile::TempDir, Option<(u32, u32)>, Embedded) {
    let dir = tempfile::tempdir().unwrap();
    let user = is_root().then_some(NOBODY);
    if let Some(user) = user {
        chown(dir.path(), user);
    }
    let hookd = Embedded::start_as(dir.path(), &[], user).await;
    (dir, user, hookd)
}

/// While hookd runs, the file it has open stays writable whatever its
/// mode; the mode counts when it opens the file. A file it cannot write is
/// refused at start in one line (before, it started, answered 503 to every
/// write, and went on after the file was writable again).
#[tokio::test]
async fn a_read_only_database_file_is_refused_at_start_in_one_line_and_served_once_writable() {
    let (dir, user, mut hookd) = started_unprivileged().await;
    let receiver = Receiver::start().await;
    hookd
        .endpoint("shop", &receiver.url("/hook"), json!({}))
        .await;
    let mut accepted = Vec::new();
    for n in 0..3 {
        accepted.push(
            hookd
                .notify(json!({"endpoint": "shop", "payload": {"n": n}, "delay": "2s"}))
                .await,
        );
    }
    assert_eq!(hookd.stop().await, Some(0));
    let file: PathBuf = dir.path().join("hookd.db");
    // Read-only to its owner alone: a mode open to others is refused for
    // that reason first (`files`).
    chmod(&file, 0o400);

    let started = Instant::now();
    let output = run_to_exit(dir.path(), user).await;
    println!("read-only file: refused in {:?}", started.elapsed());
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("hookd: "), "{stderr}");
    assert!(last.contains(&file.display().to_string()), "{last}");
    assert!(last.contains("cannot be written"), "{last}");
    // Refused before SQLite opened it: no write-ahead log was made beside
    // it with its read-only mode, which would refuse the fixed file too.
    assert!(!dir.path().join("hookd.db-wal").exists());

    chmod(&file, 0o600);
    hookd.restart().await;
    accepted.push(
        hookd
            .notify(json!({"endpoint": "shop", "payload": {"after": "writable"}}))
            .await,
    );
    let total = all_delivered(&receiver, &accepted).await;
    assert_eq!(total, accepted.len(), "each once");
}

/// A data directory hookd may not write is refused at start naming the
/// directory: SQLite makes its write-ahead log there, and the first write
/// failed with "attempt to write a readonly database", naming the file (an
/// outside review looked for the fault in the file).
#[tokio::test]
async fn a_data_directory_it_may_not_write_is_refused_at_start_naming_the_directory() {
    let (dir, user, mut hookd) = started_unprivileged().await;
    assert_eq!(hookd.stop().await, Some(0));

    let listen = format!("127.0.0.1:{}", crate::helpers::free_port());
    let command = super::embedded_command(dir.path(), &[("HOOKD_SERVER__LISTEN", &listen)]);
    // After the command's setup, which makes the directory 0700.
    chmod(dir.path(), 0o500);
    let mut command = tokio::process::Command::from(command);
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some((uid, gid)) = user {
        command.uid(uid).gid(gid);
    }
    let output = tokio::time::timeout(DEADLINE, command.output()).await;
    chmod(dir.path(), 0o700);
    let output = output.expect("hookd exits at once").unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("hookd: "), "{stderr}");
    let named = format!("{} cannot be written", dir.path().display());
    assert!(last.contains(&named), "{last}");
    assert!(last.contains("write-ahead log"), "{last}");
    let probes = std::fs::read_dir(dir.path()).unwrap().flatten();
    assert!(
        !probes
            .into_iter()
            .any(|e| e.file_name().to_string_lossy().starts_with(".hookd")),
        "the check leaves nothing behind"
    );
    hookd.restart().await;
}
