//! The embedded mode's guarantees, proved with the real binary (issue #34):
//! `hookd serve --data-dir DIR` with neither database.url nor redis.url, so
//! one process holds `DIR/hookd.db` and its due index. Each test kills,
//! fills, freezes or doubles that process and counts what a real receiver
//! gets; `files` checks what it leaves on disk, and who else may read it.

mod crash;
mod disk;
mod files;
mod lock;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{free_port, http_client, HookdProcess, TOKEN};

pub const DEADLINE: Duration = Duration::from_secs(60);

impl HookdProcess {
    /// `hookd serve --data-dir data_dir` in embedded mode (no database.url,
    /// no redis.url) on `listen`, stdout and stderr written to `log`.
    pub fn embedded(data_dir: &Path, env: &[(&str, &str)], listen: &str, log: &Path) -> Self {
        let file = std::fs::File::create(log).unwrap();
        let mut command = embedded_command(data_dir, env);
        command
            .env("HOOKD_SERVER__LISTEN", listen)
            .stdout(file.try_clone().unwrap())
            .stderr(file);
        Self {
            child: command.spawn().expect("the hookd binary starts"),
        }
    }
}

/// The embedded `serve` command, its output not directed yet. The test
/// process's own service URLs (scripts/test exports them) are removed: set,
/// they would choose server mode. The token is `TOKEN` unless `env` names a
/// configuration file. A data directory that exists is made private to the
/// account (0700), as hookd requires of one named by `--data-dir`
/// (`files`); `tempfile` makes them 0755 under the usual umask.
pub fn embedded_command(data_dir: &Path, env: &[(&str, &str)]) -> Command {
    if data_dir.is_dir() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookd"));
    command
        .args(["serve", "--data-dir"])
        .arg(data_dir)
        .env_remove("HOOKD_DATABASE__URL")
        .env_remove("HOOKD_REDIS__URL")
        .env_remove("RUST_LOG")
        .env("HOOKD_SENDER__ALLOW_NETWORKS", "[\"127.0.0.0/8\"]")
        .env("HOOKD_LOG__FILTER", "warn")
        .stdin(Stdio::null());
    // A configuration file brings its own tokens, which the environment
    // would override.
    if !env.iter().any(|(key, _)| *key == "HOOKD_CONFIG") {
        command.env("HOOKD_API__TOKENS", format!("[\"{TOKEN}\"]"));
    }
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

/// An embedded hookd on a data directory, restartable on the same one.
pub struct Embedded {
    pub dir: PathBuf,
    pub base: String,
    pub process: HookdProcess,
    env: Vec<(String, String)>,
    log: PathBuf,
    client: reqwest::Client,
    /// Run as this user (uid, gid) rather than the test's.
    user: Option<(u32, u32)>,
}

impl Embedded {
    /// Starts hookd on `dir` and waits until it is ready.
    pub async fn start(dir: &Path, env: &[(&str, &str)]) -> Self {
        Self::start_as(dir, env, None).await
    }

    /// As `start`, the process running as `user` (uid, gid) when given.
    pub async fn start_as(dir: &Path, env: &[(&str, &str)], user: Option<(u32, u32)>) -> Self {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let log = std::env::temp_dir().join(format!(
            "hookd-embedded-{}.log",
            uuid::Uuid::now_v7().simple()
        ));
        let (process, base) = spawn(dir, &env, &log, user);
        let hookd = Self {
            dir: dir.to_path_buf(),
            base,
            process,
            env,
            log,
            client: http_client(),
            user,
        };
        hookd.wait_ready().await;
        hookd
    }

    async fn wait_ready(&self) {
        let base = self.base.clone();
        let log = self.log.clone();
        let ready = tokio::time::timeout(DEADLINE, HookdProcess::wait_ready(&base, DEADLINE));
        if ready.await.is_err() {
            panic!(
                "hookd not ready; its log ends:\n{}",
                log_tail(&read_log(&log))
            );
        }
    }

    /// kill -9, and waits for the process to be gone.
    pub async fn kill_9(&mut self) {
        self.process.signal("KILL");
        self.process.wait(DEADLINE).await;
    }

    /// SIGTERM; returns the exit code.
    pub async fn stop(&mut self) -> Option<i32> {
        self.process.signal("TERM");
        self.process.wait(DEADLINE).await
    }

    /// Starts a new process on the same data directory (on a new port, as
    /// the old one may linger) and waits until it is ready.
    pub async fn restart(&mut self) {
        let (process, base) = spawn(&self.dir, &self.env, &self.log, self.user);
        self.process = process;
        self.base = base;
        self.wait_ready().await;
    }

    /// What the process wrote (stdout and stderr).
    pub fn log(&self) -> String {
        read_log(&self.log)
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        call_at(&self.client, &self.base, method, path, body).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body)).await
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }

    /// Creates endpoint `uid` delivering to `url`, with `fields` on top.
    pub async fn endpoint(&self, uid: &str, url: &str, fields: Value) {
        let mut body = json!({"uid": uid, "url": url});
        crate::helpers::merge(&mut body, fields);
        let (status, created) = self.post("/v1/endpoints", body).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
    }

    /// Creates a notification; returns its id.
    pub async fn notify(&self, body: Value) -> String {
        let (status, created) = self.post("/v1/notifications", body).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        created["id"].as_str().unwrap().to_string()
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("the end of hookd's log:\n{}", log_tail(&self.log()));
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

fn spawn(
    dir: &Path,
    env: &[(String, String)],
    log: &Path,
    user: Option<(u32, u32)>,
) -> (HookdProcess, String) {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let listen = format!("127.0.0.1:{}", free_port());
    let process = match user {
        None => HookdProcess::embedded(dir, &env, &listen, log),
        Some((uid, gid)) => {
            use std::os::unix::process::CommandExt;
            let file = std::fs::File::create(log).unwrap();
            let mut command = embedded_command(dir, &env);
            command
                .env("HOOKD_SERVER__LISTEN", &listen)
                .uid(uid)
                .gid(gid)
                .stdout(file.try_clone().unwrap())
                .stderr(file);
            HookdProcess {
                child: command.spawn().expect("the hookd binary starts"),
            }
        }
    };
    (process, format!("http://{listen}"))
}

/// Runs `hookd serve` on `dir` (as `user` when given) to its exit, which
/// must come within 10 s; returns its output.
pub async fn run_to_exit(dir: &Path, user: Option<(u32, u32)>) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let listen = format!("127.0.0.1:{}", free_port());
    let mut command = embedded_command(dir, &[("HOOKD_SERVER__LISTEN", listen.as_str())]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some((uid, gid)) = user {
        command.uid(uid).gid(gid);
    }
    let child = command.spawn().unwrap();
    tokio::time::timeout(
        Duration::from_secs(10),
        tokio::task::spawn_blocking(move || child.wait_with_output()),
    )
    .await
    .expect("hookd exits at once")
    .unwrap()
    .unwrap()
}

fn read_log(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// The last lines of a process's log, for a failing test to print after its
/// message: a whole log of thousands of deliveries would push the message
/// out of what CI shows of the output.
pub fn log_tail(log: &str) -> String {
    const LINES: usize = 60;
    let lines: Vec<&str> = log.lines().collect();
    let skipped = lines.len().saturating_sub(LINES);
    let tail = lines[skipped..].join("\n");
    if skipped == 0 {
        tail
    } else {
        format!("({skipped} earlier lines left out)\n{tail}")
    }
}

/// Submits `count` notifications to `endpoint` in one batch, each with
/// `extra`; returns their ids, all accepted (201).
pub async fn submit(hookd: &Embedded, endpoint: &str, count: usize, extra: Value) -> Vec<String> {
    let items: Vec<Value> = (0..count)
        .map(|i| {
            let mut item = json!({"endpoint": endpoint, "payload": {"i": i}});
            crate::helpers::merge(&mut item, extra.clone());
            item
        })
        .collect();
    let (status, body) = hookd
        .post("/v1/notifications/batch", json!({"notifications": items}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            assert_eq!(item["status"], json!(201), "{item}");
            item["notification"]["id"].as_str().unwrap().to_string()
        })
        .collect()
}

/// Only what the killed process sent (in flight, or answered and its
/// outcome not yet written) reached `path` twice: every id that came twice
/// first came over a connection the receiver accepted before `restarted`,
/// the moment the new process was spawned. The new process can open
/// none before it exists, and a connection the killed one opened was
/// accepted before any request on it was read. The arrival time, the
/// boundary before, failed once in a loaded run of the suite: the
/// receiver may read a request the dead process wrote, on a connection it
/// held for long, after the restart.
pub fn twice_only_from_the_killed_process(
    receiver: &crate::receiver::Receiver,
    path: &str,
    restarted: chrono::DateTime<chrono::Utc>,
) {
    let mut first: std::collections::HashMap<String, (chrono::DateTime<chrono::Utc>, usize)> =
        std::collections::HashMap::new();
    for r in receiver.received(path) {
        let id = r.header("webhook-id").unwrap().to_string();
        let entry = first.entry(id).or_insert((r.connected_at, 0));
        entry.0 = entry.0.min(r.connected_at);
        entry.1 += 1;
    }
    for (id, (connected, count)) in &first {
        assert!(
            *count == 1 || *connected < restarted,
            "{id} came {count} times, first over a connection accepted {} ms after the restart",
            (*connected - restarted).num_milliseconds()
        );
    }
}

/// Only what had not been written at the kill came twice: no notification
/// whose success the store held when the process died (`recorded`) reached
/// `path` more than once.
pub fn none_recorded_came_twice(
    receiver: &crate::receiver::Receiver,
    path: &str,
    recorded: &std::collections::HashSet<uuid::Uuid>,
) {
    let mut times: std::collections::HashMap<uuid::Uuid, usize> = std::collections::HashMap::new();
    for r in receiver.received(path) {
        let id = r.header("webhook-id").unwrap().parse().unwrap();
        if recorded.contains(&id) {
            *times.entry(id).or_default() += 1;
        }
    }
    let sent_again: Vec<uuid::Uuid> = times
        .into_iter()
        .filter_map(|(id, n)| (n > 1).then_some(id))
        .collect();
    assert!(
        sent_again.is_empty(),
        "{} notifications recorded as delivered before the kill were sent again: {sent_again:?}",
        sent_again.len()
    );
}

/// The store's query for the notifications whose success it holds: the
/// same in both backends' schemas.
pub const SUCCEEDED: &str = "SELECT id FROM notifications WHERE status = 'succeeded'";

/// The notifications whose success the embedded store at `dir` holds, read
/// from its file while no process has it open.
pub async fn succeeded_in_file(dir: &Path) -> std::collections::HashSet<uuid::Uuid> {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.join("hookd.db"))
        .read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let ids: Vec<uuid::Uuid> = sqlx::query_scalar(SUCCEEDED)
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    ids.into_iter().collect()
}

/// `method path` at `base` with the test token: the status and the JSON
/// answer (`Value::Null` when the body is not JSON).
pub async fn call_at(
    client: &reqwest::Client,
    base: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = client
        .request(method, format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .timeout(Duration::from_secs(30));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("hookd answers");
    let status = response.status();
    let bytes = response.bytes().await.unwrap_or_default();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}
