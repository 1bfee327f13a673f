//! Figures 3, 6a and 7: a drain of 50,000 due now, each run paired with
//! the raw limit (the same receiver hit directly by the same HTTP client
//! at the same concurrency, and by a bare hyper client) measured just
//! before it; 7b, the floor, from an identical backlog in the same run;
//! and the embedded drain beside the server's.

use super::*;

pub(crate) async fn run(
    setup: &Setup<'_>,
    summary: &mut Summary,
    stands: &mut stands::Stands,
    rss: &mut Vec<f64>,
) {
    let Setup {
        pool,
        database_url,
        redis_url,
        received,
        receiver_url,
        client,
        runs,
        mode,
    } = *setup;
    let mut rates = Vec::new();
    let mut written = Vec::new();
    let mut raws = Vec::new();
    let mut shares = Vec::new();
    let mut costs = Vec::new();
    let (mut raws_hyper, mut shares_hyper) = (Vec::new(), Vec::new());
    // hookd's sender, the bare hyper client: each alone, µs per request.
    let mut alone_us = [Vec::new(), Vec::new()];
    let mut cpu_us = [Vec::new(), Vec::new(), Vec::new()];
    // Per floor store (update, append), per run: its share of the hyper
    // limit, hookd's work per delivery over its, its CPU per delivery,
    // and its share of the hyper limit by CPU.
    let mut floors = [Vec::new(), Vec::new()];
    // The embedded drains: rate, all written, peak RSS, work per
    // delivery over the receiver's, share of the raw limit; and each
    // run's embedded ÷ server (rate, and work per delivery).
    let mut drains = Vec::new();
    let (mut drain_ratios, mut work_ratios) = (Vec::new(), Vec::new());
    // Embedded hookd's CPU per delivery ÷ the server mode's three
    // processes' (hookd, PostgreSQL, Redis), and hookd's sender alone ÷
    // a bare hyper client, CPU per request: per run.
    let (mut cpu_ratios, mut sender_ratios) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let mut server_run = None;
        reset(pool).await;
        settle(pool).await;
        // The bench process's CPU per request in each raw run: client
        // and receiver together (the receiver alone is measured during
        // the delivery run).
        let bench_us = |before: f64| (cpu_seconds(Whose::Bench) - before) / 50_000.0 * 1e6;
        let before = cpu_seconds(Whose::Bench);
        let overflows = listen_overflows();
        let raw = raw_run(client, received, receiver_url, 50_000).await;
        let reqwest_us = bench_us(before);
        let before = cpu_seconds(Whose::Bench);
        received.reset();
        let raw_hyper = raw_hyper::raw_hyper(receiver_url, 50_000, SENDER_IN_FLIGHT).await;
        let hyper_us = bench_us(before);
        println!(
            "   run {}: raw runs, client + receiver CPU per request: reqwest {reqwest_us:.1} µs, hyper {hyper_us:.1} µs",
            run + 1
        );
        raws.push(raw);
        raws_hyper.push(raw_hyper);
        if mode.server {
            let before = cpu_seconds(Whose::Bench);
            let alone = [
                client_cost::measure("sender", receiver_url, 50_000).await,
                client_cost::measure("hyper", receiver_url, 50_000).await,
            ];
            // The receiver answered both runs: 100,000 requests.
            let receiver_us = bench_us(before) / 2.0;
            println!(
            "   run {}: clients alone (a process of their own), CPU per request: hookd's sender {:.1} µs at {:.0}/s, hyper {:.1} µs at {:.0}/s (the receiver {receiver_us:.1} µs per request meanwhile)",
            run + 1,
            alone[0].cpu_us,
            alone[0].rate,
            alone[1].cpu_us,
            alone[1].rate,
        );
            alone_us[0].push(alone[0].cpu_us);
            alone_us[1].push(alone[1].cpu_us);
            sender_ratios.push(alone[0].cpu_us / alone[1].cpu_us);
            let figures = delivery_run(
                pool,
                database_url,
                redis_url,
                &format!("bench-deliver-{run}"),
                received,
                receiver_url,
                50_000,
            )
            .await;
            let (rate, all_written, peak) = (figures.rate, figures.all_written, figures.rss);
            costs.push(figures.relative_cost);
            for (all, one) in cpu_us.iter_mut().zip(figures.cpu_us) {
                all.push(one);
            }
            println!(
            "   run {}: delivery {rate:.0}/s, raw {raw:.0}/s (reqwest) and {raw_hyper:.0}/s (hyper) just before: {:.0}% and {:.2}; CPU per delivery: hookd {:.1} µs, postgres {:.1} µs, redis {:.1} µs",
            run + 1,
            100.0 * rate / raw,
            rate / raw_hyper,
            figures.cpu_us[0],
            figures.cpu_us[1],
            figures.cpu_us[2],
        );
            // 7b: the floor, from an identical backlog, in the same run.
            for (mode, floors) in ["update", "append"].into_iter().zip(floors.iter_mut()) {
                reset(pool).await;
                let floor = floor::run(
                    mode,
                    pool,
                    database_url,
                    redis_url,
                    &format!("bench-floor-{mode}-{run}"),
                    received,
                    receiver_url,
                    50_000,
                )
                .await;
                let [own, postgres, redis, receiver] = floor.cpu_us;
                // hookd's work per delivery over the floor's, each in units
                // of its own run's receiver (figure 7's work ratio): the
                // machine drifts between the two drains.
                let work = figures.relative_cost / ((own + postgres + redis) / receiver);
                println!(
                "   run {}: floor ({mode}) {:.0}/s, {:.2} of the hyper limit ({:.0}/s just before), {:.2} by CPU; CPU per delivery: floor dispatcher {own:.1} µs, postgres {postgres:.1} µs, redis {redis:.1} µs, receiver {receiver:.1} µs; hookd's work {work:.2}x the floor's",
                run + 1,
                floor.rate,
                floor.rate / floor.hyper,
                floor.hyper,
                floor.cpu_share,
            );
                floors.push((
                    floor.rate / floor.hyper,
                    work,
                    floor.cpu_us,
                    floor.cpu_share,
                ));
            }
            shares_hyper.push(rate / raw_hyper);
            rates.push(rate);
            written.push(all_written);
            rss.push(peak);
            shares.push(100.0 * rate / raw);
            server_run = Some((
                rate,
                figures.relative_cost,
                figures.cpu_us.iter().sum::<f64>(),
            ));
        }
        if mode.embedded {
            let drain = embedded::drain_run(received, receiver_url, 50_000).await;
            println!(
                "   run {}: delivery (embedded) {:.0}/s, {:.0}% of the raw limit just before ({raw:.0}/s), all recorded after {:.2} s; hookd CPU per delivery {:.1} µs, {:.2}x the receiver's; peak RSS {:.1} MiB",
                run + 1,
                drain.rate,
                100.0 * drain.rate / raw,
                drain.all_written,
                drain.hookd_us,
                drain.relative_cost,
                drain.rss,
            );
            if let Some((rate, cost, server_us)) = server_run {
                drain_ratios.push(drain.rate / rate);
                work_ratios.push(drain.relative_cost / cost);
                cpu_ratios.push(drain.hookd_us / server_us);
                println!(
                    "   run {}: drain embedded ÷ server {:.2}; work per delivery embedded ÷ server {:.2}",
                    run + 1,
                    drain.rate / rate,
                    drain.relative_cost / cost
                );
            }
            drains.push((
                drain.rate,
                drain.all_written,
                drain.rss,
                drain.relative_cost,
                100.0 * drain.rate / raw,
            ));
        }
        let overflowed = listen_overflows() - overflows;
        if overflowed > 0 {
            println!(
                "   run {}: WARNING: {overflowed} connections overflowed an accept queue during the raw runs and the drains; their handshakes were retried a second later, so this run's rates are not comparable",
                run + 1
            );
        }
    }
    if !mode.server {
        println!(
            "7. raw limit, receiver hit directly at {SENDER_IN_FLIGHT} concurrent: {:.0} requests/s (reqwest), {:.0} requests/s (minimal hyper client)",
            median(raws.clone()),
            median(raws_hyper.clone())
        );
    }
    if mode.embedded {
        let part = |i: usize| {
            median(
                drains
                    .iter()
                    .map(|d: &(f64, f64, f64, f64, f64)| [d.0, d.1, d.2, d.3, d.4][i])
                    .collect(),
            )
        };
        println!(
            "3. delivery (embedded), 50,000 due now: {:.0} deliveries/s first to last receipt ({:.0}% of the raw limit, median of the per-run ratios); every attempt recorded after {:.2} s; hookd CPU per delivery {:.2}x the receiver's; peak RSS {:.1} MiB",
            part(0),
            part(4),
            part(1),
            part(3),
            part(2)
        );
    }
    stands.add(
        "embedded ÷ server drain of 50,000 (same binary, same receiver)",
        drain_ratios.clone(),
        stands::Unit::Ratio,
        "≥ 1.0",
    );
    stands.add(
        "embedded CPU per delivery ÷ server's three processes (hookd + PostgreSQL + Redis)",
        cpu_ratios,
        stands::Unit::Ratio,
        "≤ 0.8",
    );
    stands.add(
        "server drain ÷ a bare hyper client into the same receiver",
        shares_hyper.clone(),
        stands::Unit::Ratio,
        "≥ 0.45",
    );
    stands.add(
        "hookd's sender alone ÷ a bare hyper client, CPU per request",
        sender_ratios,
        stands::Unit::Times,
        "≤ 2×",
    );
    if !drain_ratios.is_empty() {
        let ratio = median(drain_ratios);
        println!(
            "   embedded ÷ server, drain: {ratio:.2}; work per delivery: {:.2} (medians of the per-run ratios; target ≥ 0.8 for the drain)",
            median(work_ratios)
        );
        summary.push(("3. drain, 50,000 due now", ratio, "≥ 0.8"));
    }
    if mode.server {
        println!(
        "3. delivery, 50,000 due now: {:.0} deliveries/s first to last receipt; every attempt recorded after {:.2} s",
        median(rates),
        median(written)
    );
        println!(
        "7. raw limit, receiver hit directly at {SENDER_IN_FLIGHT} concurrent: {:.0} requests/s; delivery is {:.0}% of it (median of the per-run ratios)",
        median(raws),
        median(shares)
    );
        println!(
            "   hookd + PostgreSQL + Redis CPU per delivery: {:.2}x the receiver's CPU per request",
            median(costs)
        );
        println!(
        "   raw limit with a minimal hyper client: {:.0} requests/s; delivery is {:.2} of it (median of the per-run ratios)",
        median(raws_hyper),
        median(shares_hyper)
    );
        let [sender_us, hyper_us] = alone_us;
        println!(
        "   clients alone, CPU per request (medians): hookd's sender {:.1} µs (the floor under hookd's CPU per delivery), bare hyper {:.1} µs",
        median(sender_us),
        median(hyper_us)
    );
        for (mode, runs) in ["update", "append"].into_iter().zip(floors) {
            let share = median(runs.iter().map(|r| r.0).collect());
            let work = median(runs.iter().map(|r| r.1).collect());
            let cpu_share = median(runs.iter().map(|r| r.3).collect());
            let part = |i: usize| median(runs.iter().map(|r| r.2[i]).collect());
            println!(
            "7b. floor ({mode}): {share:.2} of the hyper limit ({cpu_share:.2} by CPU); hookd + PostgreSQL + Redis CPU per delivery {work:.2}x the floor's; CPU per delivery: floor dispatcher {:.1} µs, postgres {:.1} µs, redis {:.1} µs, receiver {:.1} µs (medians)",
            part(0),
            part(1),
            part(2),
            part(3)
        );
        }
        let [hookd_us, postgres_us, redis_us] = cpu_us;
        println!(
            "   CPU per delivery (medians): hookd {:.1} µs, postgres {:.1} µs, redis {:.1} µs",
            median(hookd_us),
            median(postgres_us),
            median(redis_us)
        );
    }
}
