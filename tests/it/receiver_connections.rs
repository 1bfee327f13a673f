//! The sender's connections to receivers (`src/sender/client.rs`), seen
//! from receivers of our own: HTTP/2 when a TLS receiver chooses it by
//! ALPN, kept-alive HTTP/1.1 connections reused, a connection its receiver
//! closed never costing a notification an attempt, and a shared HTTP/2
//! connection gone silent given no new notification.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::backends::Backend;
use crate::helpers::{eventually, redis_url, test_settings, TestApp};
use crate::transport::{read_request, tls_files};

const DEADLINE: Duration = Duration::from_secs(15);

/// What one request looked like to an HTTP/2 receiver.
#[derive(Debug, Clone)]
struct Seen {
    version: hyper::Version,
    authority: Option<String>,
    signed: bool,
    body: bytes::Bytes,
}

/// An HTTPS receiver on 127.0.0.1 that offers only h2 by ALPN, answering
/// 200 and keeping what it saw, except that its first connection goes
/// silent after `first_answers` answers: it keeps the connection open but
/// answers nothing more, as a receiver behind a balancer that lost the
/// connection's state does. Counts connections accepted.
async fn http2_receiver(first_answers: usize) -> (String, Arc<Mutex<Vec<Seen>>>, Arc<AtomicUsize>) {
    let files = tls_files();
    let certs = CertificateDer::pem_slice_iter(&std::fs::read(&files.cert).unwrap())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(&std::fs::read(&files.key).unwrap()).unwrap();
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://127.0.0.1:{}/hook",
        listener.local_addr().unwrap().port()
    );
    let (seen, connections) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(AtomicUsize::new(0)),
    );
    let (kept, accepted) = (seen.clone(), connections.clone());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, kept) = (acceptor.clone(), kept.clone());
            let first = accepted.fetch_add(1, Ordering::SeqCst) == 0;
            let answered = Arc::new(AtomicUsize::new(0));
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    move |request: hyper::Request<hyper::body::Incoming>| {
                        let (kept, answered) = (kept.clone(), answered.clone());
                        async move {
                            if first && answered.fetch_add(1, Ordering::SeqCst) >= first_answers {
                                std::future::pending::<()>().await;
                            }
                            let version = request.version();
                            let authority = request.uri().authority().map(|a| a.to_string());
                            let signed = request.headers().contains_key("webhook-signature");
                            let body = request.into_body().collect().await?.to_bytes();
                            kept.lock().unwrap().push(Seen {
                                version,
                                authority,
                                signed,
                                body,
                            });
                            Ok::<_, hyper::Error>(hyper::Response::new(String::from("ok")))
                        }
                    },
                );
                let io = hyper_util::rt::TokioIo::new(tls);
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(io, service)
                        .await;
            });
        }
    });
    (url, seen, connections)
}

/// `count` notifications to `endpoint`, each created once the one before
/// was delivered; the attempts of each.
async fn one_after_another(app: &TestApp, endpoint: &Value, count: usize) -> Vec<Value> {
    let mut delivered = Vec::new();
    for i in 0..count {
        let id = app
            .notify(json!({"endpoint": endpoint["id"], "payload": {"i": i}}))
            .await;
        delivered.push(succeeded(app, &id).await);
    }
    delivered
}

async fn succeeded(app: &TestApp, id: &str) -> Value {
    eventually(DEADLINE, &format!("{id} delivered"), || async {
        let (_, page) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
        let attempts = page["data"].as_array()?.clone();
        let last = attempts.last()?.clone();
        (last["outcome"] == json!("succeeded")).then_some(Value::Array(attempts))
    })
    .await
}

async fn a_receiver_that_chooses_http2_over_tls_is_sent_its_notifications_over_http2(
    backend: Backend,
) {
    let (url, seen, _) = http2_receiver(usize::MAX).await;
    let settings = test_settings(
        &redis_url(),
        &format!("[sender]\nca_file = \"{}\"\n", tls_files().ca),
    );
    let app = backend.spawn_settings(settings).await;
    let endpoint = app.endpoint(json!({"url": url, "schedule": ["0s"]})).await;
    for attempts in one_after_another(&app, &endpoint, 3).await {
        assert_eq!(attempts.as_array().unwrap().len(), 1, "{attempts}");
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    for (i, request) in seen.iter().enumerate() {
        assert_eq!(request.version, hyper::Version::HTTP_2, "{request:?}");
        let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
        let authority = format!("127.0.0.1:{port}");
        assert_eq!(request.authority.as_deref(), Some(authority.as_str()));
        assert!(request.signed, "{request:?}");
        assert_eq!(request.body, format!(r#"{{"i":{i}}}"#), "{request:?}");
    }
}
both!(a_receiver_that_chooses_http2_over_tls_is_sent_its_notifications_over_http2);

async fn a_shared_http2_connection_gone_silent_is_given_no_new_notification(backend: Backend) {
    let (url, seen, connections) = http2_receiver(1).await;
    let settings = test_settings(
        &redis_url(),
        &format!("[sender]\nca_file = \"{}\"\n", tls_files().ca),
    );
    let app = backend.spawn_settings(settings).await;
    let endpoint = app
        .endpoint(json!({"url": url, "schedule": ["0s", "1h"], "timeout_ms": 500}))
        .await;
    one_after_another(&app, &endpoint, 1).await;
    let unanswered = app
        .notify(json!({"endpoint": endpoint["id"], "payload": {"i": "unanswered"}}))
        .await;
    eventually(DEADLINE, "the unanswered attempt to time out", || async {
        let (_, page) = app
            .get(&format!("/v1/notifications/{unanswered}/attempts"))
            .await;
        let first = page["data"].as_array()?.first()?.clone();
        (first["error"]["code"] == json!("timeout")).then_some(())
    })
    .await;
    // The next goes on a new connection, not after the silent one's.
    let attempts = one_after_another(&app, &endpoint, 1).await.remove(0);
    assert_eq!(attempts.as_array().unwrap().len(), 1, "{attempts}");
    assert_eq!(connections.load(Ordering::SeqCst), 2);
    assert_eq!(seen.lock().unwrap().len(), 2);
}
both!(a_shared_http2_connection_gone_silent_is_given_no_new_notification);

/// A plain HTTP/1.1 receiver on 127.0.0.1 that reads whole requests and
/// answers `success` to each; `close_after_answer` closes each connection
/// after its answer without saying so (no `connection: close`), as a
/// receiver's idle timeout or a restart does. Counts connections accepted.
async fn http1_receiver(close_after_answer: bool) -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/hook",
        listener.local_addr().unwrap().port()
    );
    let (connections, requests) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (accepted, answered) = (connections.clone(), requests.clone());
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            accepted.fetch_add(1, Ordering::SeqCst);
            let answered = answered.clone();
            tokio::spawn(async move {
                // One request at a time: the sender waits for each answer.
                while read_request(&mut tcp).await.is_some() {
                    answered.fetch_add(1, Ordering::SeqCst);
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\nsuccess";
                    if tcp.write_all(answer).await.is_err() {
                        return;
                    }
                    if close_after_answer {
                        let _ = tcp.shutdown().await;
                        return;
                    }
                }
            });
        }
    });
    (url, connections, requests)
}

async fn notifications_sent_one_after_another_share_one_kept_alive_connection(backend: Backend) {
    let (url, connections, requests) = http1_receiver(false).await;
    let app = backend.spawn().await;
    let endpoint = app.endpoint(json!({"url": url, "schedule": ["0s"]})).await;
    one_after_another(&app, &endpoint, 5).await;
    assert_eq!(requests.load(Ordering::SeqCst), 5);
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}
both!(notifications_sent_one_after_another_share_one_kept_alive_connection);

async fn a_connection_its_receiver_closed_costs_no_notification_an_attempt(backend: Backend) {
    let (url, connections, requests) = http1_receiver(true).await;
    let app = backend.spawn().await;
    let endpoint = app
        .endpoint(json!({"url": url, "schedule": ["0s", "1h"]}))
        .await;
    for attempts in one_after_another(&app, &endpoint, 5).await {
        assert_eq!(attempts.as_array().unwrap().len(), 1, "{attempts}");
    }
    assert_eq!(requests.load(Ordering::SeqCst), 5);
    assert_eq!(connections.load(Ordering::SeqCst), 5);
}
both!(a_connection_its_receiver_closed_costs_no_notification_an_attempt);
