//! The in-process index's edges: times at the millisecond, the requeue cap,
//! and when it wakes the dispatcher. What it shares with Redis is checked
//! on both by `tests/it/due_conformance.rs`.

use chrono::{DateTime, Duration, TimeZone, Utc};
use futures::FutureExt;
use uuid::Uuid;

use super::{MemoryIndex, MAX_REQUEUE};
use crate::due::DueIndex;

fn at_ms(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).unwrap()
}

fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

/// Whether the index woke the dispatcher since this was last asked.
fn woken(index: &MemoryIndex) -> bool {
    let wakeups = index
        .wakeups()
        .expect("the memory index wakes the dispatcher");
    wakeups.notified().now_or_never().is_some()
}

#[tokio::test]
async fn a_lease_that_ends_at_the_claims_millisecond_comes_back_and_is_no_longer_leased() {
    let index = MemoryIndex::new();
    let t = 1_700_000_000_000;
    index.add_leased(&[id(1)], at_ms(t)).await.unwrap();
    assert!(index.leased(id(1), at_ms(t - 1)).await.unwrap());
    assert!(!index.leased(id(1), at_ms(t)).await.unwrap());

    let claim = index
        .claim(at_ms(t), at_ms(t), 10, at_ms(t + 60_000))
        .await
        .unwrap();
    assert_eq!((claim.ids, claim.requeued), (vec![id(1)], 1));
    assert_eq!(claim.next_lease_ms, Some(t + 60_000));
    assert!(index.leased(id(1), at_ms(t)).await.unwrap());
}

#[tokio::test]
async fn a_due_time_inside_a_millisecond_counts_as_that_millisecond_s_end() {
    let index = MemoryIndex::new();
    let t = 1_700_000_000_000;
    let due = at_ms(t) + Duration::microseconds(1);
    index.add(&[(id(1), due)]).await.unwrap();
    assert_eq!(index.due_at(id(1)), Some(t + 1));

    let early = index
        .claim(at_ms(t), at_ms(t), 10, at_ms(t + 60_000))
        .await
        .unwrap();
    assert!(early.ids.is_empty());
    assert_eq!(early.next_due_ms, Some(t + 1));
    let on_time = index
        .claim(at_ms(t + 1), at_ms(t + 1), 10, at_ms(t + 60_000))
        .await
        .unwrap();
    assert_eq!(on_time.ids, vec![id(1)]);
}

#[tokio::test]
async fn a_claim_returns_at_most_a_thousand_expired_leases_and_the_next_claim_the_rest() {
    let index = MemoryIndex::new();
    let t = 1_700_000_000_000;
    let ids: Vec<Uuid> = (0..MAX_REQUEUE as u128 + 5).map(id).collect();
    index.add_leased(&ids, at_ms(t)).await.unwrap();

    let first = index
        .claim(at_ms(t), at_ms(t), 0, at_ms(t + 60_000))
        .await
        .unwrap();
    assert_eq!(first.requeued, MAX_REQUEUE);
    assert_eq!(first.next_due_ms, Some(t));
    assert_eq!(first.next_lease_ms, Some(t), "five are still to come back");
    let second = index
        .claim(at_ms(t), at_ms(t), 0, at_ms(t + 60_000))
        .await
        .unwrap();
    assert_eq!(second.requeued, 5);
    assert_eq!(index.depth().await.unwrap(), (ids.len() as u64, 0));
}

#[tokio::test]
async fn what_gets_due_before_the_dispatcher_s_next_look_wakes_it_and_what_gets_due_after_does_not()
{
    let index = MemoryIndex::new();
    let t = 1_700_000_000_000;
    index.add(&[(id(1), at_ms(t + 10_000))]).await.unwrap();
    assert!(woken(&index), "no claim yet: anything is news");
    let claim = index
        .claim(at_ms(t), at_ms(t), 10, at_ms(t + 60_000))
        .await
        .unwrap();
    assert_eq!(claim.next_event_ms(0), Some(t + 10_000));
    assert!(!woken(&index), "a claim wakes no one");

    index.add(&[(id(2), at_ms(t + 20_000))]).await.unwrap();
    index.add_leased(&[id(3)], at_ms(t + 30_000)).await.unwrap();
    assert!(!woken(&index), "the dispatcher looks before these anyway");

    index
        .complete(&[id(3)], &[(id(4), at_ms(t + 5_000))])
        .await
        .unwrap();
    assert!(woken(&index), "due before the next look");
    index.add(&[(id(5), at_ms(t + 6_000))]).await.unwrap();
    assert!(!woken(&index), "the dispatcher already looks at t + 5 s");
    index.extend(&[id(6)], at_ms(t + 1_000)).await.unwrap();
    assert!(!woken(&index), "no lease of id 6 was moved");
}

#[tokio::test]
async fn a_marked_row_moves_earlier_but_never_later_and_a_leased_one_stays_leased() {
    let index = MemoryIndex::new();
    let t = 1_700_000_000_000;
    index
        .add(&[(id(1), at_ms(t + 10_000)), (id(2), at_ms(t))])
        .await
        .unwrap();
    index.add_leased(&[id(3)], at_ms(t + 60_000)).await.unwrap();

    let written = index
        .add_marked(&[
            (id(1), at_ms(t + 5_000)),
            (id(2), at_ms(t + 5_000)),
            (id(3), at_ms(t)),
            (id(4), at_ms(t + 7_000)),
        ])
        .await
        .unwrap();
    assert_eq!(written, 2, "id 1 moved earlier, id 4 added");
    assert_eq!(index.due_at(id(1)), Some(t + 5_000));
    assert_eq!(index.due_at(id(2)), Some(t));
    assert_eq!(index.due_at(id(3)), None);
    assert_eq!(index.due_at(id(4)), Some(t + 7_000));
}
