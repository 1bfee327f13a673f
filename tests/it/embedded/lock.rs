//! One process per data directory: a second `hookd serve` on the same one
//! is refused at once, naming the file and the holder's pid, and the first
//! goes on serving.

use std::time::Instant;

use serde_json::json;

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
