//! The order's decisions (`store::ordering`): runs, places, a requeue's
//! place in line and an orphan's.

use super::*;

fn item(endpoint: Uuid, key: &str) -> NewNotification {
    NewNotification {
        id: Uuid::now_v7(),
        endpoint_id: endpoint,
        key: None,
        event_type: None,
        content_type: "application/json".into(),
        body: Vec::new(),
        headers: Default::default(),
        schedule: Default::default(),
        deliver_at: chrono::Utc::now(),
        next_attempt_at: chrono::Utc::now(),
        url: None,
        pull: false,
        order_key: Some(key.to_string()),
        ordered: true,
    }
}

#[test]
fn new_notifications_of_a_key_follow_its_tail_in_creation_order() {
    let endpoint = Uuid::now_v7();
    let tail = Uuid::now_v7();
    let (a1, b1, a2) = (
        item(endpoint, "a"),
        item(endpoint, "b"),
        item(endpoint, "a"),
    );
    let items = ordered([&a1, &b1, &a2]);
    assert_eq!(
        runs(&items),
        [
            KeyRun {
                endpoint_id: endpoint,
                order_key: "a".into(),
                count: 2,
                last: a2.id,
            },
            KeyRun {
                endpoint_id: endpoint,
                order_key: "b".into(),
                count: 1,
                last: b1.id,
            },
        ]
    );
    let states = HashMap::from([
        (
            (endpoint, "a".to_string()),
            KeyState {
                last_sequence: 7,
                tail: Some(tail),
            },
        ),
        (
            (endpoint, "b".to_string()),
            KeyState {
                last_sequence: 1,
                tail: None,
            },
        ),
    ]);
    let placed = places(&items, &states);
    let place = |sequence, behind| Ordered {
        sequence: Some(sequence),
        behind,
    };
    assert_eq!(placed[&a1.id], place(6, Some(tail)));
    assert_eq!(placed[&a2.id], place(7, Some(a1.id)));
    assert_eq!(placed[&b1.id], place(1, None));
}

#[test]
fn a_notification_back_in_line_goes_at_its_place_but_never_before_one_under_way() {
    let (me, before, head, holder) = (
        Uuid::now_v7(),
        Uuid::now_v7(),
        Uuid::now_v7(),
        Uuid::now_v7(),
    );
    let released = LineHead {
        id: head,
        behind: None,
    };
    let waiting = LineHead {
        id: head,
        behind: Some(holder),
    };
    assert_eq!(
        requeued_behind(me, Some(before), Some(released), None),
        Some(before)
    );
    // The oldest of its key: second, behind a head that may be in flight,
    assert_eq!(requeued_behind(me, None, Some(released), None), Some(head));
    // or first, behind the holder, when the head has not been released.
    assert_eq!(
        requeued_behind(me, None, Some(waiting), Some(holder)),
        Some(holder)
    );
    assert_eq!(requeued_behind(me, None, None, Some(holder)), Some(holder));
    assert_eq!(requeued_behind(me, None, None, None), None);
    // The holder, retried, is its key's head again.
    assert_eq!(
        requeued_behind(holder, Some(before), Some(waiting), Some(holder)),
        None
    );
}

#[test]
fn one_waiting_for_a_gone_notification_goes_behind_the_one_before_it_or_its_holder_or_first() {
    let (me, gone, before, holder) = (
        Uuid::now_v7(),
        Uuid::now_v7(),
        Uuid::now_v7(),
        Uuid::now_v7(),
    );
    let orphan = |before, holder| Orphan {
        id: me,
        gone,
        before,
        holder,
    };
    assert_eq!(
        orphan_behind(&orphan(Some(before), Some(holder))),
        Some(before)
    );
    assert_eq!(orphan_behind(&orphan(None, Some(holder))), Some(holder));
    assert_eq!(orphan_behind(&orphan(None, None)), None, "the key's head");
    assert_eq!(orphan_behind(&orphan(None, Some(me))), None);
    assert_eq!(
        orphan_moves(&[orphan(None, None)]),
        [(me, gone, None)],
        "written only while it waits for the gone one"
    );
}

#[test]
fn a_page_goes_back_in_line_oldest_first_the_rest_not_in_line_meanwhile() {
    let endpoint = Uuid::now_v7();
    let (a2, a1, b1) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let rows = [
        (a2, "a".to_string(), 2),
        (b1, "b".to_string(), 1),
        (a1, "a".to_string(), 1),
    ];
    let order: Vec<(Uuid, Vec<Uuid>)> = back_in_line(endpoint, &rows)
        .into_iter()
        .map(|(again, unplaced)| (again.id, unplaced))
        .collect();
    assert_eq!(order, [(a1, vec![a2, b1]), (a2, vec![b1]), (b1, vec![])]);
}

#[test]
fn a_notification_without_a_key_or_of_an_unordered_endpoint_has_no_place() {
    let endpoint = Uuid::now_v7();
    let mut unordered = item(endpoint, "a");
    unordered.ordered = false;
    let mut keyless = item(endpoint, "a");
    keyless.order_key = None;
    assert!(ordered([&unordered, &keyless]).is_empty());
}
