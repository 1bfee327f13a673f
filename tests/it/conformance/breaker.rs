//! The circuit breaker's side of the store (`store::breaker`): circuits
//! written only over the state they were read in, the pending rows a probe
//! or a release reads, and held rows ended only in the attempt count and
//! series they were held at; a release's mark of what it moves, on the
//! rows it may lane; a circuit's operator event committed only with its
//! change, once.

use chrono::{Duration, DurationRound, Utc};
use hookd::domain::breaker::{Circuit, State};
use hookd::domain::lane::Lane;
use hookd::domain::operator_event::{CircuitChange, OperatorEvent};
use hookd::domain::status::Status;
use hookd::store::breaker::PendingOf;
use hookd::store::notifications::NewNotification;

use super::fixtures::{
    attempt, commit_new, create, due_at, endpoint, get, operator_event_keys, operator_on, record,
    retry_in,
};
use super::Backend;

/// An open circuit as the breaker writes one, to the microsecond both
/// backends keep.
fn open() -> Circuit {
    let now = Utc::now()
        .duration_trunc(Duration::microseconds(1))
        .unwrap();
    Circuit {
        failures: 3,
        state: State::Open,
        opened_at: Some(now),
        next_probe_at: Some(now + Duration::seconds(30)),
        open_ms: 30_000,
        ..Circuit::default()
    }
}

pub async fn a_circuit_is_written_only_over_the_state_it_was_read_in<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let other = create(&store, endpoint()).await;
    assert!(store.circuits().await.unwrap().is_empty(), "no circuit yet");

    let opened = open();
    assert!(store
        .set_circuit(shop.id, &Circuit::default(), &opened, None)
        .await
        .unwrap());
    // A second writer that read the clean circuit too loses.
    let probing = opened.probing(Utc::now() + Duration::seconds(10));
    assert!(!store
        .set_circuit(shop.id, &Circuit::default(), &probing, None)
        .await
        .unwrap());
    assert_eq!(store.circuits().await.unwrap(), vec![(shop.id, opened)]);
    assert_eq!(
        store.circuits_of(&[shop.id, other.id]).await.unwrap(),
        vec![(shop.id, opened)]
    );

    // Back to clean: no row is left, and the next open is written again.
    assert!(store
        .set_circuit(shop.id, &opened, &Circuit::default(), None)
        .await
        .unwrap());
    assert!(store.circuits().await.unwrap().is_empty());
    assert!(!store
        .set_circuit(shop.id, &opened, &Circuit::default(), None)
        .await
        .unwrap());
    assert!(store
        .set_circuit(shop.id, &Circuit::default(), &opened, None)
        .await
        .unwrap());
}

pub async fn pending_rows_of_an_endpoint_come_in_due_order_and_without_a_url_when_asked<
    S: Backend,
>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let now = Utc::now();
    let first = commit_new(&store, due_at(&shop, now - Duration::seconds(3))).await;
    let elsewhere = commit_new(
        &store,
        NewNotification {
            url: Some("https://elsewhere.example/hook".into()),
            ..due_at(&shop, now - Duration::seconds(2))
        },
    )
    .await;
    let last = commit_new(&store, due_at(&shop, now - Duration::seconds(1))).await;
    commit_new(&store, due_at(&shop, now + Duration::hours(1))).await;

    let ids = |rows: Vec<(uuid::Uuid, chrono::DateTime<Utc>)>| -> Vec<uuid::Uuid> {
        rows.into_iter().map(|(id, _)| id).collect()
    };
    let all = store
        .pending_of(shop.id, PendingOf::All, None, now, 10)
        .await
        .unwrap();
    assert_eq!(
        ids(all.clone()),
        vec![first, elsewhere, last],
        "due by now, in order"
    );
    let page = store
        .pending_of(shop.id, PendingOf::All, Some((all[0].1, all[0].0)), now, 1)
        .await
        .unwrap();
    assert_eq!(ids(page), vec![elsewhere], "after a cursor, a page of one");
    let own = store
        .pending_of(shop.id, PendingOf::WithoutOwnUrl, None, now, 10)
        .await
        .unwrap();
    assert_eq!(ids(own), vec![first, last], "none with a URL of its own");
    assert_eq!(store.due_count(shop.id, now).await.unwrap(), 3);
}

pub async fn a_held_row_ends_failed_only_in_the_attempt_count_and_series_it_was_held_at<
    S: Backend,
>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let id = commit_new(&store, due_at(&shop, Utc::now())).await;
    // Held at another attempt count or series: it moved on since.
    let moved_on = store
        .fail_held(&[(id, 1, 0), (id, 0, 1)], "circuit_open", &[])
        .await
        .unwrap();
    assert!(moved_on.is_empty());
    assert_eq!(get(&store, id).await.status, Status::Pending);

    let failed = store
        .fail_held(&[(id, 0, 0)], "circuit_open", &[])
        .await
        .unwrap();
    assert_eq!(failed, vec![id]);
    let row = get(&store, id).await;
    assert_eq!((row.status, row.next_attempt_at), (Status::Failed, None));
    assert_eq!(row.last_error.as_deref(), Some("circuit_open"));
    assert!(row.completed_at.is_some());
    // Final: a second end changes nothing.
    assert!(store
        .fail_held(&[(id, 0, 0)], "circuit_open", &[])
        .await
        .unwrap()
        .is_empty());
}

pub async fn a_release_marks_only_pending_rows_never_attempted_and_they_load_on_the_backlog_lane<
    S: Backend,
>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let now = Utc::now();
    let held = commit_new(&store, due_at(&shop, now)).await;
    let retried = commit_new(&store, due_at(&shop, now)).await;
    record(&store, &[attempt(retried, shop.id, 1, retry_in(60))]).await;
    let ended = commit_new(&store, due_at(&shop, now)).await;
    store
        .fail_held(&[(ended, 0, 0)], "circuit_open", &[])
        .await
        .unwrap();
    let fresh = commit_new(&store, due_at(&shop, now)).await;

    store.mark_released(&[held, retried, ended]).await.unwrap();
    // Twice, as a release done again a lease later does: no change.
    store.mark_released(&[held]).await.unwrap();
    store.mark_released(&[]).await.unwrap();

    let ids = [held, retried, ended, fresh];
    let mut heads = store.load_heads(&ids).await.unwrap();
    heads.sort_by_key(|head| ids.iter().position(|id| *id == head.id));
    let marks: Vec<(bool, Lane)> = heads
        .iter()
        .map(|head| (head.released_by_circuit, head.lane()))
        .collect();
    assert_eq!(
        marks,
        vec![
            (true, Lane::Backlog),
            (false, Lane::Backlog),
            (false, Lane::Fresh),
            (false, Lane::Fresh),
        ],
        "held marked, the retried and the ended left as they were, the fresh one untouched"
    );
    let always = |_: uuid::Uuid, _: i64| true;
    let claimed = store.load_claimed(&[held, fresh], &always).await.unwrap();
    let lane_of = |id| {
        claimed
            .notifications
            .iter()
            .find(|row| row.id == id)
            .map(|row| row.lane())
    };
    assert_eq!(
        (lane_of(held), lane_of(fresh)),
        (Some(Lane::Backlog), Some(Lane::Fresh)),
        "a claim loads the mark"
    );
}

pub async fn a_circuit_change_commits_its_operator_event_only_with_the_change<S: Backend>(
    store: S,
) {
    operator_on(&store).await;
    let shop = create(&store, endpoint()).await;
    let opened = open();
    let change = CircuitChange {
        endpoint_id: shop.id,
        state: "open",
        opened_at: opened.opened_at.unwrap(),
        next_probe_at: opened.next_probe_at,
    };
    let event = OperatorEvent::circuit(&change, Utc::now());
    // A writer that read a state the circuit is not in loses, and so does
    // its event.
    assert!(!store
        .set_circuit(shop.id, &opened, &Circuit::default(), Some(&event))
        .await
        .unwrap());
    assert!(operator_event_keys(&store).await.is_empty());

    assert!(store
        .set_circuit(shop.id, &Circuit::default(), &opened, Some(&event))
        .await
        .unwrap());
    assert_eq!(operator_event_keys(&store).await, [Some(event.key.clone())]);
    // The same opening reported again with a later change (its key is
    // the opening's): the change is written, the event stored once.
    let probing = opened.probing(opened.opened_at.unwrap() + Duration::seconds(10));
    assert!(store
        .set_circuit(shop.id, &opened, &probing, Some(&event))
        .await
        .unwrap());
    assert_eq!(operator_event_keys(&store).await, [Some(event.key)]);
    assert_eq!(store.circuits().await.unwrap(), vec![(shop.id, probing)]);
}
