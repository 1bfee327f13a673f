//! Figures 5 and 6b and the rebuild: delivery beside 1,000,000
//! notifications pending for later, against the same without them
//! (measured first); the index rebuilt from PostgreSQL, and healed after
//! its due key is deleted.

use super::*;

pub(crate) async fn run(setup: &Setup<'_>) {
    let Setup {
        pool,
        database_url,
        redis_url,
        ..
    } = *setup;
    reset(pool).await;
    let prefix = "bench-scale";
    let (without, cost_without) = drains(setup, prefix).await;
    let endpoint_id: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM endpoints ORDER BY id DESC LIMIT 1")
            .fetch_one(pool)
            .await
            .unwrap();
    sqlx::query(
    "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, deliver_at, next_attempt_at) \
     SELECT hookd_uuid_v7(), $1, 'application/json', '{}'::bytea, '{0,60000}', now(), \
            now() + interval '30 days' + g * interval '1 millisecond' \
     FROM generate_series(1, 1000000) g",
)
.bind(endpoint_id)
.execute(pool)
.await
.unwrap();
    // Steady state with a backlog, not the aftermath of a bulk load: the
    // checkpoint that the load's WAL asks for happens here, untimed.
    for statement in ["VACUUM ANALYZE notifications", "CHECKPOINT"] {
        sqlx::query(statement).execute(pool).await.unwrap();
    }
    // Make the dispatcher find the index incomplete, as after a Redis loss.
    let redis = redis::Client::open(redis_url).unwrap();
    let mut conn = redis.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("DEL")
        .arg(format!("{prefix}:{{{prefix}}}:indexed"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let memory_before = redis_used_memory(redis_url).await;
    let started = Instant::now();
    let dispatcher = Hookd::start(database_url, redis_url, prefix, "dispatcher").await;
    loop {
        let indexed: bool = redis::cmd("EXISTS")
            .arg(format!("{prefix}:{{{prefix}}}:indexed"))
            .query_async(&mut conn)
            .await
            .unwrap();
        if indexed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rebuild = started.elapsed();
    let per_pending = (redis_used_memory(redis_url).await - memory_before) as f64 / 1_000_000.0;
    let reindexed = heal::reindex_after_due_deleted(&mut conn, prefix, 1_000_000).await;
    dispatcher.stop();
    println!(
        "rebuild: 1,000,000 pending notifications indexed from PostgreSQL in {:.1} s (from process start)",
        rebuild.as_secs_f64()
    );
    let (with_backlog, cost_with) = drains(setup, prefix).await;
    println!(
        "5. scale, 20,000 due now beside 1,000,000 pending later: {:.0}/s vs {:.0}/s without: ratio {:.2}",
        median(with_backlog.clone()),
        median(without.clone()),
        median(with_backlog) / median(without)
    );
    println!(
        "   work per delivery (hookd + PostgreSQL + Redis CPU over the receiver's): {:.2} with the backlog, {:.2} without: ratio {:.2}",
        median(cost_with.clone()),
        median(cost_without.clone()),
        median(cost_without) / median(cost_with)
    );
    println!("6b. memory: Redis {per_pending:.0} bytes per pending notification");
    println!(
        "heal: 1,000,000 pending, DEL of the due key: all re-indexed {:.1} s after the DEL",
        reindexed.as_secs_f64()
    );
}

/// `setup.runs` drains of 20,000 due now under `prefix`: each one's rate
/// and its work per delivery (`DeliveryFigures::relative_cost`).
async fn drains(setup: &Setup<'_>, prefix: &str) -> (Vec<f64>, Vec<f64>) {
    let (mut rates, mut costs) = (Vec::new(), Vec::new());
    for _ in 0..setup.runs {
        let figures = delivery_run(
            setup.pool,
            setup.database_url,
            setup.redis_url,
            prefix,
            setup.received,
            setup.receiver_url,
            20_000,
        )
        .await;
        rates.push(figures.rate);
        costs.push(figures.relative_cost);
    }
    (rates, costs)
}
