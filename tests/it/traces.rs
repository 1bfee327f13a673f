//! Traces end to end (docs/design.md §19), on each backend: a producer's
//! `traceparent` reaches the receiver of each delivery, and the spans of
//! the create, the claim and the attempt reach a real OTLP/HTTP receiver
//! (`tests/otlp_receiver.py`, decoding with the OpenTelemetry project's
//! Python bindings) in the producer's trace, each the parent of the next.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};
use crate::receiver::{Received, Receiver};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PRODUCER_SPAN: &str = "00f067aa0ba902b7";

/// The OTLP receiver: a Python process printing what it decodes.
struct Collector {
    child: Child,
    port: u16,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Collector {
    fn start() -> Self {
        let python = std::env::var("HOOKD_TEST_OTLP_PYTHON").expect(
            "HOOKD_TEST_OTLP_PYTHON names a Python with opentelemetry-proto: run scripts/test, which installs it",
        );
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otlp_receiver.py");
        let mut child = Command::new(python)
            .arg(script)
            .stdout(Stdio::piped())
            .spawn()
            .expect("the OTLP receiver starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = lines
            .next()
            .expect("the receiver prints its port")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let sink = requests.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let value: Value = serde_json::from_str(&line).unwrap();
                sink.lock().unwrap().push(value);
            }
        });
        Self {
            child,
            port,
            requests,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn spans(&self) -> Vec<Value> {
        let requests = self.requests.lock().unwrap();
        for request in requests.iter() {
            assert!(request.get("error").is_none(), "undecodable: {request}");
        }
        requests
            .iter()
            .flat_map(|r| r["spans"].as_array().cloned().unwrap_or_default())
            .collect()
    }

    /// The span named `name` in `trace` whose attribute `key` is `value`,
    /// once exported.
    async fn span(&self, trace: &str, name: &str, (key, value): (&str, Value)) -> Value {
        eventually(Duration::from_secs(20), "the span is exported", || async {
            self.spans().into_iter().find(|span| {
                span["trace_id"] == trace
                    && span["name"] == name
                    && span["attributes"][key] == value
            })
        })
        .await
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The README's settings, with a collector's key and batches sent soon.
fn telemetry(collector: &str) -> String {
    format!(
        "[telemetry]\notlp_endpoint = \"{collector}\"\notlp_headers = {{ \"x-api-key\" = \"collector-key\" }}\nexport_interval_ms = 50\n"
    )
}

async fn create(app: &TestApp, path: &str, headers: &[(&str, &str)], body: Value) -> Value {
    let mut request = app
        .client
        .post(format!("{}{path}", app.base))
        .bearer_auth(crate::helpers::TOKEN)
        .json(&body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert!(
        status == StatusCode::CREATED || status == StatusCode::OK,
        "{status}: {body}"
    );
    body
}

/// `(trace id, parent id)` of a delivery's `traceparent`.
fn parent_of(request: &Received) -> (String, String) {
    let traceparent = request.header("traceparent").expect("a traceparent");
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    assert_eq!(parts[0], "00");
    (parts[1].to_string(), parts[2].to_string())
}

async fn a_producers_trace_runs_through_the_create_the_claim_and_each_attempt_to_the_receiver(
    backend: Backend,
) {
    let collector = Collector::start();
    let app = backend.spawn_with(&telemetry(&collector.url())).await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "traced", "url": receiver.url("/traced")}))
        .await;
    let traceparent = format!("00-{TRACE}-{PRODUCER_SPAN}-01");
    let created = create(
        &app,
        "/v1/notifications",
        &[
            ("traceparent", &traceparent),
            ("tracestate", "vendor=opaque"),
        ],
        json!({"endpoint": "traced", "payload": {"order": 123}}),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_string();

    let delivered = receiver
        .wait_for("/traced", 1, Duration::from_secs(20))
        .await;
    let (trace, attempt_span) = parent_of(&delivered[0]);
    assert_eq!(trace, TRACE, "the producer's trace reaches the receiver");
    assert_ne!(attempt_span, PRODUCER_SPAN, "the attempt is the parent");
    assert_eq!(delivered[0].header("tracestate"), Some("vendor=opaque"));

    let create_span = collector
        .span(
            TRACE,
            "POST /v1/notifications",
            ("http.response.status_code", json!(201)),
        )
        .await;
    assert_eq!(create_span["parent_span_id"], PRODUCER_SPAN);
    assert_eq!(create_span["kind"], 2, "a server span");
    assert_eq!(create_span["trace_state"], "vendor=opaque");
    assert_eq!(create_span["resource"]["service.name"], "hookd");
    let requests = collector.requests.lock().unwrap().clone();
    assert!(
        requests
            .iter()
            .all(|r| r["headers"]["x-api-key"] == "collector-key"),
        "telemetry.otlp_headers on each export"
    );
    let claim = collector
        .span(TRACE, "claim", ("hookd.notification.id", json!(id)))
        .await;
    assert_eq!(claim["parent_span_id"], create_span["span_id"]);
    let attempt = collector
        .span(TRACE, "POST", ("hookd.notification.id", json!(id)))
        .await;
    assert_eq!(attempt["span_id"], attempt_span, "the receiver's parent");
    assert_eq!(attempt["parent_span_id"], create_span["span_id"]);
    assert_eq!(attempt["kind"], 3, "a client span");
    assert_eq!(attempt["attributes"]["hookd.endpoint.uid"], "traced");
    assert_eq!(attempt["attributes"]["hookd.attempt"], 1);
    assert_eq!(attempt["attributes"]["http.response.status_code"], 200);
    assert_eq!(attempt["attributes"]["hookd.outcome"], "succeeded");
    assert_eq!(attempt["status"]["code"], 0, "unset: it succeeded");
    assert!(attempt["end"].as_u64() >= attempt["start"].as_u64());

    // A failed attempt is an error span, and the retry's attempt another
    // child of the create, with the receiver seeing each as its parent.
    receiver.reply(
        "/retried",
        vec![
            crate::receiver::Reply::status(503),
            crate::receiver::Reply::status(200),
        ],
    );
    app.endpoint(
        json!({"uid": "retried", "url": receiver.url("/retried"), "schedule": ["0s", "1s"]}),
    )
    .await;
    let created = create(
        &app,
        "/v1/notifications",
        &[("traceparent", &traceparent)],
        json!({"endpoint": "retried", "payload": {"order": 124}}),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_string();
    let delivered = receiver
        .wait_for("/retried", 2, Duration::from_secs(20))
        .await;
    let first = collector
        .span(TRACE, "POST", ("hookd.notification.id", json!(id)))
        .await;
    let failed = eventually(Duration::from_secs(20), "both attempts' spans", || async {
        let spans: Vec<Value> = collector
            .spans()
            .into_iter()
            .filter(|s| s["name"] == "POST" && s["attributes"]["hookd.notification.id"] == id)
            .collect();
        (spans.len() == 2).then_some(spans)
    })
    .await;
    assert_eq!(first["parent_span_id"], failed[1]["parent_span_id"]);
    let by_attempt = |n: i64| {
        failed
            .iter()
            .find(|s| s["attributes"]["hookd.attempt"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(by_attempt(1)["status"]["code"], 2, "an error");
    assert_eq!(
        by_attempt(1)["attributes"]["http.response.status_code"],
        503
    );
    for (n, request) in delivered.iter().enumerate() {
        let (_, parent) = parent_of(request);
        assert_eq!(by_attempt(n as i64 + 1)["span_id"], parent);
    }
}
both!(a_producers_trace_runs_through_the_create_the_claim_and_each_attempt_to_the_receiver);

async fn events_and_batch_items_keep_the_trace_they_were_created_in(backend: Backend) {
    let collector = Collector::start();
    let app = backend.spawn_with(&telemetry(&collector.url())).await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "subscribed", "url": receiver.url("/subscribed"), "event_types": ["order.paid"]}))
        .await;
    let event_trace = "11111111111111111111111111111111";
    create(
        &app,
        "/v1/events",
        &[(
            "traceparent",
            &format!("00-{event_trace}-{PRODUCER_SPAN}-01"),
        )],
        json!({"event_type": "order.paid", "payload": {"order": 1}}),
    )
    .await;
    let delivered = receiver
        .wait_for("/subscribed", 1, Duration::from_secs(20))
        .await;
    assert_eq!(parent_of(&delivered[0]).0, event_trace);
    collector
        .span(event_trace, "POST /v1/events", ("hookd.created", json!(1)))
        .await;

    // The request's trace for the items that bring none; an item's own
    // `traceparent` header wins.
    let batch_trace = "22222222222222222222222222222222";
    let own_trace = "33333333333333333333333333333333";
    create(
        &app,
        "/v1/notifications/batch",
        &[(
            "traceparent",
            &format!("00-{batch_trace}-{PRODUCER_SPAN}-01"),
        )],
        json!({"notifications": [
            {"endpoint": "subscribed", "payload": {"item": "plain"}},
            {"endpoint": "subscribed", "payload": {"item": "own"},
             "headers": {"traceparent": format!("00-{own_trace}-{PRODUCER_SPAN}-01")}},
        ]}),
    )
    .await;
    let delivered = receiver
        .wait_for("/subscribed", 3, Duration::from_secs(20))
        .await;
    let trace_of = |item: &str| {
        let request = delivered
            .iter()
            .find(|r| serde_json::from_slice::<Value>(&r.body).unwrap()["item"] == item)
            .unwrap();
        parent_of(request).0
    };
    assert_eq!(trace_of("plain"), batch_trace);
    assert_eq!(trace_of("own"), own_trace);
    let batch = collector
        .span(
            batch_trace,
            "POST /v1/notifications/batch",
            ("hookd.created", json!(2)),
        )
        .await;
    assert_eq!(batch["parent_span_id"], PRODUCER_SPAN);
    collector
        .span(own_trace, "POST", ("hookd.attempt", json!(1)))
        .await;
}
both!(events_and_batch_items_keep_the_trace_they_were_created_in);

async fn without_a_collector_the_producers_traceparent_is_forwarded_as_it_came(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "plain", "url": receiver.url("/plain")}))
        .await;
    let traceparent = format!("00-{TRACE}-{PRODUCER_SPAN}-01");
    let created = create(
        &app,
        "/v1/notifications",
        &[("traceparent", &traceparent)],
        json!({"endpoint": "plain", "payload": {"n": 1}}),
    )
    .await;
    assert_eq!(
        created["headers"]["traceparent"], traceparent,
        "kept as one of its headers, and shown: {created}"
    );
    // A malformed one is ignored, as the recommendation says: the create
    // succeeds and nothing is forwarded.
    create(
        &app,
        "/v1/notifications",
        &[("traceparent", "00-not-a-trace-01")],
        json!({"endpoint": "plain", "payload": {"n": 2}}),
    )
    .await;
    let delivered = receiver
        .wait_for("/plain", 2, Duration::from_secs(20))
        .await;
    let by_n = |n: i64| {
        delivered
            .iter()
            .find(|r| serde_json::from_slice::<Value>(&r.body).unwrap()["n"] == n)
            .unwrap()
    };
    assert_eq!(by_n(1).header("traceparent"), Some(traceparent.as_str()));
    assert_eq!(by_n(2).header("traceparent"), None);
}
both!(without_a_collector_the_producers_traceparent_is_forwarded_as_it_came);

async fn a_collector_that_is_down_costs_a_counter_and_no_delivery(backend: Backend) {
    // Nothing listens on this port.
    let closed = format!("http://127.0.0.1:{}", crate::helpers::free_port());
    let app = backend.spawn_with(&telemetry(&closed)).await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "on", "url": receiver.url("/on")}))
        .await;
    for n in 0..5 {
        create(
            &app,
            "/v1/notifications",
            &[],
            json!({"endpoint": "on", "payload": {"n": n}}),
        )
        .await;
    }
    let delivered = receiver.wait_for("/on", 5, Duration::from_secs(20)).await;
    // Without a producer's trace, hookd starts one at the create.
    let (trace, _) = parent_of(&delivered[0]);
    assert_ne!(trace, "0".repeat(32));
    let client = crate::helpers::http_client();
    eventually(
        Duration::from_secs(20),
        "failed exports are counted",
        || async {
            let text = crate::helpers::scrape_metrics(&client, &app.base).await;
            let dropped = crate::helpers::metric(
                &text,
                "hookd_spans_dropped_total{reason=\"export_failed\"}",
            );
            (dropped >= 1.0).then_some(())
        },
    )
    .await;
}
both!(a_collector_that_is_down_costs_a_counter_and_no_delivery);

/// A real process, whose runtime ends with it: on SIGTERM, what the
/// exporter still holds is sent before the process exits (the shutdown
/// asks for it, rather than racing the runtime's end with the queue's
/// closing). Configured by the environment, as the README's
/// `HOOKD_<SECTION>__<KEY>` says.
#[tokio::test]
async fn a_stopped_process_sends_the_spans_it_still_held() {
    let collector = Collector::start();
    let dir = tempfile::tempdir().unwrap();
    let endpoint = collector.url();
    let mut hookd = crate::embedded::Embedded::start(
        dir.path(),
        &[
            ("HOOKD_TELEMETRY__OTLP_ENDPOINT", endpoint.as_str()),
            // Batches would wait a minute: only the shutdown sends them.
            ("HOOKD_TELEMETRY__EXPORT_INTERVAL_MS", "60000"),
        ],
    )
    .await;
    let receiver = Receiver::start().await;
    hookd
        .endpoint("last", &receiver.url("/last"), json!({}))
        .await;
    let response = crate::helpers::http_client()
        .post(format!("{}/v1/notifications", hookd.base))
        .bearer_auth(crate::helpers::TOKEN)
        .header("traceparent", format!("00-{TRACE}-{PRODUCER_SPAN}-01"))
        .json(&json!({"endpoint": "last", "payload": {"n": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let id = response.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    eventually(
        Duration::from_secs(20),
        "the attempt is recorded",
        || async {
            let (_, read) = hookd.get(&format!("/v1/notifications/{id}")).await;
            (read["status"] == "succeeded").then_some(())
        },
    )
    .await;
    assert!(
        collector.spans().is_empty(),
        "nothing sent before the interval"
    );
    assert_eq!(hookd.stop().await, Some(0));
    collector
        .span(TRACE, "POST", ("hookd.notification.id", json!(id)))
        .await;
}
