use super::*;

const S: i64 = 1_000_000;
const NOW: i64 = 1_700_000_000 * S;

fn limit(per_second: f64, burst: u32) -> RateLimit {
    RateLimit::new(per_second, burst).unwrap()
}

fn fresh(n: usize) -> Vec<Option<Reservation>> {
    vec![None; n]
}

#[test]
fn limits_out_of_bounds_name_their_field() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 100_000.5, -0.0] {
        assert_eq!(
            RateLimit::new(bad, 1),
            Err(RateLimitError::PerSecond),
            "{bad}"
        );
    }
    for bad in [0, 100_001] {
        assert_eq!(
            RateLimit::new(1.0, bad),
            Err(RateLimitError::Burst),
            "{bad}"
        );
    }
    assert_eq!(RateLimitError::Burst.field(), "rate_limit.burst");
    assert!(RateLimit::new(100_000.0, 100_000).is_ok());
    assert!(RateLimit::new(0.001, 1).is_ok());
    // Below one request in 1,000 s, burst × interval would leave an i64 of
    // microseconds (and Lua's exact integers).
    assert_eq!(RateLimit::new(0.0009, 1), Err(RateLimitError::PerSecond));
    assert_eq!(
        RateLimit::new(1e-9, 100_000),
        Err(RateLimitError::PerSecond)
    );
    let slowest = limit(0.001, 100_000);
    assert!(slowest.tolerance_us() < (1_i64 << 53) - NOW);
}

#[test]
fn a_stored_limit_needs_both_columns_in_bounds() {
    assert_eq!(
        RateLimit::stored(Some(10.0), Some(20)),
        Some(limit(10.0, 20))
    );
    assert_eq!(RateLimit::stored(Some(10.0), None), None);
    assert_eq!(RateLimit::stored(None, Some(20)), None);
    assert_eq!(RateLimit::stored(Some(10.0), Some(-1)), None);
}

#[test]
fn the_interval_rounds_up_so_the_rate_is_never_exceeded() {
    assert_eq!(limit(10.0, 1).interval_us(), 100_000);
    assert_eq!(limit(3.0, 1).interval_us(), 333_334);
    assert_eq!(limit(100_000.0, 1).interval_us(), 10);
    assert_eq!(limit(10.0, 20).tolerance_us(), 19 * 100_000);
}

#[test]
fn a_fresh_bucket_sends_the_burst_at_once_and_reserves_the_rest_one_interval_apart() {
    let (bucket, decisions) = decide(None, limit(10.0, 20), (NOW, NOW), usize::MAX, &fresh(25));
    for decision in &decisions[..20] {
        assert_eq!(*decision, Decision::Send { at_us: NOW });
    }
    for (i, decision) in decisions[20..].iter().enumerate() {
        let at_us = NOW + (i as i64 + 1) * 100_000;
        assert_eq!(*decision, Decision::Reserve { at_us });
    }
    assert_eq!(bucket.tat_us, NOW + 25 * 100_000);
    assert_eq!(bucket.epoch_us, NOW);
}

#[test]
fn a_slot_within_the_claim_ahead_is_sent_at_its_time() {
    let (_, decisions) = decide(
        None,
        limit(10.0, 1),
        (NOW, NOW + 150_000),
        usize::MAX,
        &fresh(3),
    );
    assert_eq!(
        decisions,
        vec![
            Decision::Send { at_us: NOW },
            Decision::Send {
                at_us: NOW + 100_000
            },
            Decision::Reserve {
                at_us: NOW + 200_000
            },
        ]
    );
}

#[test]
fn a_reservation_coming_back_at_its_slot_is_sent_without_taking_another() {
    let (bucket, decisions) = decide(None, limit(10.0, 1), (NOW, NOW), usize::MAX, &fresh(2));
    let Decision::Reserve { at_us } = decisions[1] else {
        panic!("the second is reserved: {decisions:?}");
    };
    let tat = bucket.tat_us;
    let held = Reservation {
        at_us,
        epoch_us: bucket.epoch_us,
        lent: None,
    };
    let (bucket, decisions) = decide(
        Some(bucket),
        limit(10.0, 1),
        (at_us, at_us),
        usize::MAX,
        &[Some(held)],
    );
    assert_eq!(decisions, vec![Decision::Send { at_us }]);
    assert_eq!(bucket.tat_us, tat, "no second slot taken");
}

#[test]
fn a_reservation_coming_back_long_after_its_slot_takes_a_new_one() {
    // Held by an open circuit for an hour: its old slot is void, or every
    // notification held would go at once, past the limit.
    let (bucket, decisions) = decide(None, limit(10.0, 1), (NOW, NOW), usize::MAX, &fresh(3));
    let Decision::Reserve { at_us } = decisions[2] else {
        panic!("the third is reserved: {decisions:?}");
    };
    let held = Reservation {
        at_us,
        epoch_us: bucket.epoch_us,
        lent: None,
    };
    let later = at_us + 3600 * S;
    let (_, decisions) = decide(
        Some(bucket),
        limit(10.0, 1),
        (later, later),
        usize::MAX,
        &[Some(held), Some(held)],
    );
    assert_eq!(
        decisions,
        vec![
            Decision::Send { at_us: later },
            Decision::Reserve {
                at_us: later + limit(10.0, 1).interval_us()
            }
        ],
        "each takes a slot under the limit, not the void one"
    );
}

#[test]
fn a_reservation_coming_back_early_waits_for_its_slot() {
    let (bucket, decisions) = decide(None, limit(1.0, 1), (NOW, NOW), usize::MAX, &fresh(2));
    let at_us = decisions[1].at_us();
    let held = Reservation {
        at_us,
        epoch_us: bucket.epoch_us,
        lent: None,
    };
    let (_, decisions) = decide(
        Some(bucket),
        limit(1.0, 1),
        (NOW + 1, NOW + 1),
        usize::MAX,
        &[Some(held)],
    );
    assert_eq!(decisions, vec![Decision::Wait { at_us }]);
}

#[test]
fn a_quiet_spell_refills_the_burst_but_no_more() {
    let (bucket, _) = decide(None, limit(10.0, 5), (NOW, NOW), usize::MAX, &fresh(5));
    let later = NOW + 60 * S;
    let (_, decisions) = decide(
        Some(bucket),
        limit(10.0, 5),
        (later, later),
        usize::MAX,
        &fresh(7),
    );
    let sent = decisions
        .iter()
        .filter(|d| matches!(d, Decision::Send { .. }))
        .count();
    assert_eq!(sent, 5);
}

#[test]
fn a_partly_refilled_bucket_sends_what_it_has_earned() {
    let (bucket, _) = decide(None, limit(10.0, 5), (NOW, NOW), usize::MAX, &fresh(5));
    // 5 sent at NOW: TAT = NOW + 0.5 s; 0.3 s later 3 tokens are back.
    let later = NOW + 300_000;
    let (_, decisions) = decide(
        Some(bucket),
        limit(10.0, 5),
        (later, later),
        usize::MAX,
        &fresh(4),
    );
    assert_eq!(
        decisions,
        vec![
            Decision::Send { at_us: later },
            Decision::Send { at_us: later },
            Decision::Send { at_us: later },
            Decision::Reserve {
                at_us: NOW + 400_000
            },
        ]
    );
}

#[test]
fn a_changed_limit_starts_the_bucket_again_and_voids_old_reservations() {
    let (bucket, decisions) = decide(None, limit(1.0, 1), (NOW, NOW), usize::MAX, &fresh(3));
    let held = Reservation {
        at_us: decisions[2].at_us(),
        epoch_us: bucket.epoch_us,
        lent: None,
    };
    let later = NOW + 10;
    let (bucket, decisions) = decide(
        Some(bucket),
        limit(2.0, 1),
        (later, later),
        usize::MAX,
        &[Some(held)],
    );
    assert_eq!(bucket.epoch_us, later);
    assert_eq!(bucket.tag, limit(2.0, 1).tag());
    assert_eq!(decisions, vec![Decision::Send { at_us: later }]);
}

#[test]
fn a_void_reservation_of_a_busy_bucket_takes_a_new_slot() {
    let (bucket, _) = decide(None, limit(1.0, 1), (NOW, NOW), usize::MAX, &fresh(3));
    let stale = Reservation {
        at_us: NOW,
        epoch_us: NOW - 1,
        lent: None,
    };
    let (_, decisions) = decide(
        Some(bucket),
        limit(1.0, 1),
        (NOW, NOW),
        usize::MAX,
        &[Some(stale)],
    );
    assert_eq!(decisions, vec![Decision::Reserve { at_us: NOW + 3 * S }]);
}

#[test]
fn a_backlog_is_spread_at_the_rate_over_any_window() {
    // 300 asked for in batches of 50 at the same instant, 10/s burst 20.
    let l = limit(10.0, 20);
    let mut bucket = None;
    let mut times = Vec::new();
    for _ in 0..6 {
        let (b, decisions) = decide(bucket, l, (NOW, NOW), usize::MAX, &fresh(50));
        bucket = Some(b);
        times.extend(decisions.iter().map(|d| d.at_us()));
    }
    times.sort_unstable();
    assert_eq!(times.iter().filter(|t| **t == NOW).count(), 20);
    for (i, start) in times.iter().enumerate() {
        let in_window = times[i..]
            .iter()
            .take_while(|t| **t < start + 5 * S)
            .count();
        let allowance = if *start == NOW { 20 + 49 } else { 50 };
        assert!(in_window <= allowance, "{in_window} in 5 s from {start}");
    }
}

#[test]
fn keeping_times_cover_the_last_slot_and_the_grace() {
    let bucket = Bucket {
        tat_us: NOW + 5 * S,
        epoch_us: NOW,
        tag: String::new(),
        committed_tat_us: NOW,
        lent_generation: 0,
    };
    assert_eq!(bucket_ttl_us(&bucket, NOW), 5 * S + grace_us());
    assert_eq!(bucket_ttl_us(&bucket, NOW + 10 * S), grace_us());
    assert_eq!(reservation_ttl_us(NOW + S, NOW), S + grace_us());
}

#[test]
fn past_the_room_the_cap_leaves_a_sendable_one_holds_its_slot_without_a_second_token() {
    let l = limit(10.0, 5);
    let (bucket, decisions) = decide(None, l, (NOW, NOW), 2, &fresh(3));
    assert_eq!(
        decisions,
        vec![
            Decision::Send { at_us: NOW },
            Decision::Send { at_us: NOW },
            Decision::Reserve { at_us: NOW },
        ]
    );
    let tat = bucket.tat_us;
    let held = Some(Reservation {
        at_us: NOW,
        epoch_us: bucket.epoch_us,
        lent: None,
    });
    let later = NOW + 1_000;
    let (bucket, decisions) = decide(Some(bucket), l, (later, later), 0, &[held]);
    assert_eq!(decisions, vec![Decision::Wait { at_us: NOW }]);
    let (bucket, decisions) = decide(Some(bucket), l, (later, later), 1, &[held]);
    assert_eq!(decisions, vec![Decision::Send { at_us: later }]);
    assert_eq!(bucket.tat_us, tat, "its slot was kept, no other taken");
}

#[test]
fn a_throttled_slot_comes_back_at_the_start_of_its_group_never_after_it() {
    let l = limit(10.0, 20);
    assert_eq!(group_us(l), S, "ten slots of 100 ms");
    assert_eq!(park_us(NOW + S + 300_000, l), NOW + S);
    assert_eq!(park_us(NOW + S, l), NOW + S);
    for slot in (0..50).map(|i| NOW + i * 37_000) {
        let parked = park_us(slot, l);
        assert!(parked <= slot && slot - parked < group_us(l));
    }
    assert_eq!(group_us(limit(1000.0, 1)), 10_000, "ten slots of 1 ms");
    assert_eq!(
        group_us(limit(0.5, 1)),
        S,
        "a slot of 2 s: at most a second"
    );
    assert_eq!(group_us(limit(MIN_PER_SECOND, 1)), GROUP_US);
}

#[test]
fn a_claim_sends_the_slots_of_its_group_each_at_its_own_time_and_no_further() {
    let l = limit(10.0, 1);
    let (bucket, decisions) = decide(None, l, (NOW, NOW), 1, &fresh(25));
    let slots: Vec<i64> = decisions.iter().map(|d| d.at_us()).collect();
    let held: Vec<Option<Reservation>> = slots
        .iter()
        .map(|&at_us| {
            Some(Reservation {
                at_us,
                epoch_us: bucket.epoch_us,
                lent: None,
            })
        })
        .collect();
    // Back at the start of the group of the second slot, late by 3 ms.
    let now = park_us(slots[1], l) + 3_000;
    let horizon = horizon_us(l, now, now);
    let (_, decisions) = decide(Some(bucket), l, (now, horizon), 100, &held[1..]);
    let sent: Vec<i64> = decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Send { at_us } => Some(*at_us),
            _ => None,
        })
        .collect();
    assert!(!sent.is_empty());
    for (at, slot) in sent.iter().zip(&slots[1..]) {
        assert_eq!(*at, (*slot).max(now), "each at its own slot");
        assert!(*at < park_us(now, l) + group_us(l));
    }
    for decision in &decisions[sent.len()..] {
        assert!(matches!(decision, Decision::Wait { at_us } if *at_us > horizon));
    }
    assert_eq!(
        horizon_us(l, now, now + 5 * S),
        now + 5 * S,
        "never before due_by"
    );
}
