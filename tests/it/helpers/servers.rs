//! Private servers for tests that stop, flush or misconfigure one: a
//! redis-server and a PostgreSQL cluster of the test's own, on free
//! loopback ports, gone with the value.

use super::*;

/// A private redis-server for tests that stop or flush Redis.
pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
}

impl RedisServer {
    pub async fn start() -> Self {
        Self::start_on(free_port()).await
    }

    pub async fn start_on(port: u16) -> Self {
        Self::start_with(port, &[]).await
    }

    /// A redis-server with more arguments (`--maxmemory 2mb`, `--replicaof
    /// ...`), or, with a config file first, a sentinel.
    pub async fn start_with(port: u16, extra: &[&str]) -> Self {
        let binary =
            std::env::var("HOOKD_TEST_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let child = Command::new(binary)
            .args(extra.iter().take_while(|a| !a.starts_with("--")))
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(extra.iter().skip_while(|a| !a.starts_with("--")))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts (HOOKD_TEST_REDIS_SERVER)");
        let server = Self {
            port,
            child: Some(child),
        };
        eventually(
            Duration::from_secs(10),
            "redis-server to accept connections",
            || async {
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .ok()
                    .map(|_| ())
            },
        )
        .await;
        server
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stalls the server (SIGSTOP): its sockets stay open and nothing
    /// answers, as when its machine hangs or the network drops its packets.
    pub fn pause(&self) {
        self.signal("STOP");
    }

    /// Lets a paused server go on (SIGCONT).
    pub fn unpause(&self) {
        self.signal("CONT");
    }

    fn signal(&self, signal: &str) {
        if let Some(child) = &self.child {
            let status = Command::new("kill")
                .args([&format!("-{signal}"), &child.id().to_string()])
                .status()
                .expect("kill runs");
            assert!(status.success(), "kill -{signal} redis-server");
        }
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A private PostgreSQL cluster for tests that stop and restart it.
pub struct PgServer {
    pub port: u16,
    dir: std::path::PathBuf,
    bindir: String,
    /// More `postgres` options, e.g. `-c ssl=on`.
    options: String,
}

pub fn as_postgres(program: &str) -> Command {
    // PostgreSQL refuses to run as root.
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--", program]);
        command
    } else {
        Command::new(program)
    }
}

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0"))
        .unwrap_or(false)
}

impl PgServer {
    pub async fn start() -> Self {
        Self::start_with("").await
    }

    /// `start`, with hookd's schema applied, for a test whose hookd
    /// processes connect to it themselves.
    pub async fn start_migrated() -> Self {
        let pg = Self::start().await;
        let pool = sqlx::PgPool::connect(&pg.url()).await.unwrap();
        hookd::store::postgres::PgStore::new(pool.clone())
            .migrate()
            .await
            .unwrap();
        pool.close().await;
        pg
    }

    /// Starts with more `postgres` options (`-c ssl=on ...`).
    pub async fn start_with(options: &str) -> Self {
        let bindir = std::env::var("HOOKD_TEST_PG_BINDIR")
            .unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into());
        let dir = std::env::temp_dir().join(format!("hookd-pg-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        if is_root() {
            Command::new("chown")
                .args(["-R", "postgres:", dir.to_str().unwrap()])
                .status()
                .unwrap();
        }
        let status = as_postgres(&format!("{bindir}/initdb"))
            .args([
                "-D",
                dir.to_str().unwrap(),
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("initdb runs");
        assert!(status.success(), "initdb failed");
        let server = Self {
            port: free_port(),
            dir,
            bindir,
            options: options.to_string(),
        };
        server.resume().await;
        server
    }

    /// A streaming replica of `primary`, as an operator makes one:
    /// `pg_basebackup -R` (which writes `standby.signal` and the
    /// connection to the primary), then a second `postgres` on its own
    /// port.
    pub async fn replica_of(primary: &PgServer) -> Self {
        let dir = std::env::temp_dir().join(format!("hookd-pg-{}", uuid::Uuid::now_v7().simple()));
        let port = primary.port.to_string();
        let backup = as_postgres(&format!("{}/pg_basebackup", primary.bindir))
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-R"])
            .args(["-X", "stream", "--no-sync", "-D", dir.to_str().unwrap()])
            .output()
            .expect("pg_basebackup runs");
        assert!(
            backup.status.success(),
            "pg_basebackup failed: {}",
            String::from_utf8_lossy(&backup.stderr)
        );
        let replica = Self {
            port: free_port(),
            dir,
            bindir: primary.bindir.clone(),
            options: String::new(),
        };
        replica.resume().await;
        replica
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stalls the server (SIGSTOP to the postmaster, then to each of its
    /// processes): connections stay open and nothing answers, as when a
    /// database machine hangs.
    pub fn pause(&self) {
        self.signal_all("STOP");
    }

    /// Lets a paused server go on (SIGCONT).
    pub fn unpause(&self) {
        self.signal_all("CONT");
    }

    /// Whether a client has sent the server something it has not read
    /// (from `/proc/net/tcp`): while paused, a query waits.
    pub fn has_unread_requests(&self) -> bool {
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        let port = format!(":{:04X}", self.port);
        table.lines().skip(1).any(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // local_address, ..., tx_queue:rx_queue
            fields.get(1).is_some_and(|local| local.ends_with(&port))
                && fields
                    .get(4)
                    .and_then(|queues| queues.split_once(':'))
                    .is_some_and(|(_, rx)| u64::from_str_radix(rx, 16).unwrap_or(0) > 0)
        })
    }

    fn signal_all(&self, signal: &str) {
        let Ok(pidfile) = std::fs::read_to_string(self.dir.join("postmaster.pid")) else {
            return;
        };
        let Some(Ok(postmaster)) = pidfile.lines().next().map(|l| l.trim().parse::<u32>()) else {
            return;
        };
        // The postmaster first: stopped, it forks no process this misses.
        let mut pids = vec![postmaster];
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // `pid (comm) state ppid ...`; comm may hold spaces.
            let parent = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|ppid| ppid.parse::<u32>().ok());
            if parent == Some(postmaster) {
                pids.extend(
                    entry
                        .file_name()
                        .to_str()
                        .and_then(|p| p.parse::<u32>().ok()),
                );
            }
        }
        for pid in pids {
            let _ = Command::new("kill")
                .args([&format!("-{signal}"), &pid.to_string()])
                .status();
        }
    }

    fn pg_ctl(&self, args: &[&str]) {
        let status = as_postgres(&format!("{}/pg_ctl", self.bindir))
            .args(["-D", self.dir.to_str().unwrap(), "-w"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("pg_ctl runs");
        assert!(status.success(), "pg_ctl {args:?} failed");
    }

    pub fn stop(&self) {
        self.pg_ctl(&["-m", "immediate", "stop"]);
    }

    pub async fn resume(&self) {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off {}",
            self.port,
            self.dir.display(),
            self.options
        );
        let log = self.dir.join("log");
        self.pg_ctl(&["-l", log.to_str().unwrap(), "-o", &options, "start"]);
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // A test that failed while the server was paused.
        self.unpause();
        let _ = as_postgres(&format!("{}/pg_ctl", self.bindir))
            .args(["-D", self.dir.to_str().unwrap(), "-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
