//! An endpoint's rate limit (`{"per_second": 10, "burst": 20}`) and the
//! rule that enforces it: GCRA, the generic cell rate algorithm, as
//! virtual scheduling. A bucket keeps one time, its TAT (the theoretical
//! arrival time of the next request at the sustained rate); a request at
//! `now` may go at `max(now, TAT − (burst − 1)·T)`, `T = 1 / per_second`,
//! and moves TAT on by `T`.
//!
//! A request that may not go now is not refused: it *reserves* the slot it
//! was given (TAT moved on for it), and comes back at that slot, when it is
//! sent without taking a second slot. So a backlog behind a limit is looked
//! at about twice per notification (once to reserve, once to send), never
//! polled. A reservation names the bucket's *epoch* (when the bucket was
//! started): a change of the limit starts the bucket again, which voids
//! the reservations made under the old one (each takes a slot under the
//! new limit when it comes back).
//!
//! With lanes (`domain::lane`, `decide_lanes`) an endpoint has a bucket
//! per lane, each at its share of the rate; a lane borrows the other's
//! slots when they come first, and takes its own back when it needs them.
//!
//! Times are integer microseconds since the epoch, so that the Redis
//! script (`limiter/redis/gcra.lua`, a line-by-line transcription of
//! `decide`) computes exactly what this does: Lua's numbers hold them
//! exactly.

use std::time::Duration;

use super::lane::Lane;

/// Bounds of `per_second` and `burst`. The smallest rate, one request in
/// 1,000 s, keeps every time the rule computes (burst × interval) far
/// inside the range of an i64 of microseconds, and exact in Lua.
pub const MIN_PER_SECOND: f64 = 0.001;
pub const MAX_PER_SECOND: f64 = 100_000.0;
pub const MAX_BURST: u32 = 100_000;

/// How long a reservation (and a bucket after its last slot) is kept past
/// its time: a notification that comes back later than this (its process
/// died, its claim was late) takes a new slot, which only delays it.
pub const RESERVATION_GRACE: Duration = Duration::from_secs(600);

/// An endpoint's limit: `per_second` sustained, up to `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct RateLimit {
    /// Sustained rate, requests per second: 0.001 (one in 1,000 s) to 100000.
    #[schema(minimum = 0.001, maximum = 100000.0, example = 10.0)]
    pub per_second: f64,
    /// Requests that may go at once after a quiet spell: 1 to 100000.
    #[schema(minimum = 1, maximum = 100000, example = 20)]
    pub burst: u32,
}

/// Which part of a rate limit is out of bounds (the API names the field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RateLimitError {
    #[error("per_second is a number from 0.001 to 100000")]
    PerSecond,
    #[error("burst is a whole number from 1 to 100000")]
    Burst,
}

impl RateLimitError {
    /// The field, as the API names it.
    pub fn field(self) -> &'static str {
        match self {
            Self::PerSecond => "rate_limit.per_second",
            Self::Burst => "rate_limit.burst",
        }
    }
}

impl RateLimit {
    /// A limit within bounds (NaN and infinities are not).
    pub fn new(per_second: f64, burst: u32) -> Result<Self, RateLimitError> {
        if !(per_second.is_finite() && (MIN_PER_SECOND..=MAX_PER_SECOND).contains(&per_second)) {
            return Err(RateLimitError::PerSecond);
        }
        if !(1..=MAX_BURST).contains(&burst) {
            return Err(RateLimitError::Burst);
        }
        Ok(Self { per_second, burst })
    }

    /// The two stored columns: none unless both are there and in bounds
    /// (the databases check the bounds too).
    pub fn stored(per_second: Option<f64>, burst: Option<i32>) -> Option<Self> {
        let burst = u32::try_from(burst?).ok()?;
        Self::new(per_second?, burst).ok()
    }

    /// `T`: microseconds between two requests at the sustained rate,
    /// rounded up (never faster than asked).
    pub fn interval_us(self) -> i64 {
        (1_000_000.0 / self.per_second).ceil() as i64
    }

    /// How far ahead of TAT a request may go: `(burst − 1)·T`. A lane's
    /// burst may be 0 (`lanes`): `−T`, nothing at once, a first slot one
    /// interval on.
    pub fn tolerance_us(self) -> i64 {
        (i64::from(self.burst) - 1) * self.interval_us()
    }

    /// Names the limit in a bucket: a bucket kept under another tag is
    /// started again.
    pub fn tag(self) -> String {
        format!("{}/{}", self.per_second, self.burst)
    }
}

/// A reservation whose slot passed longer ago than the bucket's tolerance
/// and one interval, plus this, is void: its notification takes a new
/// slot. What comes back that late was held elsewhere (an open circuit
/// parks notifications for minutes or hours): honoured, every such slot
/// would go at once, a burst the limit never allowed. Within it, one a
/// busy dispatcher claims late keeps its place in line.
pub const STALE_AFTER_US: i64 = 1_000_000;

/// What a bucket keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    /// The theoretical arrival time of the next request (µs).
    pub tat_us: i64,
    /// When the bucket was started (µs): names its reservations.
    pub epoch_us: i64,
    /// The limit it was kept under (`RateLimit::tag`).
    pub tag: String,
    /// Lanes only (`decide_lanes`): the TAT just after the last slot it
    /// handed as a send, or reserved for its own lane. Past it, a TAT
    /// further on is the lane's future lent to the other lane, which the
    /// lane may take back.
    pub committed_tat_us: i64,
    /// Lanes only: how many times the lane took its lent future back. A
    /// reservation borrowed from this bucket names it, and is void once
    /// it moved on.
    pub lent_generation: i64,
}

/// A slot a notification holds in its endpoint's bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    pub at_us: i64,
    /// The epoch of the bucket it was taken in.
    pub epoch_us: i64,
    /// Lanes only: borrowed from the other lane's bucket, under that
    /// bucket's `lent_generation`; none when held in the notification's
    /// own lane's bucket (or the one bucket of lanes off).
    pub lent: Option<i64>,
}

/// What the rule says of one notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Send at `at_us` (no later than the batch's `due_by`); a reservation
    /// it held is used up.
    Send { at_us: i64 },
    /// Not yet: it now holds the slot at `at_us`; come back then. A slot
    /// by `due_by` means its time has come but the endpoint has no room
    /// (its concurrency cap): it comes back when there is, and is sent on
    /// the slot it holds.
    Reserve { at_us: i64 },
    /// Not yet: it already holds the slot at `at_us` (came back early, or
    /// its time has come and the endpoint has no room).
    Wait { at_us: i64 },
}

impl Decision {
    /// When the notification goes (or comes back), µs.
    pub fn at_us(self) -> i64 {
        match self {
            Self::Send { at_us } | Self::Reserve { at_us } | Self::Wait { at_us } => at_us,
        }
    }
}

/// A bucket under `limit`: the one kept, or a new one from `now_us`.
fn kept(bucket: Option<Bucket>, limit: RateLimit, now_us: i64) -> Bucket {
    let tag = limit.tag();
    match bucket {
        Some(bucket) if bucket.tag == tag => bucket,
        _ => Bucket {
            tat_us: now_us,
            epoch_us: now_us,
            tag,
            committed_tat_us: now_us,
            lent_generation: 0,
        },
    }
}

impl Reservation {
    /// Whether it still holds its slot in `bucket` (kept under `limit`):
    /// taken in this bucket's epoch, not taken back by its lane if
    /// borrowed, and not so long past that honouring it would be a burst
    /// (`STALE_AFTER_US`).
    fn holds(&self, bucket: &Bucket, limit: RateLimit, now_us: i64) -> bool {
        self.epoch_us == bucket.epoch_us
            && self
                .lent
                .is_none_or(|generation| generation == bucket.lent_generation)
            && self.at_us >= now_us - limit.tolerance_us() - limit.interval_us() - STALE_AFTER_US
    }
}

/// Decides, in order, for the notifications of one endpoint a batch would
/// start: `held[i]` is the reservation the i-th holds, if any. `bucket` is
/// the endpoint's bucket (none: never used, or expired). Those whose slot
/// is by `due_by_us` are sent (at their slot, which may be a little after
/// `now_us`: a claim takes what is due a little ahead), up to `room` (what
/// the endpoint's concurrency cap leaves); past it they keep or take
/// their slot, so that no token is spent on a delivery the cap defers.
/// Returns the bucket to keep and a decision per notification; the caller
/// stores a reservation for each `Reserve` and drops the one of each
/// `Send`.
pub fn decide(
    bucket: Option<Bucket>,
    limit: RateLimit,
    (now_us, due_by_us): (i64, i64),
    room: usize,
    held: &[Option<Reservation>],
) -> (Bucket, Vec<Decision>) {
    let (interval, tolerance) = (limit.interval_us(), limit.tolerance_us());
    let mut bucket = kept(bucket, limit, now_us);
    let mut sent = 0;
    let decisions = held
        .iter()
        .map(|held| match held {
            Some(reservation) if reservation.holds(&bucket, limit, now_us) => {
                if reservation.at_us <= due_by_us && sent < room {
                    sent += 1;
                    Decision::Send {
                        at_us: reservation.at_us.max(now_us),
                    }
                } else {
                    Decision::Wait {
                        at_us: reservation.at_us,
                    }
                }
            }
            _ => {
                let base = bucket.tat_us.max(now_us);
                let slot = now_us.max(base - tolerance);
                bucket.tat_us = base + interval;
                if slot <= due_by_us && sent < room {
                    sent += 1;
                    Decision::Send { at_us: slot }
                } else {
                    Decision::Reserve { at_us: slot }
                }
            }
        })
        .collect();
    (bucket, decisions)
}

/// The smallest part of the rate a lane keeps, whatever the share: with
/// `fresh_share = 1` the backlog still drains, at a thousandth of the
/// rate (and whatever fresh leaves idle). A thousandth of the slowest rate
/// keeps the lane's times exact in Lua (`MIN_PER_SECOND`).
pub const LANE_FLOOR: f64 = 0.001;

impl RateLimit {
    /// The limits of the fresh and backlog lanes under `share` (fresh's
    /// part, 0 to 1): `share × per_second` and the rest, each at least
    /// `LANE_FLOOR` of the rate; the burst split the same way, fresh's at
    /// least 1 and the two adding up to the burst (so backlog's may be 0:
    /// nothing at once). Each lane's interval is rounded up, so the two
    /// together never pass `per_second`, nor their bursts `burst`. None
    /// when `share` is 0 (or not a number): lanes are off.
    pub fn lanes(self, share: f64) -> Option<[RateLimit; 2]> {
        if share.is_nan() || share <= 0.0 {
            return None;
        }
        let share = share.clamp(LANE_FLOOR, 1.0 - LANE_FLOOR);
        let fresh_burst = ((f64::from(self.burst) * share).round() as u32).clamp(1, self.burst);
        let backlog_burst = self.burst - fresh_burst;
        Some([
            RateLimit {
                per_second: self.per_second * share,
                burst: fresh_burst,
            },
            RateLimit {
                per_second: self.per_second * (1.0 - share),
                burst: backlog_burst,
            },
        ])
    }
}

/// A decision under lanes, and for a `Reserve` the reservation to keep.
pub type LaneDecision = (Decision, Option<Reservation>);

/// `decide` with lanes (`domain::lane`): `limits` are the lanes' (fresh
/// first, `RateLimit::lanes`), `buckets` their buckets, `held[i]` the lane
/// of the i-th notification and the reservation it holds.
///
/// A notification without a slot takes the earlier of its own lane's next
/// slot and the other lane's (*borrowing*: ties go to its own), now or
/// ahead, and moves that bucket's TAT on. So a lane alone gets the whole
/// rate, its own slots interleaved with borrowed ones, and the two
/// together never pass it: each bucket's slots stay spaced by its own
/// interval. A lane takes its lent future back when it next needs a slot
/// (`reclaim`): the reservations borrowed from it are void then, and
/// their notifications decide again when they come back, so a lane busy
/// again gets its share at once however far ahead the other booked. A
/// send is never taken back: `committed_tat_us` covers every slot sent.
///
/// Returns the buckets to keep (fresh first) and a decision per
/// notification, with the reservation to keep for each `Reserve`.
pub fn decide_lanes(
    buckets: [Option<Bucket>; 2],
    limits: [RateLimit; 2],
    (now_us, due_by_us): (i64, i64),
    room: usize,
    held: &[(Lane, Option<Reservation>)],
) -> ([Bucket; 2], Vec<LaneDecision>) {
    let [fresh, backlog] = buckets;
    let mut buckets = [
        kept(fresh, limits[0], now_us),
        kept(backlog, limits[1], now_us),
    ];
    let mut sent = 0;
    let decisions = held
        .iter()
        .map(|(lane, held)| {
            let (own, other) = (lane.index(), lane.other().index());
            let holding = held.filter(|r| {
                let place = if r.lent.is_some() { other } else { own };
                r.holds(&buckets[place], limits[place], now_us)
            });
            if let Some(reservation) = holding {
                if reservation.at_us > due_by_us || sent >= room {
                    let at_us = reservation.at_us;
                    return (Decision::Wait { at_us }, None);
                }
                sent += 1;
                if reservation.lent.is_some() {
                    // Sent: the lender may no longer take it back. Its TAT
                    // just after this slot was `at + tolerance + interval`
                    // (a slot ahead is `TAT − tolerance`; a slot now, held
                    // for want of room, at most that).
                    let (lender, limit) = (&mut buckets[other], limits[other]);
                    lender.committed_tat_us = lender
                        .committed_tat_us
                        .max(reservation.at_us + limit.tolerance_us() + limit.interval_us());
                }
                let at_us = reservation.at_us.max(now_us);
                return (Decision::Send { at_us }, None);
            }
            reclaim(&mut buckets[own], now_us);
            let next = |place: usize| {
                let base = buckets[place].tat_us.max(now_us);
                now_us.max(base - limits[place].tolerance_us())
            };
            let place = if next(other) < next(own) { other } else { own };
            let at_us = next(place);
            let bucket = &mut buckets[place];
            bucket.tat_us = bucket.tat_us.max(now_us) + limits[place].interval_us();
            let send = at_us <= due_by_us && sent < room;
            if send || place == own {
                bucket.committed_tat_us = bucket.tat_us;
            }
            if send {
                sent += 1;
                return (Decision::Send { at_us }, None);
            }
            let reservation = Reservation {
                at_us,
                epoch_us: bucket.epoch_us,
                lent: (place == other).then_some(bucket.lent_generation),
            };
            (Decision::Reserve { at_us }, Some(reservation))
        })
        .collect();
    (buckets, decisions)
}

/// A lane that needs a slot takes back the future it lent (a TAT past
/// what it committed, and past now): the reservations borrowed from it
/// are void from here (a new `lent_generation`), and its next slot is
/// the one after its own reservations and every send.
fn reclaim(bucket: &mut Bucket, now_us: i64) {
    let committed = bucket.committed_tat_us.max(now_us);
    if bucket.tat_us > committed {
        bucket.lent_generation += 1;
        bucket.tat_us = committed;
    }
}

/// The longest span of an endpoint's slots that one claim takes together
/// (µs), and how many slots a span holds at most (`group_us`).
pub const GROUP_US: i64 = 1_000_000;
pub const GROUP_SLOTS: i64 = 10;

/// The span (µs) a throttled endpoint's slots are grouped by: ten slots,
/// at most a second. A notification throttled to a slot comes back at the
/// start of its group (`park_us`), with the others of that group, and the
/// claim that finds them sends each at its own slot (`horizon_us`): one
/// claim, one load and one limiter call per group instead of per slot,
/// while nothing goes before its slot. A limit of one a second or slower
/// is one slot a group, as before.
pub fn group_us(limit: RateLimit) -> i64 {
    limit
        .interval_us()
        .saturating_mul(GROUP_SLOTS)
        .clamp(1, GROUP_US)
}

/// When a notification throttled to the slot at `slot_us` comes back to be
/// claimed: the start of its group, never after its slot.
pub fn park_us(slot_us: i64, limit: RateLimit) -> i64 {
    slot_us - slot_us.rem_euclid(group_us(limit))
}

/// The time up to which a claim at `now_us` sends the slots of an endpoint
/// with `limit` (`decide`'s `due_by`): the last microsecond of the group
/// `now_us` is in, so that what `park_us` brought back together goes out
/// together, each at its slot; never before the claim's own `due_by_us`.
pub fn horizon_us(limit: RateLimit, now_us: i64, due_by_us: i64) -> i64 {
    due_by_us.max(park_us(now_us, limit) + group_us(limit) - 1)
}

/// How long to keep `bucket` after `now_us` (µs): until its TAT has passed
/// (a bucket whose TAT is past is as good as none) and the grace of its
/// last reservation, so a reservation never outlives the epoch it names.
pub fn bucket_ttl_us(bucket: &Bucket, now_us: i64) -> i64 {
    (bucket.tat_us - now_us).max(0) + grace_us()
}

/// How long to keep a reservation for `at_us` after `now_us` (µs).
pub fn reservation_ttl_us(at_us: i64, now_us: i64) -> i64 {
    (at_us - now_us).max(0) + grace_us()
}

pub fn grace_us() -> i64 {
    RESERVATION_GRACE.as_micros() as i64
}

#[cfg(test)]
#[path = "rate_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "rate_lanes_tests.rs"]
mod lanes_tests;
