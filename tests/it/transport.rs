//! Transport security against real servers: Redis over TLS with a private CA,
//! PostgreSQL with `sslmode=verify-full`, receivers over HTTPS with a private
//! CA, and `sender.https_only`. The certificates come from `scripts/test`
//! (HOOKD_TEST_CA_FILE, HOOKD_TEST_TLS_CERT, HOOKD_TEST_TLS_KEY); each test
//! starts its own TLS server.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hookd::due::redis::RedisIndex;
use hookd::store::postgres::PgStore;
use reqwest::{Method, StatusCode};
use serde_json::json;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::backends::Backend;
use crate::helpers::{
    eventually, free_port, is_root, new_prefix, redis_url, spawn_app_settings, test_settings,
    test_settings_with_prefix, PgServer, TestApp,
};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(15);

/// The test CA, and a server certificate it signed for 127.0.0.1, with its key.
pub(crate) struct TlsFiles {
    pub ca: String,
    pub cert: String,
    pub key: String,
}

pub(crate) fn tls_files() -> TlsFiles {
    let var = |name: &str| {
        std::env::var(name)
            .unwrap_or_else(|_| panic!("{name} is set: run the suite with scripts/test"))
    };
    TlsFiles {
        ca: var("HOOKD_TEST_CA_FILE"),
        cert: var("HOOKD_TEST_TLS_CERT"),
        key: var("HOOKD_TEST_TLS_KEY"),
    }
}

/// A private redis-server that speaks only TLS.
struct TlsRedis {
    port: u16,
    child: Child,
}

impl TlsRedis {
    async fn start() -> Self {
        let files = tls_files();
        let port = free_port();
        let binary =
            std::env::var("HOOKD_TEST_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let child = Command::new(binary)
            .args(["--port", "0", "--tls-port", &port.to_string()])
            .args(["--tls-cert-file", &files.cert, "--tls-key-file", &files.key])
            .args(["--tls-ca-cert-file", &files.ca, "--tls-auth-clients", "no"])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts (HOOKD_TEST_REDIS_SERVER)");
        eventually(DEADLINE, "redis-server to listen for TLS", || async {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()
                .map(|_| ())
        })
        .await;
        Self { port, child }
    }

    fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.port)
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Redis settings for `url`, with `ca_file` when given.
fn redis_overrides(ca_file: Option<&str>) -> String {
    match ca_file {
        Some(path) => format!("[redis]\nca_file = \"{path}\"\n"),
        None => String::new(),
    }
}

#[sqlx::test]
async fn hookd_connects_to_redis_over_tls_with_a_private_ca(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let redis = TlsRedis::start().await;
    let settings = test_settings(&redis.url(), &redis_overrides(Some(&tls_files().ca)));
    let app = spawn_app_settings(pool, settings).await;
    app.state.due.ping().await.expect("Redis answers over TLS");
    let receiver = Receiver::start().await;
    let endpoint = app.endpoint(json!({"url": receiver.url("/hook")})).await;
    let (status, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": endpoint["id"], "payload": {"over": "tls"}, "delay": "200ms"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap();
    let got = receiver.wait_for("/hook", 1, DEADLINE).await;
    assert_eq!(&got[0].body[..], br#"{"over":"tls"}"#);
    assert_eq!(got[0].header("webhook-id"), Some(id));
}

#[tokio::test]
async fn a_redis_certificate_from_an_unknown_ca_is_refused() {
    let redis = TlsRedis::start().await;
    // Without redis.ca_file only the bundled public roots vouch, and they do
    // not know the test CA.
    let settings = test_settings(&redis.url(), "[redis]\ntimeout_ms = 2000\n");
    let due = RedisIndex::new(&settings.redis).unwrap();
    let error = due.ping().await.expect_err("an unknown CA is refused");
    assert!(
        error.to_string().to_lowercase().contains("certificate"),
        "{error}"
    );
    // The same server with its CA configured answers: the refusal was the CA.
    let settings = test_settings(&redis.url(), &redis_overrides(Some(&tls_files().ca)));
    RedisIndex::new(&settings.redis)
        .unwrap()
        .ping()
        .await
        .unwrap();
}

/// A PostgreSQL cluster of its own with TLS on, using the test certificate.
/// PostgreSQL wants its key owned by the server's user and private to it.
async fn tls_postgres() -> (PgServer, tempdir::Dir) {
    let files = tls_files();
    let dir = tempdir::Dir::new();
    let key = dir.path.join("server.key");
    std::fs::copy(&files.key, &key).unwrap();
    if is_root() {
        Command::new("chown")
            .args(["postgres:", key.to_str().unwrap()])
            .status()
            .unwrap();
    }
    Command::new("chmod")
        .args(["600", key.to_str().unwrap()])
        .status()
        .unwrap();
    let server = PgServer::start_with(&format!(
        "-c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
        files.cert,
        key.display()
    ))
    .await;
    (server, dir)
}

mod tempdir {
    /// A directory removed on drop, readable by the postgres user.
    pub struct Dir {
        pub path: std::path::PathBuf,
    }

    impl Dir {
        pub fn new() -> Self {
            let path =
                std::env::temp_dir().join(format!("hookd-tls-{}", uuid::Uuid::now_v7().simple()));
            std::fs::create_dir_all(&path).unwrap();
            Self { path }
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn database_settings(url: &str) -> hookd::config::DatabaseSettings {
    test_settings(
        &redis_url(),
        &format!("[database]\nurl = \"{url}\"\nacquire_timeout_ms = 5000\n"),
    )
    .database
}

#[tokio::test]
async fn hookd_connects_to_postgres_with_verify_full() {
    let (server, _dir) = tls_postgres().await;
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=verify-full&sslrootcert={}",
        server.port,
        tls_files().ca
    );
    let settings = database_settings(&url);
    let store = PgStore::connect(&settings)
        .await
        .expect("hookd connects with verify-full and migrates");
    store.ping().await.unwrap();
    // The server's own view: hookd's connections are encrypted.
    let plain = sqlx::PgPool::connect(&format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
        server.port
    ))
    .await
    .unwrap();
    let (encrypted, total): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_ssl s \
         JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'hookd'",
    )
    .fetch_one(&plain)
    .await
    .unwrap();
    assert!(total >= 1, "hookd holds a connection");
    assert_eq!(encrypted, total, "every hookd connection uses TLS");
}

#[tokio::test]
async fn verify_full_refuses_a_postgres_without_tls() {
    let server = PgServer::start().await;
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=verify-full&sslrootcert={}",
        server.port,
        tls_files().ca
    );
    let error = PgStore::connect(&database_settings(&url))
        .await
        .err()
        .expect("a server without TLS is refused");
    let text = error.to_string().to_lowercase();
    assert!(text.contains("tls") || text.contains("ssl"), "{text}");
}

/// An HTTPS receiver with the test certificate: answers 200 to every request
/// and counts them. Enough HTTP/1.1 for one request per connection.
struct HttpsReceiver {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl HttpsReceiver {
    async fn start() -> Self {
        let files = tls_files();
        let certs = CertificateDer::pem_slice_iter(&std::fs::read(&files.cert).unwrap())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(&std::fs::read(&files.key).unwrap()).unwrap();
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, counter) = (acceptor.clone(), counter.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    if read_request(&mut tls).await.is_some() {
                        counter.fetch_add(1, Ordering::SeqCst);
                        let _ = tls
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                            .await;
                        let _ = tls.shutdown().await;
                    }
                });
            }
        });
        Self { port, hits }
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}/hook", self.port)
    }
}

/// Reads one request's head and its `content-length` body.
pub(crate) async fn read_request(stream: &mut (impl AsyncReadExt + Unpin)) -> Option<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return Some(());
            }
        }
    }
}

async fn notify(app: &TestApp, url: &str) -> String {
    let endpoint = app.endpoint(json!({"url": url, "schedule": ["0s"]})).await;
    app.notify(json!({"endpoint": endpoint["id"], "payload": {}}))
        .await
}

async fn a_receiver_certified_by_sender_ca_file_is_delivered_to(backend: Backend) {
    let receiver = HttpsReceiver::start().await;
    let settings = test_settings(
        &redis_url(),
        &format!("[sender]\nca_file = \"{}\"\n", tls_files().ca),
    );
    let app = backend.spawn_settings(settings).await;
    let id = notify(&app, &receiver.url()).await;
    let attempt = app.first_attempt(&id, DEADLINE).await;
    assert_eq!(attempt["outcome"], json!("succeeded"), "{attempt}");
    assert_eq!(attempt["status_code"], json!(200), "{attempt}");
    assert_eq!(receiver.hits.load(Ordering::SeqCst), 1);
}
both!(a_receiver_certified_by_sender_ca_file_is_delivered_to);

async fn a_receiver_certified_by_an_unknown_ca_fails_with_a_tls_error(backend: Backend) {
    let receiver = HttpsReceiver::start().await;
    let app = backend.spawn().await;
    let id = notify(&app, &receiver.url()).await;
    let attempt = app.first_attempt(&id, DEADLINE).await;
    assert_eq!(attempt["error"]["code"], json!("tls"), "{attempt}");
    assert_eq!(receiver.hits.load(Ordering::SeqCst), 0);
}
both!(a_receiver_certified_by_an_unknown_ca_fails_with_a_tls_error);

/// Receivers are trusted through the bundled public roots and
/// `sender.ca_file` only, never through the host's trust store: a CA the
/// host trusts (here by SSL_CERT_FILE, which a platform verifier reads)
/// certifies no receiver, so hookd trusts the same on every machine.
#[sqlx::test]
async fn a_ca_trusted_only_by_the_host_certifies_no_receiver(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let receiver = HttpsReceiver::start().await;
    let prefix = new_prefix();
    let api = spawn_app_settings(
        pool.clone(),
        test_settings_with_prefix(&redis_url(), &prefix, "[dispatcher]\nenabled = false\n"),
    )
    .await;
    let id = notify(&api, &receiver.url()).await;
    let ca = tls_files().ca;
    let _dispatcher = crate::helpers::HookdProcess::start(
        &crate::helpers::database_url(&pool),
        &redis_url(),
        &prefix,
        &[("SSL_CERT_FILE", ca.as_str())],
    );
    let attempt = api.first_attempt(&id, DEADLINE).await;
    assert_eq!(attempt["error"]["code"], json!("tls"), "{attempt}");
    assert_eq!(receiver.hits.load(Ordering::SeqCst), 0);
}

async fn https_only_refuses_plain_http_receivers_at_create_patch_and_send(backend: Backend) {
    let receiver = Receiver::start().await;
    let prefix = new_prefix();
    // Before the switch: an http endpoint and a notification for it, stored
    // and indexed by an API-only process.
    let before = backend
        .spawn_settings(test_settings_with_prefix(
            &redis_url(),
            &prefix,
            "[dispatcher]\nenabled = false\n",
        ))
        .await;
    let id = notify(&before, &receiver.url("/hook")).await;
    let (_, notification) = before.get(&format!("/v1/notifications/{id}")).await;
    let endpoint = notification["endpoint_id"].clone();
    drop(before);

    let after = backend
        .spawn_settings(test_settings_with_prefix(
            &redis_url(),
            &prefix,
            "[sender]\nhttps_only = true\n",
        ))
        .await;
    let attempt = after.first_attempt(&id, DEADLINE).await;
    assert_eq!(
        attempt["error"]["code"],
        json!("https_required"),
        "{attempt}"
    );
    assert!(
        receiver.received("/hook").is_empty(),
        "nothing went in clear"
    );

    let (status, body) = after
        .post("/v1/endpoints", json!({"url": receiver.url("/hook")}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], json!("invalid_url"));
    assert_eq!(body["error"]["field"], json!("url"));
    let path = format!("/v1/endpoints/{}", endpoint.as_str().unwrap());
    let (status, body) = after
        .call(
            Method::PATCH,
            &path,
            Some(json!({"url": "http://example.com/hook"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["field"], json!("url"));
    let (status, body) = after
        .call(
            Method::PATCH,
            &path,
            Some(json!({"url": "https://example.com/hook"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}
both!(https_only_refuses_plain_http_receivers_at_create_patch_and_send);

mod config;
