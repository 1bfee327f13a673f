//! The API's listener against slow and hostile clients: half-sent requests,
//! more connections than the cap, bodies that never finish; and the
//! listener's options: built-in TLS and a separate metrics address.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::backends::Backend;
use crate::helpers::{redis_url, test_settings, TOKEN};
use hookd::due::memory::MemoryIndex;
use hookd::due::redis::RedisIndex;
use hookd::startup::{App, Role};
use hookd::store::postgres::PgStore;

const DEADLINE: Duration = Duration::from_secs(20);

/// An app with `overrides`, its address and metrics address; stops when
/// the returned sender drops.
async fn start(
    backend: &Backend,
    overrides: &str,
) -> (
    std::net::SocketAddr,
    Option<std::net::SocketAddr>,
    tokio::sync::oneshot::Sender<()>,
) {
    let settings = test_settings(&redis_url(), overrides);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let app = match backend {
        Backend::Postgres { pool, .. } => {
            let due = RedisIndex::new(&settings.redis).unwrap();
            let store = PgStore::new(pool.clone());
            App::with_parts(settings, store, Arc::new(due), listener, Role::All)
        }
        Backend::Sqlite { store, .. } => {
            let due = MemoryIndex::new();
            App::with_parts(settings, store.clone(), Arc::new(due), listener, Role::All)
        }
    };
    let (address, metrics) = (app.local_addr(), app.metrics_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.run(async {
        let _ = stopped.await;
    }));
    (address, metrics, stop)
}

/// Whether the server has closed `stream` (EOF or reset), without waiting.
async fn closed(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match tokio::time::timeout(Duration::from_millis(1), stream.read(&mut byte)).await {
        Ok(Ok(0)) | Ok(Err(_)) => true,
        Ok(Ok(_)) | Err(_) => false,
    }
}

async fn half_sent_requests_are_closed_after_the_header_timeout(backend: Backend) {
    let (_, hard) = rlimit::Resource::NOFILE.get().unwrap();
    let _ = rlimit::Resource::NOFILE.set(hard, hard);
    let (address, _, _stop) = start(&backend, "[server]\nheader_timeout_ms = 500\n").await;
    let mut streams = Vec::new();
    for _ in 0..1000 {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream.write_all(b"GET /v1/endp").await.unwrap();
        streams.push(stream);
    }
    until_all_closed(streams, "half-sent requests").await;
    let response = crate::helpers::http_client()
        .get(format!("http://{address}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}
both!(half_sent_requests_are_closed_after_the_header_timeout);

/// The client half of an HTTP/2 connection: the preface and SETTINGS, then
/// no stream ever. hyper's client answers the server's pings by itself.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Waits until hookd has closed every stream in `streams`, failing the
/// test with how many are left at the deadline.
async fn until_all_closed(mut streams: Vec<TcpStream>, what: &str) {
    let started = std::time::Instant::now();
    while !streams.is_empty() {
        let mut open = Vec::new();
        for mut stream in streams {
            if !closed(&mut stream).await {
                open.push(stream);
            }
        }
        streams = open;
        assert!(
            started.elapsed() < DEADLINE,
            "{} {what} still open",
            streams.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn connections_that_send_nothing_or_only_an_http2_preface_are_closed_after_the_header_timeout(
    backend: Backend,
) {
    let (address, _, _stop) = start(&backend, "[server]\nheader_timeout_ms = 500\n").await;
    let mut silent = Vec::new();
    for _ in 0..200 {
        silent.push(TcpStream::connect(address).await.unwrap());
    }
    let mut prefaces = Vec::new();
    for _ in 0..50 {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream.write_all(H2_PREFACE).await.unwrap();
        prefaces.push(stream);
    }
    until_all_closed(silent, "silent connections").await;
    until_all_closed(prefaces, "connections that sent only a preface").await;
}
both!(connections_that_send_nothing_or_only_an_http2_preface_are_closed_after_the_header_timeout);

async fn an_http2_connection_that_answers_pings_but_opens_no_stream_is_closed(backend: Backend) {
    let (address, _, _stop) = start(&backend, "[server]\nheader_timeout_ms = 500\n").await;
    let stream = TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http2::handshake::<_, _, String>(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    let driven = tokio::spawn(connection);
    // One request, answered: the connection is in use, and kept while it is.
    let request = axum::http::Request::get(format!("http://{address}/healthz"))
        .body(String::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    // Then nothing: hookd ends the connection, though the client is alive
    // and would answer every ping.
    let ended = tokio::time::timeout(DEADLINE, driven).await;
    assert!(ended.is_ok(), "an idle HTTP/2 connection was kept open");
    assert!(sender.is_closed());
}
both!(an_http2_connection_that_answers_pings_but_opens_no_stream_is_closed);

async fn an_http2_client_that_never_reads_a_response_body_cannot_hold_its_connection(
    backend: Backend,
) {
    let (address, _, _stop) = start(&backend, "[server]\nheader_timeout_ms = 500\n").await;
    let stream = TcpStream::connect(address).await.unwrap();
    // A stream window of zero: hookd may send headers, never a byte of body,
    // and the client answers every ping meanwhile.
    let (mut sender, connection) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .initial_stream_window_size(0)
            .handshake::<_, String>(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    let driven = tokio::spawn(connection);
    let request = axum::http::Request::get(format!("http://{address}/openapi.json"))
        .body(String::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let ended = tokio::time::timeout(DEADLINE, driven).await;
    assert!(
        ended.is_ok(),
        "a response body nobody reads kept its connection open"
    );
    drop(response);
}
both!(an_http2_client_that_never_reads_a_response_body_cannot_hold_its_connection);

async fn silent_connections_at_the_cap_do_not_lock_other_clients_out(backend: Backend) {
    let (address, _, _stop) = start(
        &backend,
        "[server]\nmax_connections = 4\nheader_timeout_ms = 500\n",
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(TcpStream::connect(address).await.unwrap());
    }
    // The four are still open on this side: hookd must free their slots
    // itself.
    let response = tokio::time::timeout(
        DEADLINE,
        crate::helpers::http_client()
            .get(format!("http://{address}/healthz"))
            .send(),
    )
    .await
    .expect("served while silent connections held every slot")
    .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    drop(held);
}
both!(silent_connections_at_the_cap_do_not_lock_other_clients_out);

async fn connections_over_the_cap_wait_until_one_closes(backend: Backend) {
    let (address, _, _stop) = start(&backend, "[server]\nmax_connections = 2\n").await;
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(TcpStream::connect(address).await.unwrap());
    }
    // Both slots are taken by connections that send nothing: a third
    // client is not served, however long it waits here...
    let client = crate::helpers::http_client();
    let url = format!("http://{address}/healthz");
    let waiting = tokio::time::timeout(Duration::from_secs(1), client.get(&url).send()).await;
    assert!(waiting.is_err(), "served past max_connections");
    // ...and is served once one of them closes.
    drop(held.pop());
    let response = tokio::time::timeout(DEADLINE, client.get(&url).send())
        .await
        .expect("served once a slot is free")
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}
both!(connections_over_the_cap_wait_until_one_closes);

/// The answer to `head`, sent alone on a new connection to `address`.
async fn answer_to_head(address: std::net::SocketAddr, head: &str) -> String {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(DEADLINE, async {
        let mut buffer = [0u8; 4096];
        loop {
            let n = stream.read(&mut buffer).await.unwrap_or(0);
            answer.extend_from_slice(&buffer[..n]);
            if n == 0 || answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.ends_with(b"}}") {
                return;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer");
    String::from_utf8_lossy(&answer).into_owned()
}

/// Its body's code, checked to be in the API's error shape.
fn error_code(answer: &str) -> String {
    let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    body["error"]["code"].as_str().unwrap().to_string()
}

async fn a_request_whose_body_never_finishes_gets_the_timeout_error(backend: Backend) {
    let (address, _, _stop) = start(&backend, "[server]\nrequest_timeout_ms = 300\n").await;
    let head = format!(
        "POST /v1/endpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"url\":"
    );
    let text = answer_to_head(address, &head).await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert_eq!(error_code(&text), "request_timeout");
}
both!(a_request_whose_body_never_finishes_gets_the_timeout_error);

/// A body declared over `api.max_request_bytes` is refused before any of
/// it arrives: 413, not the timeout's 408 after waiting for a body that
/// would be refused anyway.
async fn a_request_that_declares_a_body_over_the_limit_is_413_at_once(backend: Backend) {
    let (address, _, _stop) = start(
        &backend,
        "[server]\nrequest_timeout_ms = 300\n[api]\nmax_payload_bytes = 1000\nmax_request_bytes = 1000\n",
    )
    .await;
    let head = format!(
        "POST /v1/endpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 17825792\r\n\r\n"
    );
    let text = answer_to_head(address, &head).await;
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert_eq!(error_code(&text), "too_large");
}
both!(a_request_that_declares_a_body_over_the_limit_is_413_at_once);

async fn the_api_serves_tls_when_configured_and_refuses_plain_http_there(backend: Backend) {
    let (cert, key, ca) = (
        std::env::var("HOOKD_TEST_TLS_CERT").expect("scripts/test makes test certificates"),
        std::env::var("HOOKD_TEST_TLS_KEY").unwrap(),
        std::env::var("HOOKD_TEST_CA_FILE").unwrap(),
    );
    let (address, _, _stop) = start(
        &backend,
        &format!("[server]\ntls_cert = \"{cert}\"\ntls_key = \"{key}\"\n"),
    )
    .await;
    let ca = reqwest::Certificate::from_pem(&std::fs::read(ca).unwrap()).unwrap();
    let client = crate::helpers::http_client_builder()
        .add_root_certificate(ca)
        .build()
        .unwrap();
    let response = client
        .get(format!("https://localhost:{}/v1/endpoints", address.port()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let plain = crate::helpers::http_client()
        .get(format!("http://{address}/healthz"))
        .timeout(DEADLINE)
        .send()
        .await;
    assert!(plain.is_err(), "plain HTTP answered on the TLS port");
}
both!(the_api_serves_tls_when_configured_and_refuses_plain_http_there);

async fn metrics_move_to_their_own_listener(backend: Backend) {
    let (address, metrics, _stop) =
        start(&backend, "[server]\nmetrics_listen = \"127.0.0.1:0\"\n").await;
    let metrics = metrics.expect("metrics_listen is bound");
    let scraped = crate::helpers::http_client()
        .get(format!("http://{metrics}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status(), StatusCode::OK);
    assert!(scraped.text().await.unwrap().contains("hookd_"));
    let ready = crate::helpers::http_client()
        .get(format!("http://{metrics}/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    let public = crate::helpers::http_client()
        .get(format!("http://{address}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(public.status(), StatusCode::NOT_FOUND);
}
both!(metrics_move_to_their_own_listener);

/// Connections the kernel holds for the listener on 127.0.0.1:`port` that
/// hookd has not accepted yet: a listening socket's `rx_queue` in
/// /proc/net/tcp.
fn accept_queue(port: u16) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let local = format!("0100007F:{port:04X}");
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) != Some(&local.as_str()) || fields.get(3) != Some(&"0A") {
            return None;
        }
        let (_, rx) = fields.get(4)?.split_once(':')?;
        u64::from_str_radix(rx, 16).ok()
    })
}

// Starts through `App::build` from a database URL, the server-mode start;
// the embedded start from settings is the lead's to wire (src/startup.rs).
#[sqlx::test]
async fn hookd_at_its_cap_keeps_hundreds_of_new_connections_waiting_rather_than_dropping_them(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    // A listener made by `TcpListener::bind` holds 128 (129 on Linux):
    // past that the kernel drops the handshake, and the client retries it
    // only a second or more later. hookd's `server.listen_backlog` (1024)
    // holds a burst of 300 while it accepts none (its one slot is held).
    let port = crate::helpers::free_port();
    let database = pool.connect_options().get_database().unwrap().to_string();
    let mut url = url::Url::parse(&std::env::var("DATABASE_URL").unwrap()).unwrap();
    url.set_path(&database);
    let settings = test_settings(
        &redis_url(),
        &format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\nmax_connections = 1\n\
             [database]\nurl = \"{url}\"\nmigrate = false\n"
        ),
    );
    let app = App::build(settings, Role::Api).await.unwrap();
    let address = app.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(app.run(async {
        let _ = stopped.await;
    }));
    let held = TcpStream::connect(address).await.unwrap();
    let mut connecting = tokio::task::JoinSet::new();
    for _ in 0..300 {
        connecting.spawn(TcpStream::connect(address));
    }
    let queued = crate::helpers::eventually(DEADLINE, "300 connections queued", || async {
        accept_queue(port).filter(|queued| *queued >= 299)
    })
    .await;
    assert!(queued >= 299, "{queued} queued");
    // Every one of them has connected (the kernel completed its handshake),
    // though hookd has accepted none.
    let mut connected = 0;
    while let Some(stream) = connecting.join_next().await {
        stream.unwrap().unwrap();
        connected += 1;
    }
    assert_eq!(connected, 300);
    // Stopped and waited for: it closes its pool, and sqlx can drop the
    // test's database after it.
    drop(held);
    drop(stop);
    tokio::time::timeout(DEADLINE, running)
        .await
        .expect("hookd stops")
        .unwrap()
        .unwrap();
}
