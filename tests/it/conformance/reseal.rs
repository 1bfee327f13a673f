//! The reseal walk's side of a backend (`seams::ResealRows`, which
//! `sealing::reseal` pages over): the rows with a value not under a
//! prefix, in id order after a cursor, a page at most `limit` long, each
//! row passed as stored and written back only when the walk changed it.
//! The values are whatever the combination stores (plaintext, or sealed
//! under the suite's key), so the cases compare them as stored, and use
//! a prefix no stored value has.

use std::collections::BTreeMap;

use hookd::store::endpoints::Endpoint;
use hookd::store::notifications::NewNotification;
use hookd::store::seams::{EndpointSecrets, ResealRows};
use uuid::Uuid;

use super::fixtures::{commit_new, create, endpoint, notification};
use super::Backend;

/// The prefix of a key nothing is sealed under yet.
const NEXT: &str = "enc:v1:next:";

fn headers(value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([("X-Trace".to_string(), value.to_string())])
}

/// Every endpoint's values as stored, by id (a walk with a prefix that
/// nothing has, changing nothing).
async fn stored_endpoints(rows: &dyn ResealRows) -> Vec<(Uuid, String, BTreeMap<String, String>)> {
    let mut seen = Vec::new();
    let mut look = |row: &mut EndpointSecrets| {
        seen.push((row.id, row.secret.clone(), row.headers.clone()));
        false
    };
    let page = rows
        .reseal_endpoints(Uuid::nil(), 100, "nothing starts with this", &mut look)
        .await
        .unwrap();
    assert_eq!((page.next, page.changed), (None, 0));
    seen
}

pub async fn a_reseal_page_passes_endpoints_not_under_the_prefix_in_id_order_and_writes_back_what_changed<
    S: Backend,
>(
    store: S,
) {
    let with_header = Endpoint {
        headers: headers("secret-header"),
        ..endpoint()
    };
    let mut ids = vec![
        create(&store, with_header).await.id,
        create(&store, endpoint()).await.id,
        create(&store, endpoint()).await.id,
    ];
    ids.sort();
    let rows = store.reseal_rows();
    let before = stored_endpoints(rows).await;
    assert_eq!(before.iter().map(|r| r.0).collect::<Vec<_>>(), ids);
    assert_eq!(rows.count_not_starting_with(NEXT).await.unwrap(), 3);

    // A page of two: the first row's secret alone is moved under the
    // prefix, the second is left.
    let mut seen = Vec::new();
    let mut reseal = |row: &mut EndpointSecrets| {
        seen.push(row.id);
        if seen.len() > 1 {
            return false;
        }
        row.secret = format!("{NEXT}{}", row.secret);
        true
    };
    let page = rows
        .reseal_endpoints(Uuid::nil(), 2, NEXT, &mut reseal)
        .await
        .unwrap();
    assert_eq!(seen, ids[..2]);
    assert_eq!((page.next, page.changed), (Some(ids[1]), 1));
    let after = stored_endpoints(rows).await;
    assert_eq!(after[0].1, format!("{NEXT}{}", before[0].1));
    assert_eq!(after[1..], before[1..], "rows not changed are not written");
    // Whichever row had the header, any value not under the prefix keeps
    // its row in the walk.
    let header_row = before.iter().position(|r| !r.2.is_empty()).unwrap();
    let stale = if header_row == 0 { 3 } else { 2 };
    assert_eq!(rows.count_not_starting_with(NEXT).await.unwrap(), stale);

    // The next page starts after the cursor and is the last (short).
    let mut seen = Vec::new();
    let mut all = |row: &mut EndpointSecrets| {
        seen.push(row.id);
        row.secret = format!("{NEXT}{}", row.secret);
        row.headers = row
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), format!("{NEXT}{value}")))
            .collect();
        true
    };
    let page = rows
        .reseal_endpoints(ids[1], 2, NEXT, &mut all)
        .await
        .unwrap();
    assert_eq!(seen, ids[2..]);
    assert_eq!((page.next, page.changed), (None, 1));
    // From the start again: the rows done are not passed.
    let mut seen = Vec::new();
    let mut all = |row: &mut EndpointSecrets| {
        seen.push(row.id);
        row.secret = format!("{NEXT}{}", row.secret);
        row.headers = row
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), format!("{NEXT}{value}")))
            .collect();
        true
    };
    rows.reseal_endpoints(Uuid::nil(), 10, NEXT, &mut all)
        .await
        .unwrap();
    let expected: Vec<Uuid> = [ids[1]]
        .into_iter()
        .chain((header_row == 0).then_some(ids[0]))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(rows.count_not_starting_with(NEXT).await.unwrap(), 0);
}

pub async fn a_reseal_page_of_notifications_passes_only_those_with_a_header_value_not_under_the_prefix<
    S: Backend,
>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let with = |value: &str| NewNotification {
        headers: headers(value),
        ..notification(&shop)
    };
    let first = commit_new(&store, with("a")).await;
    commit_new(&store, notification(&shop)).await;
    let last = commit_new(&store, with("b")).await;
    let rows = store.reseal_rows();
    // The endpoint's secret, and the two notifications with headers.
    assert_eq!(rows.count_not_starting_with(NEXT).await.unwrap(), 3);

    let mut seen = Vec::new();
    let mut reseal = |id: Uuid, headers: &mut BTreeMap<String, String>| {
        seen.push((id, headers.clone()));
        if id != first {
            return false;
        }
        for value in headers.values_mut() {
            *value = format!("{NEXT}{value}");
        }
        true
    };
    let page = rows
        .reseal_notifications(Uuid::nil(), 10, NEXT, &mut reseal)
        .await
        .unwrap();
    assert_eq!(
        seen.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [first, last]
    );
    assert_eq!((page.next, page.changed), (None, 1));
    assert_eq!(rows.count_not_starting_with(NEXT).await.unwrap(), 2);

    // As stored now: the first under the prefix, the last as it was.
    let mut stored = Vec::new();
    let mut look = |id: Uuid, headers: &mut BTreeMap<String, String>| {
        stored.push((id, headers.clone()));
        false
    };
    let page = rows
        .reseal_notifications(Uuid::nil(), 1, "nothing starts with this", &mut look)
        .await
        .unwrap();
    assert_eq!(
        page.next,
        Some(first),
        "a full page names where the next starts"
    );
    rows.reseal_notifications(first, 10, "nothing starts with this", &mut look)
        .await
        .unwrap();
    let value = |headers: &BTreeMap<String, String>| headers["X-Trace"].clone();
    assert_eq!(stored[0].0, first);
    assert_eq!(value(&stored[0].1), format!("{NEXT}{}", value(&seen[0].1)));
    assert_eq!(stored[1..], seen[1..]);
}
