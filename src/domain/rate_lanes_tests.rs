use super::*;

const S: i64 = 1_000_000;
const NOW: i64 = 1_700_000_000 * S;

fn limit(per_second: f64, burst: u32) -> RateLimit {
    RateLimit::new(per_second, burst).unwrap()
}

fn lanes(per_second: f64, burst: u32, share: f64) -> [RateLimit; 2] {
    limit(per_second, burst).lanes(share).unwrap()
}

fn asked(lane: Lane, n: usize) -> Vec<(Lane, Option<Reservation>)> {
    vec![(lane, None); n]
}

fn sent_now(decisions: &[Decision]) -> usize {
    decisions
        .iter()
        .filter(|d| matches!(d, Decision::Send { at_us } if *at_us == NOW))
        .count()
}

#[test]
fn share_0_turns_lanes_off_and_leaves_todays_rule() {
    assert_eq!(limit(20.0, 20).lanes(0.0), None);
    assert_eq!(limit(20.0, 20).lanes(f64::NAN), None);
    assert_eq!(limit(20.0, 20).lanes(-1.0), None);
}

#[test]
fn a_share_splits_the_rate_and_the_burst_fresh_keeping_at_least_one_of_it() {
    let [fresh, backlog] = lanes(20.0, 20, 0.5);
    assert_eq!((fresh.burst, backlog.burst), (10, 10));
    assert_eq!(
        (fresh.interval_us(), backlog.interval_us()),
        (S / 10, S / 10)
    );
    let [fresh, backlog] = lanes(20.0, 1, 0.25);
    assert_eq!((fresh.burst, backlog.burst), (1, 0));
    assert_eq!(
        (fresh.interval_us(), backlog.interval_us()),
        (S / 5, 66_667)
    );
    // All for fresh still drains the backlog, slowly.
    let [fresh, backlog] = lanes(20.0, 20, 1.0);
    assert!(fresh.per_second < 20.0 && backlog.per_second > 0.0);
    assert!((fresh.per_second + backlog.per_second - 20.0).abs() < 1e-9);
}

#[test]
fn the_sum_never_passes_the_rate() {
    let limits = lanes(20.0, 20, 0.5);
    let mut buckets = [None, None];
    // What holds a slot, and when it comes back.
    let mut parked: Vec<(Lane, Reservation)> = Vec::new();
    let mut sends: Vec<i64> = Vec::new();
    for tick in 0..3_000 {
        let now = NOW + tick * 10_000;
        let mut held: Vec<(Lane, Option<Reservation>)> = Vec::new();
        parked.retain(|(lane, r)| {
            let back = r.at_us <= now;
            if back {
                held.push((*lane, Some(*r)));
            }
            !back
        });
        held.extend(asked(Lane::Backlog, 5));
        if tick % 3 == 0 {
            held.extend(asked(Lane::Fresh, 1));
        }
        let (kept, decisions) = decide_lanes(buckets, limits, (now, now), usize::MAX, &held);
        for ((lane, _), decision) in held.iter().zip(&decisions) {
            match *decision {
                Decision::Send { at_us } => sends.push(at_us),
                Decision::Reserve { at_us } => parked.push((
                    *lane,
                    Reservation {
                        at_us,
                        epoch_us: kept[lane.index()].epoch_us,
                    },
                )),
                Decision::Wait { .. } => unreachable!("back only at its slot"),
            }
        }
        buckets = kept.map(Some);
    }
    sends.sort_unstable();
    assert!(sends.len() > 500, "{} sent", sends.len());
    // Over any window of w seconds: at most 20·w plus the burst.
    for (i, start) in sends.iter().enumerate() {
        for w in [1, 5, 20] {
            let within = sends[i..]
                .iter()
                .take_while(|t| **t < start + w * S)
                .count();
            assert!(within as i64 <= 20 * w + 20, "{within} in {w} s");
        }
    }
}

#[test]
fn a_backlog_cannot_book_fresh_future() {
    let limits = lanes(20.0, 20, 0.5);
    let (buckets, decisions) = decide_lanes(
        [None, None],
        limits,
        (NOW, NOW),
        usize::MAX,
        &asked(Lane::Backlog, 1_000),
    );
    // The backlog took every slot free now (its own and fresh's) and
    // booked its own lane's future only: 980 slots at 10/s.
    assert_eq!(sent_now(&decisions), 20);
    assert_eq!(
        decisions.last(),
        Some(&Decision::Reserve {
            at_us: NOW + 980 * S / 10
        })
    );
    let (_, decisions) = decide_lanes(
        buckets.map(Some),
        limits,
        (NOW, NOW),
        usize::MAX,
        &asked(Lane::Fresh, 1),
    );
    // Fresh's next slot is one fresh interval on, not after the backlog.
    assert_eq!(
        decisions,
        vec![Decision::Reserve {
            at_us: NOW + S / 10
        }]
    );
}

#[test]
fn an_idle_lane_lends_its_now_slots_and_a_busy_one_does_not() {
    let limits = lanes(20.0, 20, 0.5);
    let (buckets, decisions) = decide_lanes(
        [None, None],
        limits,
        (NOW, NOW),
        usize::MAX,
        &asked(Lane::Fresh, 30),
    );
    assert_eq!(sent_now(&decisions), 20);
    // Both lanes spent: a backlog gets no slot now, and books its own.
    let (_, decisions) = decide_lanes(
        buckets.map(Some),
        limits,
        (NOW, NOW),
        usize::MAX,
        &asked(Lane::Backlog, 1),
    );
    assert_eq!(
        decisions,
        vec![Decision::Reserve {
            at_us: NOW + S / 10
        }]
    );
}

#[test]
fn a_borrowed_slot_counts_against_the_room() {
    let limits = lanes(20.0, 20, 0.5);
    let (_, decisions) = decide_lanes(
        [None, None],
        limits,
        (NOW, NOW),
        12,
        &asked(Lane::Backlog, 30),
    );
    assert_eq!(sent_now(&decisions), 12);
}

#[test]
fn a_burst_of_one_stays_one_across_both_lanes() {
    let limits = lanes(20.0, 1, 0.5);
    let held = [asked(Lane::Backlog, 2), asked(Lane::Fresh, 2)].concat();
    let (_, decisions) = decide_lanes([None, None], limits, (NOW, NOW), usize::MAX, &held);
    assert_eq!(sent_now(&decisions), 1, "{decisions:?}");
}
