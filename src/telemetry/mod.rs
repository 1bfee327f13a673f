//! Logging through `tracing` (human-readable or JSON lines) and metrics in
//! Prometheus text format. Metric names start with `hookd_`, carry their
//! unit, and have bounded labels (no ids, no URLs).

pub mod failures;
pub mod oldest_due;
pub mod otlp;
pub mod spans;
pub mod trace_context;

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber. `RUST_LOG` overrides `filter`, unless
/// it is empty: an empty filter would let nothing but errors through,
/// where `RUST_LOG=` in a unit file or a compose file means "not set".
pub fn init(format: LogFormat, filter: &str) {
    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|value| !value.trim().is_empty());
    let filter = from_env
        .map_or_else(|| EnvFilter::try_new(filter), EnvFilter::try_new)
        .unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only for a person at a terminal, not for a log collector.
    // A line that cannot be written (the collector's pipe closed, journald
    // restarting) is dropped: by default the subscriber reports the failure
    // with `eprintln!`, which panics on the same broken stderr, in whatever
    // task was logging: a handler whose write had committed lost its answer,
    // and SIGTERM's "shutdown requested" killed the shutdown.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .log_internal_errors(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
    };
}

/// The process's metrics in Prometheus text format: the exporter's, then
/// the families hookd renders itself (`oldest_due`).
pub fn render() -> String {
    let mut text = metrics().render();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    oldest_due::render(&mut text);
    text
}

/// The process's metrics recorder, installed on first use.
pub fn metrics() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let seconds = [
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            60.0,
        ];
        // Fan-out sizes: one endpoint to tens of thousands.
        let endpoints = [
            0.0, 1.0, 2.0, 5.0, 10.0, 25.0, 100.0, 1000.0, 10_000.0, 100_000.0,
        ];
        let handle = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &seconds)
            .expect("valid buckets")
            .set_buckets_for_metric(Matcher::Full("hookd_event_fan_out".into()), &endpoints)
            .expect("valid buckets")
            .install_recorder()
            .expect("the metrics recorder is installed once");
        describe();
        register_at_zero();
        handle
    })
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(
        "hookd_deliveries_total",
        "Delivery attempts, by outcome and response status class"
    );
    describe_histogram!(
        "hookd_delivery_duration_seconds",
        Unit::Seconds,
        "Time from request start to a full answer or an error"
    );
    describe_histogram!(
        "hookd_delivery_lateness_seconds",
        Unit::Seconds,
        "Send time minus due time of each attempt"
    );
    describe_gauge!(
        "hookd_due_notifications",
        "Notifications in the Redis due index (sampled each second; NaN while it cannot be read)"
    );
    describe_gauge!(
        "hookd_due_backlog",
        "Push notifications due and not yet sent, by whether attempted before (counted up to 10000; read once a minute, the same in every process)"
    );
    describe_gauge!(
        "hookd_leased_notifications",
        "Notifications leased for delivery across all processes (sampled; NaN while the index cannot be read)"
    );
    describe_gauge!(
        "hookd_deliveries_in_flight",
        "Deliveries in progress in this process"
    );
    describe_counter!(
        "hookd_notifications_created_total",
        "Notifications committed through the API"
    );
    describe_counter!(
        "hookd_notifications_handed_off_total",
        "Notifications created due now that this process's dispatcher took straight from its committer, without a claim"
    );
    describe_counter!(
        "hookd_notifications_throttled_total",
        "Times a notification was given back for a later slot by its endpoint's rate limit (not an attempt)"
    );
    describe_counter!(
        "hookd_events_created_total",
        "Events committed through the API (each with its deliveries)"
    );
    describe_histogram!(
        "hookd_event_fan_out",
        "Deliveries each created event fanned out to"
    );
    describe_counter!(
        "hookd_api_requests_total",
        "API requests, by route template, method and status"
    );
    describe_counter!(
        "hookd_index_rebuilds_total",
        "Rebuilds of the due index from PostgreSQL, by shard"
    );
    describe_counter!(
        "hookd_sweep_reindexed_total",
        "Overdue notifications the sweep found missing from Redis"
    );
    describe_counter!(
        "hookd_deferred_indexed_total",
        "Notifications indexed by the housekeeper, not at creation: created while Redis was unreachable, or operator events written by PostgreSQL"
    );
    describe_counter!(
        "hookd_endpoints_disabled_total",
        "Endpoints disabled because every attempt failed for the configured period"
    );
    describe_counter!(
        "hookd_spans_exported_total",
        "Spans the OTLP collector took (telemetry.otlp_endpoint)"
    );
    describe_counter!(
        "hookd_spans_dropped_total",
        "Spans not exported, by reason: queue_full (the export queue was full) or export_failed (the collector refused them or did not answer)"
    );
}

/// Counters exist from the start at 0, so a dashboard or an alert on
/// `rate(hookd_deliveries_total{outcome="failed"}[5m])` works before the
/// first failure. Their label values come from the functions that label
/// real deliveries, so the two cannot drift apart.
fn register_at_zero() {
    use crate::domain::outcome::{FailReason, Outcome};
    let outcomes = [
        Outcome::Succeeded,
        Outcome::Retry {
            at: chrono::DateTime::UNIX_EPOCH,
        },
        Outcome::Failed(FailReason::Exhausted),
    ]
    .map(|o| o.as_str());
    let classes = [Some(200), Some(300), Some(400), Some(500), Some(600), None].map(status_class);
    for outcome in outcomes {
        for class in classes {
            metrics::counter!("hookd_deliveries_total", "outcome" => outcome, "status_class" => class)
                .absolute(0);
        }
    }
    for name in [
        "hookd_notifications_created_total",
        "hookd_notifications_handed_off_total",
        "hookd_events_created_total",
        "hookd_sweep_reindexed_total",
        "hookd_deferred_indexed_total",
        "hookd_endpoints_disabled_total",
        "hookd_spans_exported_total",
        "hookd_notifications_throttled_total",
        "hookd_notifications_held_total",
        "hookd_notifications_failed_circuit_open_total",
        "hookd_recover_restarted_total",
        "hookd_bulk_cancelled_total",
        "hookd_api_concurrency_refused_total",
        "hookd_fan_outs_refused_total",
        "hookd_leases_extended_total",
        "hookd_ordering_stranded_released_total",
    ] {
        metrics::counter!(name).absolute(0);
    }
    for state in ["open", "probing", "closed"] {
        metrics::counter!("hookd_circuit_transitions_total", "state" => state).absolute(0);
    }
    for reason in ["queue_full", "export_failed"] {
        metrics::counter!("hookd_spans_dropped_total", "reason" => reason).absolute(0);
    }
    // By shard of the due index (`due::redis::sharded`); an unsharded one
    // is shard 0.
    metrics::counter!("hookd_index_rebuilds_total", "shard" => "0").absolute(0);
}

/// `"2xx"`, `"4xx"`... or `"none"` when no response came.
pub fn status_class(status: Option<u16>) -> &'static str {
    match status {
        Some(200..=299) => "2xx",
        Some(300..=399) => "3xx",
        Some(400..=499) => "4xx",
        Some(500..=599) => "5xx",
        Some(_) => "other",
        None => "none",
    }
}
