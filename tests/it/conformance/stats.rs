//! The per-minute counts behind `GET /v1/stats` (`seams::StatsStore`):
//! what moved is counted once, per minute, endpoint and owner; the
//! endpoints failing most, most first, up to a limit; the backlog sampled
//! once a minute; old minutes deleted in batches; and rows the circuit
//! breaker ended without an attempt (`BreakerStore::fail_held`) counted
//! failed with their operator events written once.

use chrono::{Duration, Utc};
use hookd::domain::minute_stats::{minute_of, sum, Counted, Counts};
use hookd::domain::operator_event::{FailedNotification, OperatorEvent};
use hookd::domain::outcome::Outcome;
use hookd::domain::retention::minutes_before;
use hookd::domain::status::Status;
use hookd::store::endpoints::Endpoint;
use hookd::store::recording::AttemptRecord;
use hookd::store::seams::StatsStore;
use hookd::store::stats::StatsScope;

use super::fixtures::{
    attempt, create, endpoint, get, operator_event_keys, operator_on, pending, record, retry_in,
};
use super::Backend;

pub async fn the_store_counts_what_moved_once_samples_the_backlog_once_and_forgets_old_minutes<
    S: Backend,
>(
    store: S,
) {
    let store = &store;
    let owned = hookd::store::endpoints::Endpoint {
        owner: Some("shop-owner".into()),
        ..endpoint()
    };
    let shop = create(store, owned).await;
    let (a, b) = (pending(store, &shop).await, pending(store, &shop).await);
    let now = Utc::now();
    let days_ago = now - chrono::Duration::days(3);
    let mut delivered = attempt(a, shop.id, 1, Outcome::Succeeded);
    delivered.due_at = Some(delivered.started_at - chrono::Duration::milliseconds(250));
    let old = AttemptRecord {
        started_at: days_ago,
        ..attempt(b, shop.id, 1, retry_in(60))
    };
    assert_eq!(record(store, &[delivered.clone(), old]).await.len(), 2);
    // Recorded again (a process whose lease ran out): nothing moves, and
    // nothing is counted twice.
    assert!(record(store, &[delivered]).await.is_empty());

    let since = now - chrono::Duration::days(4);
    let all = StatsScope::default();
    let shop_only = StatsScope {
        endpoint: Some(shop.id),
        owner: None,
    };
    let owner_only = StatsScope {
        endpoint: None,
        owner: Some("shop-owner".into()),
    };
    for scope in [&all, &shop_only, &owner_only] {
        let mut rows = StatsStore::minute_counts(store, scope, since)
            .await
            .unwrap();
        rows.sort_by_key(|(minute, _)| *minute);
        assert_eq!(rows.len(), 2, "{scope:?}");
        let (minute, old) = &rows[0];
        assert_eq!(*minute, minute_of(days_ago));
        assert_eq!(
            (old.attempts, old.failed_attempts, old.delivered),
            (1, 1, 0)
        );
        let (_, fresh) = &rows[1];
        assert_eq!(
            (fresh.attempts, fresh.failed_attempts, fresh.delivered),
            (1, 0, 1)
        );
        assert_eq!(fresh.lateness.iter().sum::<i64>(), 1);
        assert_eq!(fresh.lateness_max_ms, 250);
    }
    let failing = StatsStore::most_failing(store, &all, since, 10)
        .await
        .unwrap();
    assert_eq!(failing.len(), 1);
    assert_eq!(
        (
            failing[0].endpoint_id,
            failing[0].failed_attempts,
            failing[0].attempts
        ),
        (shop.id, 1, 2)
    );
    assert_eq!(failing[0].url, shop.url);

    // One sample a minute: the first taken stays.
    StatsStore::sample_pending(store, minute_of(days_ago))
        .await
        .unwrap();
    StatsStore::sample_pending(store, minute_of(now))
        .await
        .unwrap();
    let c = pending(store, &shop).await;
    StatsStore::sample_pending(store, minute_of(now))
        .await
        .unwrap();
    let mut samples = StatsStore::pending_samples(store, since).await.unwrap();
    samples.sort();
    assert_eq!(
        samples,
        [(minute_of(days_ago), 1), (minute_of(now), 1)],
        "{c}"
    );

    // Retention: minutes two days old go, in batches, the rest stay.
    let before = minutes_before(now);
    assert!(StatsStore::purge_minutes(store, before, 1).await.unwrap() >= 1);
    while StatsStore::purge_minutes(store, before, 1).await.unwrap() > 0 {}
    let rows = StatsStore::minute_counts(store, &all, since).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].0, minute_of(now));
    for scope in [&shop_only, &owner_only] {
        let rows = StatsStore::minute_counts(store, scope, since)
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "{scope:?}");
    }
    let samples = StatsStore::pending_samples(store, since).await.unwrap();
    assert_eq!(samples, [(minute_of(now), 1)]);
    assert!(StatsStore::most_failing(store, &all, since, 10)
        .await
        .unwrap()
        .is_empty());
}

/// The counts of every row `scope` has from `since` on, added up.
async fn total<S: Backend>(store: &S, scope: &StatsScope, since: chrono::DateTime<Utc>) -> Counts {
    let mut total = Counts::default();
    for (_, counts) in StatsStore::minute_counts(store, scope, since)
        .await
        .unwrap()
    {
        total.add(&counts);
    }
    total
}

pub async fn the_endpoints_failing_most_come_most_first_up_to_the_limit_and_in_scope<S: Backend>(
    store: S,
) {
    let owned = |owner: &str| Endpoint {
        owner: Some(owner.into()),
        ..endpoint()
    };
    let worst = create(&store, owned("acme")).await;
    let second = create(&store, owned("other")).await;
    let third = create(&store, owned("acme")).await;
    let healthy = create(&store, owned("acme")).await;
    let now = Utc::now();
    let mut batch = Vec::new();
    // Failed attempts: 3, 2 and 1 (each a first attempt of its own row),
    // and successes only.
    for (shop, failures) in [(&worst, 3), (&second, 2), (&third, 1)] {
        for _ in 0..failures {
            batch.push(attempt(
                pending(&store, shop).await,
                shop.id,
                1,
                retry_in(60),
            ));
        }
    }
    let delivered = attempt(
        pending(&store, &worst).await,
        worst.id,
        1,
        Outcome::Succeeded,
    );
    batch.push(delivered);
    batch.push(attempt(
        pending(&store, &healthy).await,
        healthy.id,
        1,
        Outcome::Succeeded,
    ));
    // Earlier than the window asked for: not counted.
    let early = pending(&store, &third).await;
    batch.push(AttemptRecord {
        started_at: now - Duration::hours(3),
        ..attempt(early, third.id, 1, retry_in(60))
    });
    assert_eq!(record(&store, &batch).await.len(), batch.len());

    let since = minute_of(now - Duration::hours(1));
    let all = StatsScope::default();
    let ranked = |failing: Vec<hookd::store::stats::FailingCount>| {
        failing
            .into_iter()
            .map(|f| (f.endpoint_id, f.failed_attempts, f.attempts))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ranked(
            StatsStore::most_failing(&store, &all, since, 10)
                .await
                .unwrap()
        ),
        [(worst.id, 3, 4), (second.id, 2, 2), (third.id, 1, 1)],
        "none without a failed attempt, none before `since`"
    );
    assert_eq!(
        ranked(
            StatsStore::most_failing(&store, &all, since, 2)
                .await
                .unwrap()
        ),
        [(worst.id, 3, 4), (second.id, 2, 2)]
    );
    let acme = StatsScope {
        endpoint: None,
        owner: Some("acme".into()),
    };
    assert_eq!(
        ranked(
            StatsStore::most_failing(&store, &acme, since, 10)
                .await
                .unwrap()
        ),
        [(worst.id, 3, 4), (third.id, 1, 1)]
    );
    let failing = StatsStore::most_failing(&store, &all, since, 1)
        .await
        .unwrap();
    assert_eq!(failing[0].url, worst.url, "named by its URL");

    // The window's sums are what `domain::minute_stats` makes of the batch
    // (the early attempt aside), whichever scope adds them up.
    let expected = |of: &dyn Fn(&AttemptRecord) -> bool| {
        let mut expected = Counts::default();
        let items = batch
            .iter()
            .filter(|r| r.notification_id != early && of(r))
            .map(|r| {
                Counted::attempt(
                    r.endpoint_id,
                    r.started_at,
                    r.outcome == Outcome::Succeeded,
                    r.due_at,
                    r.next.status,
                )
            });
        for (_, counts) in sum(items).totals {
            expected.add(&counts);
        }
        expected
    };
    assert_eq!(total(&store, &all, since).await, expected(&|_| true));
    let acme_ids = [worst.id, third.id, healthy.id];
    assert_eq!(
        total(&store, &acme, since).await,
        expected(&|r| acme_ids.contains(&r.endpoint_id))
    );
    let one = StatsScope {
        endpoint: Some(second.id),
        owner: None,
    };
    assert_eq!(
        total(&store, &one, since).await,
        expected(&|r| r.endpoint_id == second.id)
    );
    // An endpoint asked for with an owner it does not have: nothing.
    let mismatched = StatsScope {
        endpoint: Some(second.id),
        owner: Some("acme".into()),
    };
    assert_eq!(total(&store, &mismatched, since).await, Counts::default());
}

pub async fn rows_the_breaker_ended_count_failed_without_an_attempt_with_their_events_once<
    S: Backend,
>(
    store: S,
) {
    operator_on(&store).await;
    let shop = create(&store, endpoint()).await;
    let (held, moved_on) = (pending(&store, &shop).await, pending(&store, &shop).await);
    let event = |id| {
        OperatorEvent::notification_failed(
            &FailedNotification {
                notification_id: id,
                endpoint_id: shop.id,
                key: None,
                event_type: None,
                attempts: 0,
                last_status_code: None,
                last_error: Some("circuit_open"),
            },
            Utc::now(),
        )
        .unwrap()
    };
    let events = [event(held), event(moved_on)];
    let since = minute_of(Utc::now());
    // `moved_on` was held at another attempt count: it stays, and so does
    // its event.
    let ended = hookd::store::seams::BreakerStore::fail_held(
        &store,
        &[(held, 0, 0), (moved_on, 1, 0)],
        "circuit_open",
        &events,
    )
    .await
    .unwrap();
    assert_eq!(ended, [held]);
    assert_eq!(get(&store, moved_on).await.status, Status::Pending);
    // Ended again (a second process): nothing more.
    assert!(hookd::store::seams::BreakerStore::fail_held(
        &store,
        &[(held, 0, 0)],
        "circuit_open",
        &events
    )
    .await
    .unwrap()
    .is_empty());

    let counted = total(&store, &StatsScope::default(), since).await;
    assert_eq!(
        (
            counted.attempts,
            counted.failed_attempts,
            counted.delivered,
            counted.failed
        ),
        (0, 0, 0, 1)
    );
    let shop_only = StatsScope {
        endpoint: Some(shop.id),
        owner: None,
    };
    assert_eq!(total(&store, &shop_only, since).await.failed, 1);
    assert_eq!(
        operator_event_keys(&store).await,
        [Some(events[0].key.clone())]
    );
}
