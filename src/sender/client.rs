//! The receivers' HTTP client, on hyper's connection API: names resolved
//! through the address guard when a connection opens, TCP without Nagle,
//! TLS by rustls offering h2 then http/1.1, and a pool per receiver origin
//! (scheme, host, port): up to `max_idle_per_host` idle HTTP/1.1
//! connections, one shared HTTP/2 connection, each kept 90 s unused. A
//! connection whose exchange did not end (a timeout, a broken answer) is
//! given no new request, whichever the protocol: a receiver that went
//! silent on its shared HTTP/2 connection would otherwise hold every
//! request to it until TCP gave up, many minutes later.
//!
//! It is hookd's only HTTP client: the span exporter posts through it too
//! (`collector`).
//!
//! Why not reqwest: every request
//! went through its redirect and retry layers although hookd turns both
//! off, parsed its URL again, and cloned the pool and connector, which made
//! a request cost 2.9 bare hyper requests; and hyper-util's pool opened a
//! second connection whenever a request waited for an idle one
//! (BENCHMARKS.md, "#51: the sender alone, profiled"). hookd needs none of
//! its other features: no proxy (it would resolve names past the guard), no
//! redirects, no cookies, no decompression.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, HOST};
use hyper::{Method, Request, Response, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;
use url::{Host, Url};

use super::guard::{Guard, ResolveError};
use super::target::{absolute_form, basic_auth, host_header, origin_form};

/// How long a connection is kept unused before it is closed.
const IDLE_FOR: Duration = Duration::from_secs(90);
/// How often the pool drops connections idle too long or closed by their
/// receiver, for receivers no longer sent to.
const SWEEP_EVERY: Duration = Duration::from_secs(30);
/// TCP keep-alive as reqwest set it, which the sender used before: a kept
/// connection idle 15 s is probed every 15 s, and closed after 3 probes
/// unanswered, so a receiver gone without a word costs no attempt; the
/// probes also keep middleboxes from forgetting the connection.
const KEEPALIVE: socket2::TcpKeepalive = socket2::TcpKeepalive::new()
    .with_time(Duration::from_secs(15))
    .with_interval(Duration::from_secs(15))
    .with_retries(3);

type Body = Full<Bytes>;

/// Why a request got no response (its body's errors are the caller's).
#[derive(Debug)]
pub(super) enum Failure {
    /// The guard refused every address, or the name did not resolve.
    Resolve(ResolveError),
    /// No TCP connection to any address.
    Connect(String),
    Tls(String),
    /// The connection (name, TCP and TLS) took longer than the connect
    /// timeout.
    ConnectTimeout,
    /// The connection broke, or the answer was not HTTP.
    Request(String),
}

#[derive(Clone)]
pub(super) struct Client {
    shared: Arc<Shared>,
}

struct Shared {
    guard: Guard,
    tls: TlsConnector,
    connect_timeout: Duration,
    max_idle_per_host: usize,
    pool: Mutex<Pool>,
    /// Names each HTTP/2 connection, so that a lease forgets its own.
    next_http2: AtomicU64,
}

#[derive(Default)]
struct Pool {
    http1: HashMap<Origin, Vec<Idle<http1::SendRequest<Body>>>>,
    http2: HashMap<Origin, Idle<Http2>>,
    swept: Option<Instant>,
}

struct Idle<T> {
    sender: T,
    since: Instant,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct Origin {
    https: bool,
    host: String,
    port: u16,
}

/// A shared HTTP/2 connection and its name in this client.
#[derive(Clone)]
struct Http2 {
    id: u64,
    sender: http2::SendRequest<Body>,
}

impl Http2 {
    fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}

enum Connection {
    Http1(http1::SendRequest<Body>),
    Http2(Http2),
}

/// The connection one request went on, until its answer is read to the end
/// (`release`). An HTTP/1.1 connection goes back to the pool then and is
/// closed if the lease is dropped before; an HTTP/2 connection dropped
/// before is given no new request (its requests in flight go on).
pub(super) struct Lease(Option<Leased>);

enum Leased {
    Http1(Client, Origin, http1::SendRequest<Body>),
    Http2(Client, Origin, u64),
}

impl Lease {
    pub fn release(mut self) {
        // An HTTP/2 connection stays where it is.
        if let Some(Leased::Http1(client, origin, sender)) = self.0.take() {
            client.check_in(origin, sender);
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(Leased::Http2(client, origin, id)) = self.0.take() {
            client.forget_http2(&origin, id);
        }
    }
}

impl Client {
    /// The guard this client resolves names through; IP literals never
    /// reach it, so the caller checks them against it.
    pub fn guard(&self) -> &Guard {
        &self.shared.guard
    }

    pub fn new(
        guard: Guard,
        tls: Arc<rustls::ClientConfig>,
        connect_timeout: Duration,
        max_idle_per_host: usize,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                guard,
                tls: TlsConnector::from(tls),
                connect_timeout,
                max_idle_per_host,
                pool: Mutex::default(),
                next_http2: AtomicU64::new(0),
            }),
        }
    }

    /// POSTs `body` to `url` (http or https, checked by the caller) with
    /// `headers`, adding `host` (HTTP/1.1), `accept: */*` and the URL's
    /// credentials (rows from before they were refused) unless present.
    /// The deadline is the caller's, around this and the body's reads.
    pub async fn post(
        &self,
        url: &Url,
        mut headers: HeaderMap,
        body: Bytes,
    ) -> Result<(Response<Incoming>, Lease), Failure> {
        let origin = Origin::of(url)?;
        if !headers.contains_key(ACCEPT) {
            headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
        }
        if !url.username().is_empty() && !headers.contains_key(AUTHORIZATION) {
            headers.insert(AUTHORIZATION, basic_auth(url));
        }
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.headers_mut() = headers;
        // A kept connection the receiver closed just before it was reused
        // hands the request back unsent: it goes once more, on a new one.
        let mut fresh = false;
        loop {
            let kept = match fresh {
                false => self.check_out(&origin).await,
                true => None,
            };
            let connection = match kept {
                Some(connection) => connection,
                None => {
                    fresh = true;
                    self.connect(&origin, url).await?
                }
            };
            let sent = match connection {
                Connection::Http1(mut sender) => {
                    *request.uri_mut() = origin_form(url)?;
                    if !request.headers().contains_key(HOST) {
                        request.headers_mut().insert(HOST, host_header(url)?);
                    }
                    match sender.try_send_request(request).await {
                        Ok(response) => {
                            let lease = Lease(Some(Leased::Http1(self.clone(), origin, sender)));
                            return Ok((response, lease));
                        }
                        Err(error) => error,
                    }
                }
                Connection::Http2(Http2 { id, mut sender }) => {
                    *request.uri_mut() = absolute_form(url)?;
                    *request.version_mut() = Version::HTTP_2;
                    // HTTP/2 names the host in `:authority`; a `host`
                    // header beside it is a protocol error to some servers.
                    request.headers_mut().remove(HOST);
                    // Taken before the answer's head: a timeout waiting
                    // for it drops the lease with this future.
                    let lease = Lease(Some(Leased::Http2(self.clone(), origin.clone(), id)));
                    match sender.try_send_request(request).await {
                        Ok(response) => return Ok((response, lease)),
                        Err(error) => error,
                    }
                }
            };
            let mut sent = sent;
            match sent.take_message() {
                Some(unsent) if !fresh => {
                    request = unsent;
                    *request.version_mut() = Version::HTTP_11;
                    fresh = true;
                }
                _ => return Err(Failure::Request(error_chain(&sent.into_error()))),
            }
        }
    }

    /// A kept connection to `origin` that is still open, if any.
    async fn check_out(&self, origin: &Origin) -> Option<Connection> {
        loop {
            let found = {
                let mut pool = self.shared.pool.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(idle) = pool.http2.get_mut(origin) {
                    if !idle.sender.is_closed() && idle.since.elapsed() < IDLE_FOR {
                        idle.since = Instant::now();
                        return Some(Connection::Http2(idle.sender.clone()));
                    }
                    pool.http2.remove(origin);
                }
                let kept = pool.http1.get_mut(origin)?;
                // The most recently used first: the one least likely to
                // have been closed by its receiver.
                let idle = kept.pop()?;
                if kept.is_empty() {
                    pool.http1.remove(origin);
                }
                idle
            };
            if found.since.elapsed() >= IDLE_FOR || found.sender.is_closed() {
                continue;
            }
            let mut sender = found.sender;
            // Ready once the previous response's end has been processed.
            if sender.ready().await.is_ok() {
                return Some(Connection::Http1(sender));
            }
        }
    }

    fn check_in(&self, origin: Origin, sender: http1::SendRequest<Body>) {
        let now = Instant::now();
        let mut pool = self.shared.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.swept.is_none_or(|at| now - at >= SWEEP_EVERY) {
            pool.swept = Some(now);
            pool.http1.retain(|_, kept| {
                kept.retain(|idle| now - idle.since < IDLE_FOR && !idle.sender.is_closed());
                !kept.is_empty()
            });
            pool.http2
                .retain(|_, idle| now - idle.since < IDLE_FOR && !idle.sender.is_closed());
        }
        let kept = pool.http1.entry(origin).or_default();
        if kept.len() < self.shared.max_idle_per_host {
            kept.push(Idle { sender, since: now });
        }
    }

    /// Gives HTTP/2 connection `id` to `origin` no new request.
    fn forget_http2(&self, origin: &Origin, id: u64) {
        let mut pool = self.shared.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool
            .http2
            .get(origin)
            .is_some_and(|idle| idle.sender.id == id)
        {
            pool.http2.remove(origin);
        }
    }

    /// A new connection to `origin`, within the connect timeout: the
    /// guard's addresses tried in turn, TLS for https, HTTP/2 when the
    /// receiver chose it.
    async fn connect(&self, origin: &Origin, url: &Url) -> Result<Connection, Failure> {
        let shared = &self.shared;
        let deadline = tokio::time::Instant::now() + shared.connect_timeout;
        let opened = tokio::time::timeout_at(deadline, async {
            let host = url
                .host()
                .ok_or_else(|| Failure::Request("no host".into()))?;
            let addresses = match &host {
                Host::Ipv4(ip) => vec![SocketAddr::new(IpAddr::V4(*ip), origin.port)],
                Host::Ipv6(ip) => vec![SocketAddr::new(IpAddr::V6(*ip), origin.port)],
                Host::Domain(name) => shared
                    .guard
                    .resolve(name, origin.port)
                    .await
                    .map_err(Failure::Resolve)?,
            };
            let tcp = connect_any(&addresses, deadline).await?;
            if !origin.https {
                return handshake(tcp, None).await;
            }
            let name = match host {
                Host::Domain(name) => ServerName::try_from(name.to_string())
                    .map_err(|e| Failure::Tls(format!("{name}: {e}")))?,
                Host::Ipv4(ip) => ServerName::IpAddress(IpAddr::V4(ip).into()),
                Host::Ipv6(ip) => ServerName::IpAddress(IpAddr::V6(ip).into()),
            };
            let tls =
                shared.tls.connect(name, tcp).await.map_err(|e| {
                    Failure::Tls(format!("TLS handshake with {}: {e}", origin.host))
                })?;
            let http2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            let id = http2.then(|| shared.next_http2.fetch_add(1, Ordering::Relaxed));
            handshake(tls, id).await
        });
        let connection = opened.await.map_err(|_| Failure::ConnectTimeout)??;
        if let Connection::Http2(sender) = &connection {
            let mut pool = shared.pool.lock().unwrap_or_else(|e| e.into_inner());
            let kept = pool.http2.get(origin);
            if kept.is_none_or(|idle| idle.sender.is_closed()) {
                let idle = Idle {
                    sender: sender.clone(),
                    since: Instant::now(),
                };
                pool.http2.insert(origin.clone(), idle);
            }
        }
        Ok(connection)
    }
}

impl Origin {
    fn of(url: &Url) -> Result<Self, Failure> {
        let https = match url.scheme() {
            "https" => true,
            "http" => false,
            other => return Err(Failure::Request(format!("unsupported scheme {other}"))),
        };
        let host = url.host_str().filter(|host| !host.is_empty());
        let host = host.ok_or_else(|| Failure::Request("the URL names no host".into()))?;
        Ok(Self {
            https,
            host: host.to_string(),
            port: url.port().unwrap_or(if https { 443 } else { 80 }),
        })
    }
}

/// The first of `addresses` that accepts. Each is given an equal share of
/// the time left, so an address that drops packets (an IPv6 route that goes
/// nowhere, often) leaves time for the next, as hyper-util's connector
/// does.
async fn connect_any(
    addresses: &[SocketAddr],
    deadline: tokio::time::Instant,
) -> Result<TcpStream, Failure> {
    let mut last = None;
    for (tried, address) in addresses.iter().enumerate() {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let share = left / (addresses.len() - tried) as u32;
        match tokio::time::timeout(share, TcpStream::connect(address)).await {
            Ok(Ok(tcp)) => {
                // Small requests go out whole at once, as a client's should.
                let _ = tcp.set_nodelay(true);
                let _ = socket2::SockRef::from(&tcp).set_tcp_keepalive(&KEEPALIVE);
                return Ok(tcp);
            }
            Ok(Err(e)) => last = Some(format!("cannot connect to {address}: {e}")),
            Err(_) => last = Some(format!("cannot connect to {address}: timed out")),
        }
    }
    Err(Failure::Connect(
        last.unwrap_or_else(|| "no address to connect to".into()),
    ))
}

/// HTTP/2 on `io` if given its connection's `http2` id, else HTTP/1.1.
async fn handshake<T>(io: T, http2: Option<u64>) -> Result<Connection, Failure>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let io = TokioIo::new(io);
    let failed = |e: hyper::Error| Failure::Request(error_chain(&e));
    if let Some(id) = http2 {
        let (sender, connection) = http2::Builder::new(TokioExecutor::new())
            .handshake(io)
            .await
            .map_err(failed)?;
        tokio::spawn(connection);
        Ok(Connection::Http2(Http2 { id, sender }))
    } else {
        let (sender, connection) = http1::handshake(io).await.map_err(failed)?;
        tokio::spawn(connection);
        Ok(Connection::Http1(sender))
    }
}

/// An error and its causes, each once, joined by `: `.
pub(super) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_line_names_the_path_and_query_and_the_host_header_a_port_only_when_it_is_not_the_default(
    ) {
        let url = Url::parse("https://x.example:8443/hook/a?b=c#frag").unwrap();
        assert_eq!(origin_form(&url).unwrap(), "/hook/a?b=c");
        assert_eq!(host_header(&url).unwrap(), "x.example:8443");
        assert_eq!(
            absolute_form(&url).unwrap(),
            "https://x.example:8443/hook/a?b=c"
        );
        let url = Url::parse("https://user:secret@x.example/h").unwrap();
        assert_eq!(absolute_form(&url).unwrap(), "https://x.example/h");
        let url = Url::parse("http://[::1]:80/").unwrap();
        assert_eq!(host_header(&url).unwrap(), "[::1]");
        assert_eq!(Origin::of(&url).unwrap().port, 80);
    }
}
