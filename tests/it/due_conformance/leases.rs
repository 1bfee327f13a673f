//! Leases in every due index: an expired one comes back due, extending
//! moves only those still held, a hand-off keeps the later of two, and
//! many are read at once with their ends.

use chrono::{DateTime, Duration, Utc};
use hookd::due::DueIndex;
use uuid::Uuid;

use super::{id, id_in, ms};

pub(super) async fn an_expired_lease_comes_back_due_at_once_and_counts_as_requeued(
    index: impl DueIndex,
) {
    let now = Utc::now();
    let (a, b) = (id(), id());
    index.add(&[(a, now - Duration::seconds(1))]).await.unwrap();
    let first_lease = now + Duration::seconds(1);
    assert_eq!(
        index.claim(now, now, 10, first_lease).await.unwrap().ids,
        vec![a]
    );
    index.add(&[(b, now - Duration::seconds(2))]).await.unwrap();

    // Before its lease ends, nothing comes back.
    let lease = now + Duration::minutes(5);
    let early = index
        .claim(now, now - Duration::seconds(5), 10, lease)
        .await
        .unwrap();
    assert_eq!((early.ids.len(), early.requeued), (0, 0));
    assert_eq!(early.next_lease_ms, ms(first_lease));

    let later = now + Duration::seconds(2);
    let claim = index.claim(later, later, 10, lease).await.unwrap();
    assert_eq!(claim.requeued, 1);
    // Due again at the claim's time: after b, which was due before it.
    assert_eq!(claim.ids, vec![b, a]);
    assert_eq!(claim.next_due_ms, None);
    assert_eq!(claim.next_lease_ms, ms(lease));
    assert!(index.leased(a, later).await.unwrap(), "leased anew");
    assert_eq!(index.depth().await.unwrap(), (0, 2));
}

pub(super) async fn extending_moves_only_the_leases_still_held(index: impl DueIndex) {
    let now = Utc::now();
    let (held, ended) = (id_in(1), id_in(2));
    index
        .add(&[(held, now - Duration::seconds(1)), (ended, now)])
        .await
        .unwrap();
    let lease = now + Duration::minutes(5);
    assert_eq!(index.claim(now, now, 10, lease).await.unwrap().ids.len(), 2);
    index.forget(&[ended]).await.unwrap();

    let until = now + Duration::hours(1);
    index.extend(&[held, ended], until).await.unwrap();
    assert_eq!(index.depth().await.unwrap(), (0, 1));
    let after_first_lease = now + Duration::minutes(10);
    assert!(index.leased(held, after_first_lease).await.unwrap());
    assert!(!index.leased(ended, now).await.unwrap(), "not leased again");
    let claim = index
        .claim(after_first_lease, after_first_lease, 10, lease)
        .await
        .unwrap();
    assert_eq!((claim.ids.len(), claim.requeued), (0, 0));
    assert_eq!(claim.next_lease_ms, ms(until));
}

pub(super) async fn a_notification_handed_over_leased_is_claimed_only_once_its_lease_expires(
    index: impl DueIndex,
) {
    let now = Utc::now();
    let handed = id_in(3);
    let until = now + Duration::seconds(1);
    index.add_leased(&[handed], until).await.unwrap();
    assert_eq!(index.depth().await.unwrap(), (0, 1));
    assert!(index.leased(handed, now).await.unwrap());

    let lease = now + Duration::minutes(5);
    let early = index.claim(now, now, 10, lease).await.unwrap();
    assert!(early.ids.is_empty());
    assert_eq!(early.next_lease_ms, ms(until));
    let later = now + Duration::seconds(2);
    let claim = index.claim(later, later, 10, lease).await.unwrap();
    assert_eq!((claim.ids, claim.requeued), (vec![handed], 1));
}

/// A hand-off's write that runs late (its connection stalled while
/// others went on) can find its id claimed meanwhile by another process
/// from the indexer's marks, under a lease that ends later: it must not
/// move that lease, which the next claim would then take for the
/// hand-off's and return while the other process delivers. A lease that
/// ended and is not requeued yet (the breaker's probe may choose such a
/// notification: `leased` calls it free) is replaced, and ids not leased
/// in the same call are leased.
pub(super) async fn a_hand_off_keeps_a_lease_that_ends_later_and_replaces_an_ended_one(
    index: impl DueIndex,
) {
    let now = Utc::now();
    let (claimed, handed, ended) = (id_in(1), id_in(2), id_in(3));
    index.add(&[(claimed, now)]).await.unwrap();
    let held = now + Duration::minutes(5);
    let claim = index.claim(now, now, 10, held).await.unwrap();
    assert_eq!(claim.ids, [claimed]);
    index
        .add_leased(&[ended], now - Duration::seconds(1))
        .await
        .unwrap();
    assert!(!index.leased(ended, now).await.unwrap());

    let soon = now + Duration::seconds(1);
    index
        .add_leased(&[claimed, handed, ended], soon)
        .await
        .unwrap();
    let mut ends = index
        .lease_ends(&[claimed, handed, ended], now)
        .await
        .unwrap()
        .into_iter()
        .map(|(id, at)| (id, ms(at)))
        .collect::<Vec<_>>();
    ends.sort();
    let mut expected = vec![(claimed, ms(held)), (handed, ms(soon)), (ended, ms(soon))];
    expected.sort();
    assert_eq!(ends, expected, "the claim's lease is as it was");
    let later = now + Duration::seconds(2);
    let claim = index.claim(later, later, 10, held).await.unwrap();
    let mut requeued = claim.ids.clone();
    requeued.sort();
    let mut expected = vec![handed, ended];
    expected.sort();
    assert_eq!(
        (requeued, claim.requeued),
        (expected, 2),
        "only the hand-off's leases ended"
    );
}

pub(super) async fn the_leases_of_many_ids_are_read_at_once_with_their_ends(index: impl DueIndex) {
    let now = Utc::now();
    let (first, second, due, unknown) = (id_in(1), id_in(2), id_in(3), id_in(4));
    let (soon, later) = (now + Duration::seconds(1), now + Duration::minutes(5));
    index.add_leased(&[first], soon).await.unwrap();
    index.add_leased(&[second], later).await.unwrap();
    index.add(&[(due, now)]).await.unwrap();
    let mut ends = index
        .lease_ends(&[first, second, due, unknown], now)
        .await
        .unwrap();
    ends.sort();
    let mut expected = vec![(first, soon), (second, later)];
    expected.sort();
    let whole_ms = |v: Vec<(Uuid, DateTime<Utc>)>| -> Vec<(Uuid, Option<i64>)> {
        v.into_iter().map(|(id, at)| (id, ms(at))).collect()
    };
    assert_eq!(whole_ms(ends), whole_ms(expected));
    let after = soon + Duration::milliseconds(1);
    let ends = index.lease_ends(&[first, second], after).await.unwrap();
    assert_eq!(
        whole_ms(ends),
        vec![(second, ms(later))],
        "an ended lease is left out"
    );
    assert!(index.lease_ends(&[], now).await.unwrap().is_empty());
}
