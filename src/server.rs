//! The HTTP server under the API: hyper's, with the limits a public
//! listener needs, so slow or hostile clients cannot hold it.
//!
//! - At most `server.max_connections` connections are open: past the cap,
//!   hookd stops accepting (new ones wait in the kernel's backlog) rather
//!   than accept and drop, so a burst of honest clients is slowed, not
//!   refused, while the header timeout frees the slots slow ones hold.
//! - That backlog holds `server.listen_backlog` connections (`listen`), not
//!   the 128 of `TcpListener::bind`: past it the kernel drops handshakes,
//!   and a client retries one only after a second or more.
//! - `server.header_timeout_ms` runs from the moment a connection is
//!   accepted: a connection must have a request under way within it, and is
//!   closed once it has had none for that long (`connection`). That covers
//!   a peer that sends nothing, half a request line, only an HTTP/2 preface,
//!   or an HTTP/2 connection that answers pings but never opens a stream,
//!   all before any authentication. A request's turn ends when its
//!   response is handed over, so a response body must be sent within two
//!   header timeouts (the idle one and the shut-down's): a peer that never
//!   reads it (an HTTP/2 window held at zero) cannot hold the connection
//!   either. hyper's own header timer stays as a
//!   second guard for HTTP/1; HTTP/2 connections are also pinged and closed
//!   when the peer stops answering.
//! - `server.request_timeout_ms` (a layer in `api`) bounds each request,
//!   body included.
//! - `server.tls_cert` and `server.tls_key` make the listener speak TLS
//!   (rustls, HTTP/2 and HTTP/1.1 by ALPN).
//!
//! On shutdown it stops accepting and lets requests in progress finish
//! within `server.shutdown_timeout_ms`.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::either::Either;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::config::ServerSettings;

mod connection;

use connection::Activity;

/// A listener on `address` whose accept queue holds `backlog` connections
/// (the kernel caps it at `net.core.somaxconn`). Like
/// `TcpListener::bind`, it sets `SO_REUSEADDR`, so a restarted hookd can
/// listen again beside the old process's connections in `TIME_WAIT`.
pub fn listen(address: std::net::SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = match address {
        std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(backlog)
}

/// How often an idle HTTP/2 connection is pinged, and how long a ping may
/// go unanswered before the connection is closed.
const H2_PING: Duration = Duration::from_secs(20);

/// The TLS acceptor for `server.tls_cert` and `server.tls_key`, `None` when
/// they are unset, or why they cannot be used (naming the key).
pub fn tls_acceptor(settings: &ServerSettings) -> Result<Option<TlsAcceptor>, String> {
    Ok(settings
        .tls_config()?
        .map(|config| TlsAcceptor::from(Arc::new(config))))
}

/// Serves `router` on `listener` until `shutdown`, then drains.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    settings: &ServerSettings,
    tls: Option<TlsAcceptor>,
    shutdown: CancellationToken,
) {
    let header_timeout = Duration::from_millis(settings.header_timeout_ms);
    let slots = Arc::new(Semaphore::new(settings.max_connections));
    let connections = TaskTracker::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_PING)
        .keep_alive_timeout(H2_PING);
    let builder = Arc::new(builder);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            _ = shutdown.cancelled() => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors, say: wait a moment, not a spin.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        let activity = Activity::new();
        let service = {
            let (router, activity) = (router.clone(), activity.clone());
            TowerToHyperService::new(tower::service_fn(
                move |request: axum::http::Request<hyper::body::Incoming>| {
                    let busy = activity.begin();
                    let response = router.clone().oneshot(request.map(axum::body::Body::new));
                    async move {
                        let response = response.await;
                        drop(busy);
                        response
                    }
                },
            ))
        };
        let builder = builder.clone();
        let tls = tls.clone();
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            let _slot = slot;
            let stream = match tls {
                None => Either::Left(stream),
                // The handshake counts against the header timeout too.
                Some(acceptor) => tokio::select! {
                    accepted = acceptor.accept(stream) => match accepted {
                        Ok(stream) => Either::Right(stream),
                        Err(_) => return,
                    },
                    _ = activity.idle_for(header_timeout) => return,
                    _ = shutdown.cancelled() => return,
                },
            };
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            let idle = tokio::select! {
                _ = connection.as_mut() => return,
                _ = activity.idle_for(header_timeout) => true,
                _ = shutdown.cancelled() => false,
            };
            // Requests under way finish; HTTP/2 says GOAWAY. A peer that
            // does not let an idle connection end within another header
            // timeout is dropped; on shutdown, `serve` bounds the wait.
            connection.as_mut().graceful_shutdown();
            if idle {
                let _ = tokio::time::timeout(header_timeout, connection).await;
            } else {
                let _ = connection.await;
            }
        });
    }
    drop(listener);
    connections.close();
    let grace = Duration::from_millis(settings.shutdown_timeout_ms);
    if tokio::time::timeout(grace, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            "requests still in progress at the end of server.shutdown_timeout_ms; closing them"
        );
    }
}
