//! The overview: the window's totals, five charts and the endpoint that
//! fails, from the per-minute counts hookd keeps (GET /v1/stats).

use std::time::Duration;

use serde_json::json;

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::{eventually, TOKEN};
use crate::receiver::{Receiver, Reply};

/// An hour of made-up history before the last two minutes, for the
/// README's picture only (PostgreSQL's SQL; `$1` is shop's id, `$2` erp's):
/// the assertions are on real traffic. Written per endpoint and summed
/// from those rows as hookd sums them, so the picture's totals, charts and
/// failing endpoints agree.
const HISTORY: [&str; 4] = [
    "INSERT INTO minute_stats (endpoint_id, minute, attempts, failed_attempts, delivered, failed,
         lateness_max_ms, late_9, late_10, late_11, late_13)
     SELECT e.id, date_trunc('minute', now()) - make_interval(mins => m),
         e.attempts, e.failed_attempts, e.attempts - e.failed_attempts, e.failed, 180,
         e.attempts / 2, e.attempts / 3, e.attempts - e.attempts / 2 - e.attempts / 3 - 1, 1
     FROM generate_series(2, 59) AS m
     CROSS JOIN LATERAL (VALUES
         ($1::uuid, (900 + 300 * sin(m / 6.0) + (m * 37 % 90))::int, (m * 13 % 17)::int, 0),
         ($2::uuid, 40 + CASE WHEN m BETWEEN 20 AND 26 THEN 160 ELSE 0 END,
             5 + CASE WHEN m BETWEEN 20 AND 26 THEN 160 ELSE 0 END,
             CASE WHEN m BETWEEN 20 AND 26 THEN 40 ELSE 0 END)
     ) AS e(id, attempts, failed_attempts, failed)
     ON CONFLICT DO NOTHING",
    "INSERT INTO minute_totals (minute, shard, attempts, failed_attempts, delivered, failed,
         lateness_max_ms, late_9, late_10, late_11, late_13)
     SELECT minute, 0, sum(attempts), sum(failed_attempts), sum(delivered), sum(failed),
         max(lateness_max_ms), sum(late_9), sum(late_10), sum(late_11), sum(late_13)
     FROM minute_stats WHERE minute <= date_trunc('minute', now()) - interval '2 minutes'
     GROUP BY minute
     ON CONFLICT DO NOTHING",
    "INSERT INTO hour_failing (hour, endpoint_id, failed_attempts)
     SELECT date_trunc('hour', minute), endpoint_id, sum(failed_attempts)
     FROM minute_stats
     WHERE minute <= date_trunc('minute', now()) - interval '2 minutes' AND failed_attempts > 0
     GROUP BY 1, 2
     ON CONFLICT (hour, endpoint_id)
     DO UPDATE SET failed_attempts = hour_failing.failed_attempts + EXCLUDED.failed_attempts",
    "INSERT INTO minute_backlog (minute, pending)
     SELECT date_trunc('minute', now()) - make_interval(mins => m),
         (400 + 200 * cos(m / 8.0) + CASE WHEN m BETWEEN 18 AND 27 THEN 900 ELSE 0 END)::bigint
     FROM generate_series(2, 59) AS m
     ON CONFLICT DO NOTHING",
];

async fn the_overview_charts_the_traffic_and_names_the_failing_endpoint(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/erp", vec![Reply::body(500, "database locked")]);
    let shop = app
        .endpoint(json!({"uid": "shop", "url": receiver.url("/shop")}))
        .await;
    let erp = app
        .endpoint(json!({"uid": "erp", "owner": "merchant-9", "url": receiver.url("/erp"), "schedule": ["0s"]}))
        .await;
    for n in 0..6 {
        app.notify(json!({"endpoint": shop["id"], "key": format!("order-{n}:paid"), "payload": {"order": n}}))
            .await;
    }
    for n in 0..3 {
        app.notify(json!({"endpoint": erp["id"], "key": format!("order-{n}:paid"), "payload": {"order": n}}))
            .await;
    }
    eventually(
        Duration::from_secs(20),
        "the stats to count all nine",
        || async {
            let (_, stats) = app.get("/v1/stats?window=1h").await;
            let totals = &stats["totals"];
            (totals["delivered"] == 6 && totals["failed"] == 3).then_some(())
        },
    )
    .await;

    let Some(browser) = Browser::open(&app, &backend, "overview").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.find("overview").await;
    browser
        .wait_text("total-delivered", "6 delivered", |t| t == "6")
        .await;
    assert_eq!(browser.text("total-failed").await, "3");
    // Named by uid and owner (its id only in the link's title).
    browser
        .wait_text("failing-endpoint", "the failing endpoint named", |t| {
            t.contains("erp") && t.contains("merchant-9")
        })
        .await;
    let failing = browser.text("failing-endpoints").await;
    assert_eq!(browser.all("failing-endpoint").await.len(), 1, "{failing}");
    assert!(!failing.contains(erp["id"].as_str().unwrap()), "{failing}");
    let charts = browser
        .run("return document.querySelectorAll('[data-test^=chart-] .uplot canvas').length")
        .await;
    assert_eq!(charts, 5, "five charts drawn");
    assert!(browser.all("chart-deliveries-empty").await.is_empty());
    assert!(browser.all("chart-failures-empty").await.is_empty());
    // The time axis in UTC and 24-hour time, as the page says, with the
    // date where it crosses midnight; the lateness axis unclipped.
    let ticks = browser
        .run(
            "return import('./assets/overview.js').then((m) => [\
               m.utcTicks([1764504000, 1764507600]), m.utcTicks([1764543600, 1764547200]),\
               m.valueTicks([0, 500, 1500, 25000], 'ms'), m.valueTicks([0, 50, 100], '%'),\
               m.utcMoment(1764547200)])",
        )
        .await;
    assert_eq!(
        ticks,
        json!([
            ["12:00", "13:00"],
            ["23:00", "12-01"],
            ["0 ms", "500 ms", "1.5 s", "25 s"],
            ["0%", "50%", "100%"],
            "2025-12-01 00:00 UTC"
        ])
    );
    // The legend under the cursor reads the same way (it was the
    // browser's local 12-hour time).
    let legend = browser
        .run(
            "const over = document.querySelector('[data-test=chart-deliveries] .u-over');\
             const box = over.getBoundingClientRect();\
             over.dispatchEvent(new MouseEvent('mousemove', { clientX: box.left + box.width / 2, clientY: box.top + box.height / 2, bubbles: true }));\
             return document.querySelector('[data-test=chart-deliveries] .u-legend .u-series .u-value').textContent",
        )
        .await;
    let legend = legend.as_str().unwrap_or_default().to_string();
    assert!(
        legend.ends_with(" UTC") && legend.len() == "2025-12-01 00:00 UTC".len(),
        "{legend}"
    );
    browser.screenshot("overview-1h").await;

    browser.click("window-24h").await;
    browser
        .wait_text("overview", "the day's window chosen", |_| true)
        .await;
    let pressed = browser
        .run("return document.querySelector('[data-test=window-24h]').getAttribute('aria-pressed')")
        .await;
    assert_eq!(pressed, "true");
    browser
        .wait_text("total-delivered", "the day's 6", |t| t == "6")
        .await;
    browser.screenshot("overview-24h").await;

    if !backend.is_embedded() {
        let ids = [shop["id"].as_str().unwrap(), erp["id"].as_str().unwrap()];
        backend.execute(HISTORY[0], &ids).await;
        for sql in &HISTORY[1..] {
            backend.execute(sql, &[]).await;
        }
        browser.click("window-1h").await;
        browser
            .wait_text("total-attempts", "the history counted", |t| {
                t.parse::<u64>().is_ok_and(|n| n > 1000)
            })
            .await;
        browser.screenshot("overview-history").await;
    }
    browser.close().await;
}

async fn an_overview_with_nothing_sent_says_so_on_each_chart(backend: Backend) {
    let app = backend.spawn().await;
    let Some(browser) = Browser::open(&app, &backend, "overview-empty").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.find("overview").await;
    for chart in ["deliveries", "success", "failures", "lateness", "pending"] {
        let said = browser.text(&format!("chart-{chart}-empty")).await;
        assert!(said.contains("in this window"), "{chart}: {said}");
    }
    browser.screenshot("overview-empty").await;
    browser.close().await;
}

both!(
    the_overview_charts_the_traffic_and_names_the_failing_endpoint,
    an_overview_with_nothing_sent_says_so_on_each_chart,
);
