//! The delivery seam's attempts and health: an endpoint's health set and
//! cleared, attempts listed by pages, an attempt's headers and retry mark
//! kept, and claimed rows of an endpoint now pull handed to its consumers.

use super::*;

pub async fn endpoint_health_is_set_by_a_first_failure_and_cleared_by_a_success<S: Backend>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let (a, b) = (pending(&store, &shop).await, pending(&store, &shop).await);
    let first = AttemptRecord {
        started_at: Utc::now() - Duration::minutes(5),
        ..attempt(a, shop.id, 1, retry_in(60))
    };
    record(&store, std::slice::from_ref(&first)).await;
    assert_eq!(
        failing_since(&store, shop.id).await,
        Some(micros(first.started_at))
    );
    record(&store, &[attempt(a, shop.id, 2, retry_in(60))]).await;
    assert_eq!(
        failing_since(&store, shop.id).await,
        Some(micros(first.started_at)),
        "kept"
    );
    record(&store, &[attempt(b, shop.id, 1, Outcome::Succeeded)]).await;
    assert_eq!(failing_since(&store, shop.id).await, None);
    // An attempt that moved nothing says nothing of health.
    record(&store, &[attempt(b, shop.id, 1, FAILED)]).await;
    assert_eq!(failing_since(&store, shop.id).await, None);
}

pub async fn attempts_list_in_number_order_by_pages<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let id = pending(&store, &shop).await;
    record(&store, &[attempt(id, shop.id, 1, retry_in(-1))]).await;
    record(&store, &[attempt(id, shop.id, 2, retry_in(-1))]).await;
    record(&store, &[attempt(id, shop.id, 3, FAILED)]).await;
    let numbers = |after: i32, limit: i64| {
        let store = &store;
        async move {
            ReadStore::list_attempts(store, id, after, limit)
                .await
                .unwrap()
                .into_iter()
                .map(|a| (a.number, a.outcome))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        numbers(0, 2).await,
        [(1, OutcomeKind::Retry), (2, OutcomeKind::Retry)]
    );
    assert_eq!(numbers(2, 2).await, [(3, OutcomeKind::Failed)]);
    assert!(numbers(3, 2).await.is_empty());
    let listed = ReadStore::list_attempts(&store, id, 0, 1).await.unwrap();
    assert_eq!(listed[0].error_code.as_deref(), Some("connect"));
    assert_eq!(
        listed[0].error_message.as_deref(),
        Some("connection refused")
    );
    assert!(ReadStore::list_attempts(&store, new_id(), 0, 10)
        .await
        .unwrap()
        .is_empty());
}

pub async fn an_attempts_headers_and_retry_mark_are_kept_in_its_row_and_inline<S: Backend>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let with_headers = |record: AttemptRecord, n: i32| AttemptRecord {
        sent_headers: Some(format!("v1,sig{n}\nx-api-key")),
        response_headers: Some(format!("content-type: text/plain\nx-attempt: {n}\n")),
        ..record
    };
    let id = pending(&store, &shop).await;
    record(&store, &[with_headers(attempt(id, shop.id, 1, FAILED), 1)]).await;
    HousekeepingStore::clear_needs_index(&store, &[id])
        .await
        .unwrap();
    assert!(matches!(
        WriteStore::retry_notification(&store, id, Utc::now(), true)
            .await
            .unwrap(),
        Retry::Retried(_)
    ));
    let mut retried = with_headers(attempt(id, shop.id, 2, retry_in(-1)), 2);
    retried.expected.series_start = 1;
    assert_eq!(record(&store, &[retried]).await, [id]);
    let listed = ReadStore::list_attempts(&store, id, 0, 10).await.unwrap();
    let kept: Vec<_> = listed
        .iter()
        .map(|a| {
            (
                a.number,
                a.retried,
                a.sent_headers.as_deref(),
                a.response_headers.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        kept,
        [
            (
                1,
                false,
                Some("v1,sig1\nx-api-key"),
                Some("content-type: text/plain\nx-attempt: 1\n")
            ),
            (
                2,
                true,
                Some("v1,sig2\nx-api-key"),
                Some("content-type: text/plain\nx-attempt: 2\n")
            ),
        ]
    );
    // A first attempt that succeeded is kept in its notification's row,
    // without its headers: the write most deliveries make stays as small
    // as it was.
    let inline = pending(&store, &shop).await;
    let delivered = with_headers(attempt(inline, shop.id, 1, Outcome::Succeeded), 9);
    assert!(delivered.keep.inline, "{:?}", delivered.keep);
    assert_eq!(record(&store, &[delivered]).await, [inline]);
    let listed = ReadStore::list_attempts(&store, inline, 0, 10)
        .await
        .unwrap();
    let [kept] = listed.as_slice() else {
        panic!("{listed:?}")
    };
    assert_eq!(
        (
            kept.retried,
            kept.sent_headers.as_deref(),
            kept.response_headers.as_deref()
        ),
        (false, None, None)
    );
}

pub async fn claimed_rows_of_an_endpoint_now_pull_are_handed_to_its_consumers<S: Backend>(
    store: S,
) {
    let (switched, push) = (
        create(&store, endpoint()).await,
        create(&store, endpoint()).await,
    );
    let (moving, staying) = (
        pending(&store, &switched).await,
        pending(&store, &push).await,
    );
    WriteStore::modify_endpoint(
        &store,
        &EndpointRef::Id(switched.id),
        Box::new(|e: &mut Endpoint| {
            e.delivery = Delivery::Pull;
            e.url = None;
            Ok(())
        }),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    let claimed = claim(&store, &[moving], &|_, _| false).await;
    assert!(claimed.endpoints[0].pull);
    assert!(
        !get(&store, moving).await.pull,
        "a change of mode moves no row itself"
    );

    DeliveryStore::hand_to_pull(&store, &[moving, staying])
        .await
        .unwrap();
    assert!(get(&store, moving).await.pull);
    assert!(!get(&store, staying).await.pull, "its endpoint is push");
    let leased = PullStore::lease_of(&store, moving).await.unwrap().unwrap();
    assert!(leased.pull && leased.lease_id.is_none());
    let left = HousekeepingStore::still_pending(&store, &[moving, staying])
        .await
        .unwrap();
    assert_eq!(
        left.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [staying]
    );
}
