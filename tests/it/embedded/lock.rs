//! One process per data directory: a second `hookd serve` on the same one
//! is refused at once, naming the file and the holder's pid, and the first
//! goes on serving.

use std::time::Instant;

use serde_json::json;
use sqlx::Connection;

use super::{run_to_exit, Embedded, DEADLINE};
use crate::receiver::Receiver;

#[tokio::test]
async fn a_second_process_on_the_same_data_dir_exits_1_naming_the_file_and_the_first_serves_on() {
    let dir = tempfile::tempdir().unwrap();
    let hookd = Embedded::start(dir.path(), &[]).await;
    let receiver = Receiver::start().await;
    hookd
        .endpoint("shop", &receiver.url("/hook"), json!({}))
        .await;

    let started = Instant::now();
    let output = run_to_exit(dir.path(), None).await;
    println!("second process refused in {:?}", started.elapsed());
    assert_eq!(output.status.code(), Some(1));
    // Log lines (warnings about the configuration) may come first; hookd's
    // own word is one line, the last.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("hookd: "))
        .collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert_eq!(stderr.lines().last(), Some(lines[0]), "{stderr}");
    let file = dir.path().join("hookd.db");
    let pid = hookd.process.child.id();
    assert!(
        lines[0].contains(&file.display().to_string()),
        "names the file: {}",
        lines[0]
    );
    assert!(
        lines[0].contains(&format!("pid {pid}")),
        "names the holder's pid {pid}: {}",
        lines[0]
    );
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );

    // The first is unharmed: it accepts and delivers.
    let id = hookd
        .notify(json!({"endpoint": "shop", "payload": {"after": "second"}}))
        .await;
    let got = receiver.wait_for("/hook", 1, DEADLINE).await;
    assert_eq!(got[0].header("webhook-id"), Some(id.as_str()));
}

#[tokio::test]
async fn a_clean_stop_leaves_every_commit_in_the_database_file_and_no_write_ahead_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut hookd = Embedded::start(dir.path(), &[]).await;
    hookd
        .endpoint("shop", "http://127.0.0.1:9/hook", json!({}))
        .await;
    hookd
        .notify(json!({"endpoint": "shop", "payload": {"kept": "in the file"}}))
        .await;
    let wal = dir.path().join("hookd.db-wal");
    assert!(wal.exists(), "a write goes to the write-ahead log first");
    assert_eq!(hookd.stop().await, Some(0), "{}", hookd.log());
    // The last connection to close checkpoints the log into the file and
    // removes it: hookd.db alone now holds everything, so a `cp` of it is
    // a whole copy.
    let left = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert_eq!(left, 0, "the write-ahead log was checkpointed at the stop");
    // A copy of hookd.db alone holds the notification.
    let copy = dir.path().join("copy.db");
    std::fs::copy(dir.path().join("hookd.db"), &copy).unwrap();
    let mut file = sqlx::SqliteConnection::connect(copy.to_str().unwrap())
        .await
        .unwrap();
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM notifications")
        .fetch_one(&mut file)
        .await
        .unwrap();
    assert_eq!(kept, 1);
}
