use super::*;

const S: i64 = 1_000_000;
const NOW: i64 = 1_700_000_000 * S;
/// The simulated dispatcher's claim interval.
const TICK: i64 = 10_000;

fn limit(per_second: f64, burst: u32) -> RateLimit {
    RateLimit::new(per_second, burst).unwrap()
}

fn lanes(per_second: f64, burst: u32, share: f64) -> [RateLimit; 2] {
    limit(per_second, burst).lanes(share).unwrap()
}

fn asked(lane: Lane, n: usize) -> Vec<(Lane, Option<Reservation>)> {
    vec![(lane, None); n]
}

fn decisions(decided: &[LaneDecision]) -> Vec<Decision> {
    decided.iter().map(|(decision, _)| *decision).collect()
}

/// `decide_lanes` at 20/s, a burst of 20, half for fresh, at `now`.
fn twenty_half_fresh(
    buckets: [Option<Bucket>; 2],
    now: i64,
    held: &[(Lane, Option<Reservation>)],
) -> ([Bucket; 2], Vec<LaneDecision>) {
    decide_lanes(buckets, lanes(20.0, 20, 0.5), (now, now), usize::MAX, held)
}

fn sent_now(decided: &[LaneDecision]) -> usize {
    decided
        .iter()
        .filter(|(d, _)| matches!(d, Decision::Send { at_us } if *at_us == NOW))
        .count()
}

/// A dispatcher in miniature, `ticks` claims 10 ms apart: each decides
/// together the notifications whose slot has come (claimed `ahead_us`
/// early, as the claim's horizon does) and those `arrive(tick)` brings,
/// with `room(tick)` sends at most. What is not sent comes back at its
/// slot holding its reservation.
struct Sim {
    limits: [RateLimit; 2],
    buckets: [Option<Bucket>; 2],
    /// Waiting: the lane, the reservation held, when it comes back.
    parked: Vec<(Lane, Option<Reservation>, i64)>,
    /// Every send: when, and its lane.
    sent: Vec<(i64, Lane)>,
    /// Notifications that came back holding a reservation and were given
    /// another slot: their reservation was void (taken back).
    decided_again: usize,
}

impl Sim {
    fn new(limits: [RateLimit; 2]) -> Self {
        Self {
            limits,
            buckets: [None, None],
            parked: Vec::new(),
            sent: Vec::new(),
            decided_again: 0,
        }
    }

    fn run(
        &mut self,
        ticks: std::ops::Range<i64>,
        ahead_us: i64,
        room: impl Fn(i64) -> usize,
        arrive: impl Fn(i64) -> Vec<Lane>,
    ) {
        for tick in ticks {
            let now = NOW + tick * TICK;
            let due_by = now + ahead_us;
            self.parked.sort_by_key(|(_, _, back)| *back);
            let back = self.parked.partition_point(|(_, _, at)| *at <= due_by);
            let mut held: Vec<(Lane, Option<Reservation>)> = self
                .parked
                .drain(..back)
                .map(|(lane, reservation, _)| (lane, reservation))
                .collect();
            held.extend(arrive(tick).into_iter().map(|lane| (lane, None)));
            let (kept, decided) = decide_lanes(
                self.buckets.clone(),
                self.limits,
                (now, due_by),
                room(tick),
                &held,
            );
            for ((lane, held), (decision, reservation)) in held.iter().zip(decided) {
                match decision {
                    Decision::Send { at_us } => {
                        assert!(at_us >= now && at_us <= due_by, "{decision:?} at {now}");
                        if let Some(held) = held {
                            self.decided_again += usize::from(held.at_us != at_us);
                        }
                        self.sent.push((at_us, *lane));
                    }
                    Decision::Reserve { at_us } => {
                        self.decided_again += usize::from(held.is_some());
                        self.parked
                            .push((*lane, reservation, at_us.max(now + TICK)));
                    }
                    Decision::Wait { at_us } => {
                        self.parked.push((*lane, *held, at_us.max(now + TICK)));
                    }
                }
            }
            self.buckets = kept.map(Some);
        }
    }

    /// Sends of `lane` (any if none) in `[from, to)` seconds from NOW.
    fn sent(&self, lane: Option<Lane>, (from, to): (i64, i64)) -> usize {
        self.sent
            .iter()
            .filter(|(_, l)| lane.is_none_or(|lane| lane == *l))
            .filter(|(at, _)| (NOW + from * S..NOW + to * S).contains(at))
            .count()
    }

    /// Over any window of w seconds, at most `rate · w` sends plus the
    /// burst.
    fn never_past(&self, rate: f64, burst: u32) {
        let mut times: Vec<i64> = self.sent.iter().map(|(at, _)| *at).collect();
        times.sort_unstable();
        for (i, start) in times.iter().enumerate() {
            for w in [1, 5, 20] {
                let within = times[i..]
                    .iter()
                    .take_while(|t| **t < start + w * S)
                    .count();
                let most = (rate * w as f64).ceil() as usize + burst as usize;
                assert!(within <= most, "{within} sent in {w} s from {start}");
            }
        }
    }
}

fn all(_: i64) -> usize {
    usize::MAX
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

/// `lane` alone, `arrive(tick)` of it a tick, under several shares: 10 s
/// at 20/s and the burst of 2 is 202, give or take a slot.
fn alone_it_gets_the_whole_rate(lane: Lane, arrive: impl Fn(i64) -> usize) {
    for share in [0.1, 0.5, 0.9] {
        let mut sim = Sim::new(lanes(20.0, 2, share));
        sim.run(0..1_000, 0, all, |tick| vec![lane; arrive(tick)]);
        let sent = sim.sent(Some(lane), (0, 10));
        assert!(
            sent >= 199,
            "{lane:?} at share {share}: {sent} sent in 10 s"
        );
        sim.never_past(20.0, 2);
    }
}

#[test]
fn a_backlog_alone_drains_at_the_whole_rate_whatever_the_share() {
    alone_it_gets_the_whole_rate(Lane::Backlog, |tick| if tick == 0 { 400 } else { 0 });
}

#[test]
fn fresh_alone_goes_out_at_the_whole_rate_whatever_the_share() {
    // 33 a second arriving, more than the rate.
    alone_it_gets_the_whole_rate(Lane::Fresh, |tick| usize::from(tick % 3 == 0));
}

#[test]
fn both_busy_each_lane_keeps_its_share_though_the_backlog_booked_far_ahead_first() {
    for share in [0.25, 0.5, 0.75] {
        let mut sim = Sim::new(lanes(20.0, 20, share));
        // 1,000 retries book 50 s ahead; fresh ones, 33 a second, from 1 s.
        sim.run(0..3_000, 0, all, |tick| match tick {
            0 => vec![Lane::Backlog; 1_000],
            100.. if tick % 3 == 0 => vec![Lane::Fresh],
            _ => Vec::new(),
        });
        let (fresh, backlog) = (
            sim.sent(Some(Lane::Fresh), (2, 30)),
            sim.sent(Some(Lane::Backlog), (2, 30)),
        );
        // 28 s at 20/s is 560: each lane's share of it, give or take.
        let (fresh_share, backlog_share) = (560.0 * share, 560.0 * (1.0 - share));
        assert!(
            fresh as f64 >= fresh_share - 3.0,
            "share {share}: fresh {fresh} < {fresh_share}"
        );
        assert!(
            backlog as f64 >= backlog_share - 3.0,
            "share {share}: backlog {backlog} < {backlog_share}"
        );
        assert!(sim.decided_again > 0, "share {share}: nothing taken back");
        sim.never_past(20.0, 20);
    }
}

#[test]
fn whatever_the_interleaving_the_two_lanes_never_pass_the_rate() {
    // A small deterministic generator: phases of 1.5 s, each with its own
    // mix of fresh and backlog arrivals (none, a trickle, a flood), the
    // claim's horizon and the room varying.
    let random = |n: i64| -> usize {
        let x = (n as u64)
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) as usize
    };
    for (per_second, burst, share) in [(20.0, 20, 0.5), (20.0, 3, 0.3), (7.0, 1, 0.8)] {
        let mut sim = Sim::new(lanes(per_second, burst, share));
        sim.run(
            0..6_000,
            30_000,
            |tick| random(tick) % 6,
            |tick| {
                let phase = random(tick / 150 + 7);
                let flow = |mix: usize| match mix % 4 {
                    0 => 0,
                    1 => usize::from(random(tick) % 10 == 0),
                    2 => random(tick + 1) % 2,
                    _ => usize::from(tick % 150 == 0) * 200,
                };
                let mut arrivals = vec![Lane::Fresh; flow(phase)];
                arrivals.extend(vec![Lane::Backlog; flow(phase / 4)]);
                arrivals
            },
        );
        // Busy enough to press on the limit: more than half of 60 s of it.
        let sent = sim.sent.len();
        assert!(sent as f64 > per_second * 30.0, "{sent} sent");
        assert!(sim.decided_again > 0, "nothing taken back");
        sim.never_past(per_second, burst);
    }
}

#[test]
fn a_backlog_booked_far_ahead_gives_fresh_its_future_back() {
    let (buckets, decided) = twenty_half_fresh([None, None], NOW, &asked(Lane::Backlog, 1_000));
    // Both bursts now, then its own slots and fresh's in turn, at 20/s.
    assert_eq!(sent_now(&decided), 20);
    assert_eq!(
        decided.last().map(|(d, _)| *d),
        Some(Decision::Reserve {
            at_us: NOW + 490 * S / 10
        })
    );
    let borrowed = decided
        .iter()
        .find_map(|(_, r)| r.filter(|r| r.lent.is_some()))
        .unwrap();
    let (buckets, decided) = twenty_half_fresh(buckets.map(Some), NOW, &asked(Lane::Fresh, 1));
    // Fresh's next slot is one fresh interval after the burst lent, not
    // after the backlog.
    assert_eq!(
        decisions(&decided),
        vec![Decision::Reserve {
            at_us: NOW + S / 10
        }]
    );
    // What the backlog borrowed ahead is void: back at its slot, it takes
    // another.
    let at = borrowed.at_us;
    let (_, decided) = twenty_half_fresh(buckets.map(Some), at, &[(Lane::Backlog, Some(borrowed))]);
    assert!(matches!(decided[0].0, Decision::Reserve { at_us } if at_us > at));
}

#[test]
fn an_own_reservation_outlives_the_other_lane_taking_its_future_back() {
    let (buckets, decided) = twenty_half_fresh([None, None], NOW, &asked(Lane::Backlog, 40));
    let own = decided
        .iter()
        .find_map(|(_, r)| r.filter(|r| r.lent.is_none()))
        .unwrap();
    let (buckets, _) = twenty_half_fresh(buckets.map(Some), NOW, &asked(Lane::Fresh, 5));
    let (_, decided) =
        twenty_half_fresh(buckets.map(Some), own.at_us, &[(Lane::Backlog, Some(own))]);
    assert_eq!(
        decisions(&decided),
        vec![Decision::Send { at_us: own.at_us }]
    );
}

#[test]
fn a_borrowed_slot_counts_against_the_room() {
    let limits = lanes(20.0, 20, 0.5);
    let (_, decided) = decide_lanes(
        [None, None],
        limits,
        (NOW, NOW),
        12,
        &asked(Lane::Backlog, 30),
    );
    assert_eq!(sent_now(&decided), 12);
}

#[test]
fn a_burst_of_one_stays_one_across_both_lanes() {
    let limits = lanes(20.0, 1, 0.5);
    let held = [asked(Lane::Backlog, 2), asked(Lane::Fresh, 2)].concat();
    let (_, decided) = decide_lanes([None, None], limits, (NOW, NOW), usize::MAX, &held);
    assert_eq!(sent_now(&decided), 1, "{decided:?}");
}
