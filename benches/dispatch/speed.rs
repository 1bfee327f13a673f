//! Issue #15's yardstick for latency: the end-to-end latency of
//! notifications offered at a steady rate through single POSTs to an
//! all-role hookd (request sent to receipt). The raw limit's minimal hyper
//! client is in `raw_hyper.rs`.

use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{create_endpoint, percentile, reset, wait_count, Hookd, Received};

/// Notifications due now, offered through single POSTs at `rate` per
/// second for `seconds`, to an all-role hookd: the time from sending the
/// request to the receiver's receipt, p50 / p99 / max in ms, and beside it
/// the time from sending to the 201 (what of the latency is ingest).
pub async fn e2e(
    pool: &sqlx::PgPool,
    database_url: &str,
    redis_url: &str,
    received: &Arc<Received>,
    receiver_url: &str,
    rate: u64,
    seconds: u64,
) {
    reset(pool).await;
    received.reset();
    let hookd = Hookd::start(database_url, redis_url, "bench-e2e", "all").await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()
        .unwrap();
    let endpoint = create_endpoint(&client, &hookd, receiver_url).await;
    super::settled_history(pool, &endpoint, 100_000).await;
    let total = rate * seconds;
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    // The load generator's per-request work is kept small (it shares the
    // machine's cores with hookd): the URL parsed once, and each body the
    // same prefix with the send time appended, no JSON value built.
    let url = reqwest::Url::parse(&format!("{}/v1/notifications", hookd.base)).unwrap();
    let prefix: Arc<str> =
        format!("{{\"endpoint\":\"{endpoint}\",\"body\":\"{{\\\"sent_us\\\":").into();
    let cpu_before = super::cpu_snapshot();
    let probe = Probe::start();
    let epoch = Instant::now();
    let mut requests = tokio::task::JoinSet::new();
    for i in 0..total {
        tokio::time::sleep_until((epoch + interval * i as u32).into()).await;
        let (client, url, prefix) = (client.clone(), url.clone(), prefix.clone());
        requests.spawn(async move {
            let started = Instant::now();
            let sent = chrono::Utc::now().timestamp_micros();
            let mut body = String::with_capacity(prefix.len() + 24);
            body.push_str(&prefix);
            let _ = write!(body, "{sent}}}\"}}");
            let response = client
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            let answered = started.elapsed();
            assert_eq!(response.status(), 201);
            (sent, answered.as_micros() as i64)
        });
    }
    let offered = epoch.elapsed().as_secs_f64();
    let mut sent_and_answered = Vec::with_capacity(total as usize);
    while let Some(took) = requests.join_next().await {
        sent_and_answered.push(took.unwrap());
    }
    wait_count(received, total, Duration::from_secs(120)).await;
    let used: Vec<f64> = super::cpu_snapshot()
        .iter()
        .zip(cpu_before)
        .map(|(a, b)| a - b)
        .collect();
    hookd.stop();
    let (late, slow_syncs) = probe.stop();
    let sent_and_took = received.latency_us.lock().unwrap().clone();
    let whole = Latencies::of(&sent_and_took, &sent_and_answered, i64::MIN);
    // hookd starts cold here (no PostgreSQL connection has planned a
    // statement yet, no connection to the receiver is open), so the first
    // second is reported apart as well as in the whole.
    let first_sent = sent_and_took
        .iter()
        .map(|(sent, _)| *sent)
        .min()
        .unwrap_or(0);
    let warm = Latencies::of(&sent_and_took, &sent_and_answered, first_sent + 1_000_000);
    let bursts = slowest_windows(&sent_and_took, percentile(&whole.received, 0.99));
    let ms = |us: i64| us as f64 / 1000.0;
    println!(
        "13. end to end at {rate}/s offered ({:.0}/s achieved) for {seconds} s, single POSTs to one hookd (all roles), sent -> received: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (sent -> 201: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms); CPU per notification: hookd {:.0} µs, postgres {:.0} µs, redis {:.0} µs",
        total as f64 / offered,
        ms(percentile(&whole.received, 0.5)),
        ms(percentile(&whole.received, 0.99)),
        ms(*whole.received.last().unwrap()),
        ms(percentile(&whole.answered, 0.5)),
        ms(percentile(&whole.answered, 0.99)),
        ms(*whole.answered.last().unwrap()),
        used[0] / total as f64 * 1e6,
        used[1] / total as f64 * 1e6,
        used[2] / total as f64 * 1e6,
    );
    println!(
        "   the slowest 1% (over {:.1} ms) were sent in {} of the run's {} windows of 100 ms (the worst, numbered from the start: {:?}); the 5 worst windows hold {:.0}% of them",
        ms(percentile(&whole.received, 0.99)),
        bursts.windows_with_slow,
        bursts.windows,
        bursts.worst,
        bursts.share_in_worst_5 * 100.0,
    );
    // Each slow spell as (window it began in, ms), the longest first.
    let longest = |spells: &[Spell]| {
        let mut spells: Vec<(i64, f64)> = spells
            .iter()
            .map(|(ended, took)| ((ended - took - first_sent).max(0) / 100_000, ms(*took)))
            .collect();
        spells.sort_unstable_by(|a, b| b.1.total_cmp(&a.1));
        spells.truncate(5);
        spells
    };
    println!(
        "   the machine meanwhile: a bench thread sleeping 1 ms at a time woke over {} ms late {} times, the longest (window, ms): {:?}; an 8 KiB fdatasync every 20 ms took over {} ms {} times, the longest: {:?}",
        Probe::LATE_MS,
        late.len(),
        longest(&late),
        Probe::SLOW_SYNC_MS,
        slow_syncs.len(),
        longest(&slow_syncs),
    );
    let start: Vec<String> = (0..6)
        .map(|window| {
            let from = first_sent + window * 50_000;
            let mut took: Vec<i64> = sent_and_took
                .iter()
                .filter(|(sent, _)| (from..from + 50_000).contains(sent))
                .map(|(_, took)| *took)
                .collect();
            took.sort_unstable();
            took.get(took.len() / 2)
                .map_or_else(|| "-".into(), |p50| format!("{:.1}", ms(*p50)))
        })
        .collect();
    println!(
        "   hookd's first 300 ms, by 50 ms window, sent -> received p50: {} ms",
        start.join(", ")
    );
    println!(
        "   from the second second on (hookd warm), sent -> received: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (sent -> 201: p50 {:.1} ms, p99 {:.1} ms)",
        ms(percentile(&warm.received, 0.5)),
        ms(percentile(&warm.received, 0.99)),
        ms(*warm.received.last().unwrap()),
        ms(percentile(&warm.answered, 0.5)),
        ms(percentile(&warm.answered, 0.99)),
    );
}

/// Two threads that watch the machine rather than hookd during a run: one
/// sleeps 1 ms at a time and notes each time it woke late (the CPU: it
/// waits on nothing but its own timer, so only the kernel or the hypervisor
/// can hold it up); one writes 8 KiB and `fdatasync`s it every 20 ms in the
/// temporary directory, where `scripts/lib/services.sh` puts PostgreSQL and
/// its WAL, and notes each slow sync (the disk, which every commit waits
/// on). When either is slow in the windows that hold the slowest requests,
/// the machine stalled, not hookd alone.
struct Probe {
    stop: Arc<std::sync::atomic::AtomicBool>,
    sleeper: std::thread::JoinHandle<Vec<Spell>>,
    syncer: std::thread::JoinHandle<Vec<Spell>>,
}

/// A slow spell a probe saw: when it ended (µs since the epoch) and how
/// long it lasted (µs).
type Spell = (i64, i64);

impl Probe {
    const LATE_MS: u64 = 5;
    const SLOW_SYNC_MS: u64 = 20;

    fn start() -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sleeper = Self::watch(&stop, Self::LATE_MS, || {
            let before = Instant::now();
            std::thread::sleep(Duration::from_millis(1));
            before.elapsed().saturating_sub(Duration::from_millis(1))
        });
        let path = std::env::temp_dir().join(format!("hookd-bench-sync-{}", std::process::id()));
        let mut file = std::fs::File::create(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let page = [0u8; 8192];
        let syncer = Self::watch(&stop, Self::SLOW_SYNC_MS, move || {
            use std::io::{Seek, Write};
            std::thread::sleep(Duration::from_millis(20));
            let before = Instant::now();
            file.rewind().unwrap();
            file.write_all(&page).unwrap();
            file.sync_data().unwrap();
            before.elapsed()
        });
        Self {
            stop,
            sleeper,
            syncer,
        }
    }

    /// Runs `measure` until stopped; keeps each measure over `over_ms`.
    fn watch(
        stop: &Arc<std::sync::atomic::AtomicBool>,
        over_ms: u64,
        mut measure: impl FnMut() -> Duration + Send + 'static,
    ) -> std::thread::JoinHandle<Vec<Spell>> {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut slow = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let took = measure();
                if took > Duration::from_millis(over_ms) {
                    slow.push((
                        chrono::Utc::now().timestamp_micros(),
                        took.as_micros() as i64,
                    ));
                }
            }
            slow
        })
    }

    /// The late wake-ups and the slow syncs.
    fn stop(self) -> (Vec<Spell>, Vec<Spell>) {
        self.stop.store(true, Ordering::Relaxed);
        (self.sleeper.join().unwrap(), self.syncer.join().unwrap())
    }
}

/// Sorted latencies (µs) of the requests sent from `since` (µs since the
/// epoch) on: to the receipt and to the 201.
struct Latencies {
    received: Vec<i64>,
    answered: Vec<i64>,
}

impl Latencies {
    fn of(sent_and_took: &[(i64, i64)], sent_and_answered: &[(i64, i64)], since: i64) -> Self {
        let after = |pairs: &[(i64, i64)]| {
            let mut took: Vec<i64> = pairs
                .iter()
                .filter(|(sent, _)| *sent >= since)
                .map(|(_, took)| *took)
                .collect();
            took.sort_unstable();
            took
        };
        Self {
            received: after(sent_and_took),
            answered: after(sent_and_answered),
        }
    }
}

/// How the requests slower than `threshold` are spread over the run, by
/// the 100 ms window they were sent in: a few windows holding most of them
/// is a stall (of hookd, PostgreSQL or the machine), many is steady
/// queueing.
struct Bursts {
    windows: usize,
    windows_with_slow: usize,
    /// The windows with the most slow requests, numbered from the start.
    worst: Vec<i64>,
    share_in_worst_5: f64,
}

fn slowest_windows(sent_and_took: &[(i64, i64)], threshold: i64) -> Bursts {
    let start = sent_and_took
        .iter()
        .map(|(sent, _)| *sent)
        .min()
        .unwrap_or(0);
    let mut slow_per_window: std::collections::HashMap<i64, usize> = Default::default();
    let mut windows = std::collections::HashSet::new();
    for (sent, took) in sent_and_took {
        let window = (sent - start) / 100_000;
        windows.insert(window);
        if *took > threshold {
            *slow_per_window.entry(window).or_default() += 1;
        }
    }
    let slow: usize = slow_per_window.values().sum();
    let mut counts: Vec<(i64, usize)> = slow_per_window.into_iter().collect();
    counts.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Bursts {
        windows: windows.len(),
        windows_with_slow: counts.len(),
        worst: counts.iter().take(5).map(|(window, _)| *window).collect(),
        share_in_worst_5: counts.iter().take(5).map(|(_, n)| n).sum::<usize>() as f64
            / slow.max(1) as f64,
    }
}
