//! A `hookd serve` process of the tests' own, the real binary, configured
//! through HOOKD_*: started in a role (logged or not), waited for,
//! signalled, and killed with the value.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sqlx::PgPool;

use super::{database_url, eventually, free_port, http_client, new_prefix, redis_url};

/// A `hookd serve` process, the real binary, configured through HOOKD_*.
pub struct HookdProcess {
    pub child: Child,
}

impl HookdProcess {
    /// The dispatcher role, logs discarded.
    pub fn start(database_url: &str, redis_url: &str, prefix: &str, env: &[(&str, &str)]) -> Self {
        let mut command = Self::command(database_url, redis_url, prefix, env);
        command
            .args(["serve", "--role", "dispatcher"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Self::spawn(command)
    }

    /// A server-mode process (all roles) over `pool`, on a free port, its
    /// output in a log named after `tag`, ready: the process, its base
    /// URL and the log (for the caller to remove).
    pub async fn start_ready(
        pool: &PgPool,
        tag: &str,
        deadline: Duration,
    ) -> (Self, String, std::path::PathBuf) {
        Self::start_ready_on(pool, &redis_url(), tag, deadline).await
    }

    /// `start_ready` with the Redis at `redis_url`.
    pub async fn start_ready_on(
        pool: &PgPool,
        redis_url: &str,
        tag: &str,
        deadline: Duration,
    ) -> (Self, String, std::path::PathBuf) {
        let listen = format!("127.0.0.1:{}", free_port());
        let log = std::env::temp_dir().join(format!("hookd-{tag}-{}.log", new_prefix()));
        let hookd = Self::start_logged(
            &database_url(pool),
            redis_url,
            &new_prefix(),
            &[],
            &listen,
            &log,
        );
        let base = format!("http://{listen}");
        Self::wait_ready(&base, deadline).await;
        (hookd, base, log)
    }

    /// API and dispatcher on `listen`, stdout and stderr written to `log`.
    pub fn start_logged(
        database_url: &str,
        redis_url: &str,
        prefix: &str,
        env: &[(&str, &str)],
        listen: &str,
        log: &std::path::Path,
    ) -> Self {
        Self::start_logged_as("all", database_url, redis_url, prefix, env, listen, log)
    }

    /// `start_logged` in `role` (`all`, `api` or `dispatcher`).
    pub fn start_logged_as(
        role: &str,
        database_url: &str,
        redis_url: &str,
        prefix: &str,
        env: &[(&str, &str)],
        listen: &str,
        log: &std::path::Path,
    ) -> Self {
        let file = std::fs::File::create(log).unwrap();
        let mut command = Self::command(database_url, redis_url, prefix, env);
        command
            .args(["serve", "--role", role])
            .env("HOOKD_SERVER__LISTEN", listen)
            .stdout(file.try_clone().unwrap())
            .stderr(file);
        Self::spawn(command)
    }

    /// `start_logged` on `pool`'s database, the suite's Redis and a prefix
    /// of its own: the server-mode twin of `embedded`, for a test that runs
    /// one process in each mode.
    pub fn on_server(
        pool: &PgPool,
        env: &[(&str, &str)],
        listen: &str,
        log: &std::path::Path,
    ) -> Self {
        Self::start_logged(
            &database_url(pool),
            &redis_url(),
            &new_prefix(),
            env,
            listen,
            log,
        )
    }

    fn command(database_url: &str, redis_url: &str, prefix: &str, env: &[(&str, &str)]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hookd"));
        command
            .env("HOOKD_DATABASE__URL", database_url)
            .env("HOOKD_DATABASE__MIGRATE", "false")
            .env("HOOKD_REDIS__URL", redis_url)
            .env("HOOKD_REDIS__PREFIX", prefix)
            .env("HOOKD_SERVER__LISTEN", "127.0.0.1:0")
            .env("HOOKD_SENDER__ALLOW_NETWORKS", "[\"127.0.0.0/8\"]")
            .env("HOOKD_LOG__FILTER", "warn")
            .env_remove("RUST_LOG");
        for (key, value) in env {
            command.env(key, value);
        }
        command
    }

    fn spawn(mut command: Command) -> Self {
        Self {
            child: command.spawn().expect("the hookd binary starts"),
        }
    }

    /// Waits until the process at `base` answers `/readyz` with a success.
    pub async fn wait_ready(base: &str, deadline: Duration) {
        let client = http_client();
        eventually(deadline, "hookd to be ready", || async {
            let ready = client.get(format!("{base}/readyz")).send().await.ok()?;
            ready.status().is_success().then_some(())
        })
        .await;
    }

    pub fn signal(&self, signal: &str) {
        Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
    }

    /// Waits for the process to exit; returns its exit code.
    pub async fn wait(&mut self, deadline: Duration) -> Option<i32> {
        eventually(deadline, "hookd to exit", || {
            let status = self.child.try_wait().unwrap();
            async move { status }
        })
        .await
        .code()
    }
}

impl Drop for HookdProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
