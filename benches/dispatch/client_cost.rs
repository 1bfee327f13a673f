//! What a client alone spends per request: the same raw run as figure 7's,
//! made by the `client_alone` example in a process of its own, so that the
//! CPU it reports is the client's and not the receiver's (in the
//! in-process raw runs both share one process and one runtime). Two
//! clients: hookd's own sender (`src/sender/client.rs`), the floor under
//! hookd's CPU per delivery, and the bare hyper client, the floor of any
//! HTTP/1.1 client on this machine (`examples/client_alone.rs`).
//!
//! To profile a client alone, run the receiver as a process too:
//! `BENCH_RECEIVER=127.0.0.1:<port> <bench binary>` serves until stopped,
//! and `perf record -- target/release/examples/client_alone sender
//! http://127.0.0.1:<port>/hook 200000 256` records the sender (BENCHMARKS.md,
//! "How the profiles were taken").

use std::sync::Arc;

use super::{receive, receiver_listener, Received, SENDER_IN_FLIGHT};

/// A raw run by one client in a process of its own.
pub struct ClientRun {
    pub rate: f64,
    /// The client's CPU per request, µs (user + system, from /proc).
    pub cpu_us: f64,
}

/// With `BENCH_RECEIVER=<address>`: serves the bench's receiver there until
/// stopped, and returns true; false without it.
pub async fn receiver_alone() -> bool {
    let Ok(address) = std::env::var("BENCH_RECEIVER") else {
        return false;
    };
    let listener = receiver_listener(
        address
            .parse()
            .expect("BENCH_RECEIVER is an IPv4 address:port"),
    );
    let app = axum::Router::new()
        .fallback(receive)
        .with_state(Arc::new(Received::default()));
    axum::serve(listener, app).await.unwrap();
    true
}

/// Runs `kind` (`sender` or `hyper`) against `url` for `count` requests,
/// `SENDER_IN_FLIGHT` at a time, in a process of its own; its rate and CPU
/// per request. `scripts/bench` builds the example. Awaited, not waited
/// for: the receiver runs on this process's runtime meanwhile, with all of
/// its threads.
pub async fn measure(kind: &str, url: &str, count: u64) -> ClientRun {
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    let output = tokio::process::Command::new(format!("{target}/release/examples/client_alone"))
        .args([kind, url, &count.to_string(), &SENDER_IN_FLIGHT.to_string()])
        .output()
        .await
        .expect("target/release/examples/client_alone (scripts/bench builds it)");
    assert!(
        output.status.success(),
        "the {kind} client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut figures = stdout
        .split_whitespace()
        .map(|figure| figure.parse::<f64>().unwrap());
    let (rate, cpu) = (figures.next().unwrap(), figures.next().unwrap());
    ClientRun {
        rate,
        cpu_us: cpu / count as f64 * 1e6,
    }
}
