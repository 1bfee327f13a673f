//! One due index per database (`domain::index_owner`), with real `hookd
//! serve` processes configured through HOOKD_* as the README shows: a
//! process started on the same PostgreSQL with another `redis.prefix`
//! (another index) pauses and says why, and nothing goes out twice; a
//! Redis that lost the index's name names it anew without pausing anyone.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use chrono::Utc;
use hookd::domain::index_owner::AnotherIndex;
use hookd::due::redis::RedisIndex;
use hookd::due::Recovery;

use crate::helpers::{
    database_url, eventually, free_port, http_client, metric, new_prefix, redis_url,
    scrape_metrics, test_pool, test_settings, HookdProcess,
};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(60);

/// A process (all roles) on `db` with Redis prefix `prefix`, ready or not:
/// its base URL and its log.
fn start(db: &str, prefix: &str, tag: &str) -> (HookdProcess, String, std::path::PathBuf) {
    start_as("all", db, prefix, tag)
}

/// `start` in `role`.
fn start_as(
    role: &str,
    db: &str,
    prefix: &str,
    tag: &str,
) -> (HookdProcess, String, std::path::PathBuf) {
    let listen = format!("127.0.0.1:{}", free_port());
    let log = std::env::temp_dir().join(format!("hookd-{tag}-{}.log", new_prefix()));
    let process = HookdProcess::start_logged_as(role, db, &redis_url(), prefix, &[], &listen, &log);
    (process, format!("http://{listen}"), log)
}

async fn readyz(client: &reqwest::Client, base: &str) -> Option<(StatusCode, Value)> {
    let response = client.get(format!("{base}/readyz")).send().await.ok()?;
    let status = response.status();
    Some((status, response.json().await.ok()?))
}

/// Before the guard, the second process rebuilt its empty index from
/// PostgreSQL and claimed every pending row, while the first's sweep
/// re-added what the second had leased: each slow delivery went out from
/// both (a black-box pass saw it).
#[sqlx::test]
async fn a_process_on_another_redis_prefix_pauses_and_nothing_goes_out_twice(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = test_pool(connect).await;
    let db = database_url(&pool);
    let receiver = Receiver::start().await;
    // Slower than the sweep's 3 s: a lease of the one index is overdue
    // and missing in the other while its delivery runs.
    receiver.reply("/slow", vec![Reply::Slow(Duration::from_secs(4))]);
    let client = http_client();
    let (mut first_process, first, first_log) = start(&db, &new_prefix(), "owner");
    HookdProcess::wait_ready(&first, DEADLINE).await;
    let (_second, second, second_log) = start(&db, &new_prefix(), "another-prefix");

    let health = eventually(
        DEADLINE,
        "the second process to say why it pauses",
        || async {
            let (_, health) = readyz(&client, &second).await?;
            let warnings = health["warnings"].to_string();
            warnings
                .contains("another due index serves this database")
                .then_some(health)
        },
    )
    .await;
    assert_eq!(health["redis"], "paused", "{health}");
    assert!(
        health["warnings"].to_string().contains("redis.prefix"),
        "the way out is named: {health}"
    );
    let paused = |base: String| {
        let client = client.clone();
        async move { metric(&scrape_metrics(&client, &base).await, "hookd_index_paused ") }
    };
    assert_eq!(paused(second.clone()).await, 1.0);
    assert_eq!(paused(first.clone()).await, 0.0);
    let (status, health) = readyz(&client, &first).await.unwrap();
    assert_eq!(
        (status, &health["status"]),
        (StatusCode::OK, &json!("ready"))
    );

    // Producers may reach either process: half through each.
    let created = client
        .post(format!("{first}/v1/endpoints"))
        .json(&json!({"uid": "shop", "url": receiver.url("/slow")}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let mut ids = Vec::new();
    for n in 0..10 {
        let base = if n % 2 == 0 { &first } else { &second };
        let response = client
            .post(format!("{base}/v1/notifications"))
            .json(&json!({"endpoint": "shop", "payload": {"n": n}}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: Value = response.json().await.unwrap();
        ids.push(body["id"].as_str().unwrap().to_owned());
    }
    for id in &ids {
        eventually(DEADLINE, "every notification to succeed", || async {
            let body: Value = client
                .get(format!("{first}/v1/notifications/{id}"))
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            (body["status"] == "succeeded").then_some(())
        })
        .await;
    }
    // A duplicate would have started with the first of its pair: it is
    // received by now, at the receiver if not recorded.
    assert_eq!(receiver.distinct("/slow"), (10, 10), "each sent once");
    let attempts: i64 = sqlx::query_scalar("SELECT sum(attempts)::bigint FROM notifications")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(attempts, 10);

    // The first process stops while the second's index is live: its row
    // stays (a restart of the first must not find the database handed to
    // the second), and the second stays paused until it goes unseen.
    let rows = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM due_indexes")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    assert_eq!(rows().await, 2, "a row per process");
    first_process.signal("TERM");
    assert_eq!(first_process.wait(DEADLINE).await, Some(0));
    assert_eq!(rows().await, 2);
    assert_eq!(paused(second.clone()).await, 1.0);
    std::fs::remove_file(first_log).ok();
    std::fs::remove_file(second_log).ok();
}

/// A Redis that restarted empty, or failed over to a replica without the
/// index's keys, names the index anew. The processes on it saw the old
/// name and retire it, so none waits behind it.
#[sqlx::test]
async fn an_index_named_anew_after_redis_lost_its_keys_keeps_the_database_without_a_pause(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = test_pool(connect).await;
    let db = database_url(&pool);
    let prefix = new_prefix();
    let receiver = Receiver::start().await;
    let client = http_client();
    let (_hookd, base, log) = start(&db, &prefix, "renamed");
    HookdProcess::wait_ready(&base, DEADLINE).await;
    let names = || async {
        sqlx::query_scalar::<_, String>("SELECT identity FROM due_indexes ORDER BY identity")
            .fetch_all(&pool)
            .await
            .unwrap()
    };
    let old = eventually(DEADLINE, "the index's first beat", || async {
        let names = names().await;
        (names.len() == 1).then(|| names[0].clone())
    })
    .await;

    let mut redis = redis::Client::open(redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let key = format!("{prefix}:{{{prefix}}}:identity");
    let named: String = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(named, old);
    let () = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut redis)
        .await
        .unwrap();

    let new = eventually(DEADLINE, "the new name alone in the database", || async {
        let names = names().await;
        (names.len() == 1 && names[0] != old).then(|| names[0].clone())
    })
    .await;
    let named: String = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(named, new);
    assert_eq!(
        metric(&scrape_metrics(&client, &base).await, "hookd_index_paused "),
        0.0
    );
    // Deliveries go on.
    let created = client
        .post(format!("{base}/v1/endpoints"))
        .json(&json!({"uid": "shop", "url": receiver.url("/hook")}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let response = client
        .post(format!("{base}/v1/notifications"))
        .json(&json!({"endpoint": "shop", "payload": {"n": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    receiver.wait_distinct("/hook", 1, DEADLINE).await;
    std::fs::remove_file(log).ok();
}

/// The index's side of the beats, in one process: once beats start, every
/// command is refused until one gets through; refused while another index
/// owns the database, with the way out in the error; and an index that
/// serves again after a pause counts a new epoch, so housekeeping re-adds
/// what was written meanwhile (as after a failover).
#[tokio::test]
async fn an_index_refuses_its_commands_until_a_beat_gets_through_and_while_another_owns_the_database(
) {
    let index = RedisIndex::new(&test_settings(&redis_url(), "").redis).unwrap();
    index.depth().await.expect("no beats yet: nothing refused");
    let named = Recovery::identity(&index).await.unwrap();
    assert_eq!(Recovery::identity(&index).await.unwrap(), named, "one name");

    index.beats_start();
    assert!(index.paused());
    let refused = index.depth().await.unwrap_err().to_string();
    assert!(refused.contains("has not told the database"), "{refused}");
    assert_eq!(
        Recovery::identity(&index).await.unwrap(),
        named,
        "read while refused"
    );

    index.set_owner(None, Instant::now());
    index
        .depth()
        .await
        .expect("a beat got through: this index serves");
    let epoch = Recovery::epoch(&index);

    let now = Utc::now();
    index.set_owner(
        Some(AnotherIndex {
            since: now,
            seen_at: now,
            live_for: 30,
        }),
        Instant::now(),
    );
    assert!(index.paused());
    let refused = index.depth().await.unwrap_err().to_string();
    assert!(
        refused.contains("another due index serves this database")
            && refused.contains("redis.prefix"),
        "{refused}"
    );
    assert!(index.ping().await.is_err(), "readiness sees it too");
    // Leases already held are still prolonged: a process that cannot
    // record what it sent keeps them from its index's other processes.
    index
        .extend(&[uuid::Uuid::now_v7()], Utc::now())
        .await
        .expect("a lease extension is not refused");
    assert_eq!(Recovery::epoch(&index), epoch);

    index.set_owner(None, Instant::now());
    index.depth().await.expect("it serves again");
    assert_eq!(
        Recovery::epoch(&index),
        epoch + 1,
        "a new epoch: healed as after a failover"
    );
}

/// A fleet moved to another Redis: the old processes stop first, each
/// taking its row with it, so the first process on the new index serves at
/// once rather than 30 s after the old one's last beat.
#[sqlx::test]
async fn a_process_that_stops_cleanly_hands_the_database_to_the_next_index_at_once(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = test_pool(connect).await;
    let db = database_url(&pool);
    let client = http_client();
    let rows = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM due_indexes")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let (mut old, old_base, old_log) = start(&db, &new_prefix(), "old-redis");
    HookdProcess::wait_ready(&old_base, DEADLINE).await;
    assert_eq!(rows().await, 1);
    old.signal("TERM");
    assert_eq!(old.wait(DEADLINE).await, Some(0));
    assert_eq!(rows().await, 0, "the stopped process's row went with it");

    let (_new, new_base, new_log) = start(&db, &new_prefix(), "new-redis");
    HookdProcess::wait_ready(&new_base, DEADLINE).await;
    let (status, health) = readyz(&client, &new_base).await.unwrap();
    assert_eq!(
        (status, &health["status"], &health["redis"]),
        (StatusCode::OK, &json!("ready"), &json!("ok")),
        "{health}"
    );
    assert_eq!(
        metric(
            &scrape_metrics(&client, &new_base).await,
            "hookd_index_paused "
        ),
        0.0
    );
    std::fs::remove_file(old_log).ok();
    std::fs::remove_file(new_log).ok();
}

/// An API process (`--role api`) on another prefix beside the
/// dispatchers: it pauses its hand-offs while they serve (its creates are
/// delivered by them), and it writes no row, so it never keeps the
/// database from them: a black-box pass saw a dispatcher restarted beside
/// such a process find the database handed to an index nobody claims from,
/// and nothing delivered.
#[sqlx::test]
async fn an_api_process_on_another_prefix_never_keeps_the_database_from_the_dispatchers(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = test_pool(connect).await;
    let db = database_url(&pool);
    let client = http_client();
    let receiver = Receiver::start().await;
    let rows = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM due_indexes")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let paused = |base: String| {
        let client = client.clone();
        async move { metric(&scrape_metrics(&client, &base).await, "hookd_index_paused ") }
    };
    let prefix = new_prefix();
    let (mut serving, serving_base, serving_log) = start(&db, &prefix, "dispatching");
    HookdProcess::wait_ready(&serving_base, DEADLINE).await;
    let (_api, api, api_log) = start_as("api", &db, &new_prefix(), "stray-api");
    HookdProcess::wait_ready(&api, DEADLINE).await;
    eventually(DEADLINE, "the API process to pause", || async {
        (paused(api.clone()).await == 1.0).then_some(())
    })
    .await;
    assert_eq!(rows().await, 1, "the API process writes no row");

    let created = client
        .post(format!("{api}/v1/endpoints"))
        .json(&json!({"uid": "shop", "url": receiver.url("/hook")}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let create = |n: i64| {
        let (client, api) = (client.clone(), api.clone());
        async move {
            let response = client
                .post(format!("{api}/v1/notifications"))
                .json(&json!({"endpoint": "shop", "payload": {"n": n}}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::CREATED);
        }
    };
    for n in 0..3 {
        create(n).await;
    }
    receiver.wait_distinct("/hook", 3, DEADLINE).await;

    // The dispatcher restarts: no other index is live, so its row goes,
    // and the one started after it serves.
    serving.signal("TERM");
    assert_eq!(serving.wait(DEADLINE).await, Some(0));
    assert_eq!(rows().await, 0);
    let (_again, again, again_log) = start(&db, &prefix, "dispatching-again");
    HookdProcess::wait_ready(&again, DEADLINE).await;
    assert_eq!(paused(again.clone()).await, 0.0);
    eventually(DEADLINE, "the API process to pause again", || async {
        (paused(api.clone()).await == 1.0).then_some(())
    })
    .await;
    for n in 3..6 {
        create(n).await;
    }
    receiver.wait_distinct("/hook", 6, DEADLINE).await;
    assert_eq!(receiver.distinct("/hook"), (6, 6));
    for log in [serving_log, api_log, again_log] {
        std::fs::remove_file(log).ok();
    }
}
