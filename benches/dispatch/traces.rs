//! `traces_drain` (opt-in: `BENCH_ONLY=traces_drain`): the drain of
//! notifications that each carry a sampled `traceparent`, with spans
//! exported to an OTLP/HTTP collector (`telemetry.otlp_endpoint`) and
//! without, alternating which goes first, in each mode. The collector is
//! a sink in this process that answers 200 and counts what it took, so
//! the figure is hookd's cost of making, encoding and sending spans, not
//! a collector's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::routing::post;
use serde_json::json;

/// Notifications per drain.
const DRAIN: usize = 20_000;

/// What the sink took: export requests and their bytes.
#[derive(Default)]
struct Sink {
    requests: AtomicU64,
    bytes: AtomicU64,
}

async fn start_sink() -> (String, Arc<Sink>) {
    let sink = Arc::new(Sink::default());
    let counted = sink.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |body: bytes::Bytes| {
            let counted = counted.clone();
            async move {
                counted.requests.fetch_add(1, Ordering::Relaxed);
                counted
                    .bytes
                    .fetch_add(body.len() as u64, Ordering::Relaxed);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, sink)
}

/// The drain's batch bodies: each notification with a sampled
/// `traceparent` of its own trace among its headers, in both runs.
fn traced_bodies() -> Vec<String> {
    (0..DRAIN.div_ceil(1000))
        .map(|b| {
            let items: Vec<_> = (b * 1000..((b + 1) * 1000).min(DRAIN))
                .map(|i| {
                    let traceparent = format!("00-{:032x}-{:016x}-01", i + 1, i + 1);
                    json!({"endpoint": "{endpoint}", "payload": {"i": i},
                           "headers": {"traceparent": traceparent}})
                })
                .collect();
            json!({"notifications": items}).to_string()
        })
        .collect()
}

pub async fn drains(
    bench: &super::rate_limit::Bench<'_>,
    runs: usize,
    server: bool,
    embedded: bool,
) {
    let (collector, sink) = start_sink().await;
    let on = [("HOOKD_TELEMETRY__OTLP_ENDPOINT", collector.as_str())];
    for (mode, wanted) in [("server", server), ("embedded", embedded)] {
        if !wanted {
            continue;
        }
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for run in 0..runs {
            for exporting in [run % 2 == 0, run % 2 == 1] {
                let env: &[(&str, &str)] = if exporting { &on } else { &[] };
                let before = sink.bytes.load(Ordering::Relaxed);
                let rate = match mode {
                    "server" => {
                        let prefix = format!("bench-traces-{run}-{exporting}");
                        super::stats::timed_server_drain(bench, &prefix, env, traced_bodies()).await
                    }
                    _ => super::stats::timed_embedded_drain(bench, env, traced_bodies()).await,
                };
                let exported = sink.bytes.load(Ordering::Relaxed) - before;
                println!(
                    "   run {}: drain ({mode}), export {}: {rate:.0}/s ({:.1} MB of spans)",
                    run + 1,
                    if exporting { "on" } else { "off" },
                    exported as f64 / 1e6
                );
                if exporting {
                    with.push(rate)
                } else {
                    without.push(rate)
                }
            }
        }
        let (with, without) = (super::median(with), super::median(without));
        println!(
            "T1. drain of {DRAIN} traced notifications ({mode}), spans exported ÷ not: {with:.0}/s ÷ {without:.0}/s = {:.2} (medians of {runs}, alternated; {} export requests in all)",
            with / without,
            sink.requests.load(Ordering::Relaxed)
        );
    }
}
