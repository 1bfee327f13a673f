//! A real HTTP receiver on 127.0.0.1:0 that records every request and answers
//! as each test scripts it, per path.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};

use crate::helpers::eventually;

#[derive(Clone, Debug)]
pub enum Reply {
    /// Status, body and extra headers.
    With(u16, &'static str, Vec<(&'static str, &'static str)>),
    /// Never answers.
    Hang,
    /// Answers 200 after a pause.
    Slow(Duration),
    /// Answers with this status once the test opens the gate (`notify_one`).
    Gated(Arc<tokio::sync::Notify>, u16),
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Reply::With(status, "", Vec::new())
    }

    pub fn body(status: u16, body: &'static str) -> Self {
        Reply::With(status, body, Vec::new())
    }
}

#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub at: DateTime<Utc>,
    /// When the receiver accepted the connection the request came on:
    /// before any request on it is read, so on a loaded machine earlier
    /// than `at` by as long as the request waited to be read.
    pub connected_at: DateTime<Utc>,
}

/// When a connection was accepted (`Received::connected_at`).
#[derive(Clone, Copy, Debug)]
struct Accepted(DateTime<Utc>);

impl
    axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, tokio::net::TcpListener>>
    for Accepted
{
    fn connect_info(_: axum::serve::IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        Accepted(Utc::now())
    }
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
struct Script {
    /// Replies to give in order, then the last one forever.
    replies: HashMap<String, VecDeque<Reply>>,
    log: Vec<Received>,
}

#[derive(Clone)]
pub struct Receiver {
    pub base: String,
    script: Arc<Mutex<Script>>,
}

impl Receiver {
    pub async fn start() -> Self {
        Self::start_at("127.0.0.1").await
    }

    /// A receiver on another address, e.g. another of 127.0.0.0/8.
    pub async fn start_at(ip: &str) -> Self {
        let script = Arc::new(Mutex::new(Script::default()));
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<Accepted>(),
            )
            .await
        });
        Self { base, script }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Answers `path` with `replies` in order, repeating the last one.
    pub fn reply(&self, path: &str, replies: Vec<Reply>) {
        self.script
            .lock()
            .unwrap()
            .replies
            .insert(path.to_string(), replies.into());
    }

    pub fn received(&self, path: &str) -> Vec<Received> {
        self.script
            .lock()
            .unwrap()
            .log
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }

    /// How many distinct notifications (`webhook-id`) arrived on `path`,
    /// and how many requests in all.
    ///
    /// Reads the log in place: a wait polls this every 10 ms, and a copy
    /// of thousands of requests each time took CPU from the hookd under
    /// test in the same process.
    pub fn distinct(&self, path: &str) -> (usize, usize) {
        let script = self.script.lock().unwrap();
        let mut ids = std::collections::HashSet::new();
        let mut total = 0;
        for r in script.log.iter().filter(|r| r.path == path) {
            total += 1;
            ids.extend(r.header("webhook-id"));
        }
        (ids.len(), total)
    }

    /// Waits until `count` distinct notifications arrived on `path`.
    pub async fn wait_distinct(
        &self,
        path: &str,
        count: usize,
        deadline: Duration,
    ) -> (usize, usize) {
        eventually(
            deadline,
            &format!("{count} distinct notifications on {path}"),
            || {
                let seen = self.distinct(path);
                async move { (seen.0 >= count).then_some(seen) }
            },
        )
        .await
    }

    pub fn total(&self) -> usize {
        self.script.lock().unwrap().log.len()
    }

    /// Waits until `path` has received at least `count` requests.
    pub async fn wait_for(&self, path: &str, count: usize, deadline: Duration) -> Vec<Received> {
        eventually(deadline, &format!("{count} requests on {path}"), || {
            let got = self.received(path);
            async move { (got.len() >= count).then_some(got) }
        })
        .await
    }
}

async fn handle(
    State(script): State<Arc<Mutex<Script>>>,
    ConnectInfo(Accepted(connected_at)): ConnectInfo<Accepted>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let reply = {
        let mut script = script.lock().unwrap();
        script.log.push(Received {
            path: path.clone(),
            headers,
            body,
            at: Utc::now(),
            connected_at,
        });
        match script.replies.get_mut(&path) {
            Some(queue) if queue.len() > 1 => queue.pop_front().unwrap(),
            Some(queue) => queue.front().cloned().unwrap_or(Reply::status(200)),
            None => Reply::status(200),
        }
    };
    match reply {
        Reply::Hang => std::future::pending().await,
        Reply::Gated(gate, status) => {
            gate.notified().await;
            StatusCode::from_u16(status).unwrap().into_response()
        }
        Reply::Slow(pause) => {
            tokio::time::sleep(pause).await;
            StatusCode::OK.into_response()
        }
        Reply::With(status, body, extra) => {
            let mut response = (StatusCode::from_u16(status).unwrap(), body).into_response();
            for (name, value) in extra {
                response.headers_mut().insert(
                    axum::http::HeaderName::from_static(name),
                    axum::http::HeaderValue::from_static(value),
                );
            }
            response
        }
    }
}
