//! One client alone in a process of its own, for hookd's benchmark
//! (`benches/dispatch/client_cost.rs` runs it beside the bench's receiver):
//! so that the CPU it reports is the client's and nothing else's.
//!
//! ```text
//! client_alone <sender|hyper> <receiver URL> <requests> <in flight>
//! ```
//!
//! prints `<requests/s> <CPU seconds>`, counting only the requests.
//!
//! - `sender`: hookd's sender (`hookd::sender::Sender`) as the dispatcher
//!   configures and calls it: one prepared target, one signed `send` per
//!   delivery of a drain's payload. With mimalloc, as hookd runs. The floor
//!   under hookd's CPU per delivery.
//! - `hyper`: the bench's bare hyper client (`raw_hyper`): the floor of any
//!   HTTP/1.1 client on the machine.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hookd::domain::secret::SigningSecret;
use hookd::sender::{Delivery, Sender, Target};

#[path = "shared/helper.rs"]
mod helper;
#[path = "../benches/dispatch/raw_hyper.rs"]
mod raw_hyper;
use helper::{cpu_seconds, sender_settings};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, url, count, in_flight] = args.as_slice() else {
        eprintln!("usage: client_alone <sender|hyper> <receiver URL> <requests> <in flight>");
        std::process::exit(2);
    };
    let count: u64 = count.parse().expect("<requests> is a number");
    let in_flight: usize = in_flight.parse().expect("<in flight> is a number");
    // Only the requests count: not the runtime's start, nor the sender's
    // TLS set-up (its root store).
    let (rate, before) = match kind.as_str() {
        "sender" => {
            let settings = sender_settings(in_flight);
            let sender = Arc::new(Sender::new(&settings).expect("the sender starts"));
            let timeout = Duration::from_millis(settings.timeout_ms);
            let before = cpu_seconds();
            (
                sender_run(sender, url, count, in_flight, timeout).await,
                before,
            )
        }
        "hyper" => {
            let before = cpu_seconds();
            (raw_hyper::raw_hyper(url, count, in_flight).await, before)
        }
        other => panic!("{other}: sender or hyper"),
    };
    println!("{rate} {}", cpu_seconds() - before);
}

/// `count` signed deliveries, `in_flight` at a time, as the dispatcher sends
/// them; requests/s.
async fn sender_run(
    sender: Arc<Sender>,
    url: &str,
    count: u64,
    in_flight: usize,
    timeout: Duration,
) -> f64 {
    let target = Arc::new(Target::new(
        url,
        &BTreeMap::new(),
        vec![SigningSecret::generate()],
        timeout,
    ));
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..in_flight {
        let (sender, target, next) = (sender.clone(), target.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let headers = BTreeMap::new();
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= count {
                    return;
                }
                let result = sender
                    .send(Delivery {
                        id: uuid::Uuid::from_u128(u128::from(i) + 1),
                        target: &target,
                        body: Bytes::from(format!("{{\"i\":{i}}}")),
                        content_type: "application/json",
                        event_type: None,
                        attempt: 1,
                        headers: &headers,
                        event_id: None,
                        url: None,
                        sequence: None,
                        traceparent: None,
                    })
                    .await;
                let status = result.answer.map(|answer| answer.status);
                assert_eq!(status, Some(200), "{:?}", result.error);
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    count as f64 / started.elapsed().as_secs_f64()
}
