//! The raw limit's client: a minimal hyper HTTP/1.1 client (one connection
//! per concurrent request, nothing but hyper's connection and a loop). The
//! bench runs it in the bench's process, beside the receiver (figure 7's
//! raw run), and the `client_alone` example in a process of its own.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hyper::body::Body;
use hyper_util::rt::TokioIo;

/// Requests/s of a bare hyper HTTP/1.1 client against the receiver,
/// `in_flight` connections each sending one request after another:
/// the least a client can spend per request, so the ceiling a sender
/// could reach on this machine.
pub async fn raw_hyper(url: &str, count: u64, in_flight: usize) -> f64 {
    let uri: hyper::Uri = url.parse().unwrap();
    let authority = uri.authority().unwrap().to_string();
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..in_flight {
        let (uri, authority, next) = (uri.clone(), authority.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(authority.as_str())
                .await
                .unwrap();
            stream.set_nodelay(true).unwrap();
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake::<_, String>(TokioIo::new(stream))
                    .await
                    .unwrap();
            tokio::spawn(connection);
            while next.fetch_add(1, Ordering::SeqCst) < count {
                sender.ready().await.unwrap();
                let request = hyper::Request::post(uri.clone())
                    .header(hyper::header::HOST, authority.as_str())
                    .header(hyper::header::CONTENT_TYPE, "application/json")
                    .body(String::from("{\"i\":1}"))
                    .unwrap();
                let mut body = sender.send_request(request).await.unwrap().into_body();
                while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                    frame.unwrap();
                }
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    count as f64 / started.elapsed().as_secs_f64()
}
