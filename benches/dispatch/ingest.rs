//! Figures 1 and 2: single POSTs from 64 clients, and batches of 1,000; with
//! BENCH_MODE=both each run takes both modes' figures, which goes first
//! alternating.

use super::*;

pub(crate) async fn run(setup: &Setup<'_>, summary: &mut Summary, stands: &mut stands::Stands) {
    let Setup {
        pool,
        database_url,
        redis_url,
        receiver_url,
        client,
        runs,
        mode,
        ..
    } = *setup;
    let (mut rates, mut embedded_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        // Alternated, which mode goes first: the machine's speed drifts
        // within a run too, and would otherwise favour one mode.
        let (mut server_rate, mut embedded_rate) = (None, None);
        for server_turn in [run % 2 == 0, run % 2 == 1] {
            if server_turn && mode.server {
                reset(pool).await;
                let api = Hookd::start(
                    database_url,
                    redis_url,
                    &format!("bench-ingest-{run}"),
                    "api",
                )
                .await;
                let endpoint = create_endpoint(client, &api, receiver_url).await;
                let rate = single_posts(client, &api.base, &endpoint, 20_000).await;
                api.stop();
                println!("   run {}: single POSTs, server {rate:.0}/s", run + 1);
                rates.push(rate);
                server_rate = Some(rate);
            }
            if !server_turn && mode.embedded {
                let rate = embedded::ingest_run(client, receiver_url, 20_000).await;
                println!("   run {}: single POSTs, embedded {rate:.0}/s", run + 1);
                embedded_rates.push(rate);
                embedded_rate = Some(rate);
            }
        }
        if let (Some(server), Some(embedded)) = (server_rate, embedded_rate) {
            ratios.push(embedded / server);
            println!(
                "   run {}: single POSTs, embedded ÷ server {:.2}",
                run + 1,
                embedded / server
            );
        }
    }
    if mode.server {
        println!(
            "1. ingest, single POSTs, 64 clients, 20,000: {:.0} accepted/s (durable)",
            median(rates)
        );
    }
    if mode.embedded {
        println!(
            "1. ingest (embedded), single POSTs, 64 clients, 20,000: {:.0} accepted/s (durable)",
            median(embedded_rates)
        );
    }
    if !ratios.is_empty() {
        let ratio = median(ratios);
        println!("   embedded ÷ server, single POSTs: {ratio:.2} (median of the per-run ratios; target ≥ 0.8)");
        summary.push(("1. single-POST ingest", ratio, "≥ 0.8"));
    }

    // 2. Batch ingest: 1,000 per request; with BENCH_MODE=both each run
    // takes both modes' figures, which goes first alternating as above.
    let (mut rates, mut embedded_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let (mut server_rate, mut embedded_rate) = (None, None);
        for server_turn in [run % 2 == 0, run % 2 == 1] {
            if server_turn && mode.server {
                let rate =
                    batch_ingest_run(pool, database_url, redis_url, run, client, receiver_url)
                        .await;
                rates.push(rate);
                server_rate = Some(rate);
            }
            if !server_turn && mode.embedded {
                let rate = embedded::batch_ingest_run(client, receiver_url, 50_000).await;
                embedded_rates.push(rate);
                embedded_rate = Some(rate);
            }
        }
        if let (Some(server), Some(embedded)) = (server_rate, embedded_rate) {
            println!(
                "   run {}: batch ingest {server:.0}/s server, {embedded:.0}/s embedded: embedded ÷ server {:.2}",
                run + 1,
                embedded / server
            );
            ratios.push(embedded / server);
        }
    }
    if mode.server {
        println!(
            "2. batch ingest, 1,000 per request, 50,000: {:.0} notifications/s",
            median(rates)
        );
    }
    if mode.embedded {
        println!(
            "2. batch ingest (embedded), 1,000 per request, 50,000: {:.0} notifications/s",
            median(embedded_rates)
        );
    }
    if !ratios.is_empty() {
        let ratio = median(ratios.clone());
        println!("   embedded ÷ server, batch ingest: {ratio:.2} (median of the per-run ratios)");
        summary.push(("2. batch ingest", ratio, "≥ 1.0"));
        stands.add(
            "embedded ÷ server batch ingest (1,000 per request, 50,000)",
            ratios,
            stands::Unit::Ratio,
            "≥ 1.0",
        );
    }
}
