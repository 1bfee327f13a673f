//! Notification and endpoint ids: UUIDv7 (RFC 9562), time-ordered, with 64
//! bits after the time, so that an id fits in 14 bytes where it is stored by
//! the million (the Redis due index; see `due::member`).
//!
//! A UUIDv7 has 48 bits of unix milliseconds, 4 version bits, 12 bits
//! `rand_a`, 2 variant bits and 62 bits `rand_b`. hookd keeps the top 10 bits
//! of `rand_a` at zero: the 4 version and 2 variant bits are fixed anyway, so
//! the other 112 bits (48 of time, 64 after it) are the whole id. RFC 9562
//! leaves `rand_a` to the implementation.
//!
//! The 64 bits start each millisecond at a random value below 2^63, and a
//! process's later ids in the same millisecond count up from it by random
//! steps of 1 to 2^32, so they still sort in creation order (newest-first
//! listings rely on it). Two processes colliding in one millisecond need the
//! same 63 random bits; PostgreSQL's primary key refuses a collision anyway.

use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use uuid::Uuid;

/// Bytes of a compact id.
pub const COMPACT_LEN: usize = 14;

/// The last id made by this process: (unix ms, random bits).
static LAST: Mutex<(u64, u64)> = Mutex::new((0, 0));

/// A new, compact, time-ordered id.
pub fn new_id() -> Uuid {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
    let (ms, random) = next(*last, now_ms, rand::random());
    *last = (ms, random);
    from_parts(ms, random)
}

/// A pull lease's id: 122 random bits (UUIDv4). Unlike `new_id`, which
/// counts up within a millisecond, it tells nothing of the leases taken
/// beside it: a receipt is proof of holding its lease.
pub fn new_lease_id() -> Uuid {
    uuid::Builder::from_random_bytes(rand::random()).into_uuid()
}

/// The id after `last` at `now_ms`. A new millisecond starts from a random
/// value below 2^63, leaving room to count up; within the same millisecond
/// (or when the clock stepped back) the count goes up by a random step.
fn next(last: (u64, u64), now_ms: u64, fresh: u64) -> (u64, u64) {
    let (last_ms, last_random) = last;
    if now_ms > last_ms {
        return (now_ms, fresh >> 1);
    }
    let step = 1 + (fresh & 0xffff_ffff);
    match last_random.checked_add(step) {
        Some(random) => (last_ms, random),
        None => (last_ms + 1, fresh >> 1),
    }
}

fn from_parts(ms: u64, random: u64) -> Uuid {
    let mut bytes = [0u8; 16];
    bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    bytes[6] = 0x70;
    bytes[7] = (random >> 62) as u8;
    bytes[8] = 0x80 | ((random >> 56) as u8 & 0x3f);
    bytes[9..].copy_from_slice(&random.to_be_bytes()[1..]);
    Uuid::from_bytes(bytes)
}

/// The smallest UUID of millisecond `ms` (unix time): every id made in an
/// earlier millisecond sorts below it, every id made in it or later does not.
/// A bound for walking the primary key by creation time.
pub fn first_of_ms(ms: i64) -> Uuid {
    let mut bytes = [0u8; 16];
    bytes[..6].copy_from_slice(&(ms.max(0) as u64).to_be_bytes()[2..]);
    Uuid::from_bytes(bytes)
}

/// The 14 bytes that hold `id`, if it is a compact id (every id hookd makes
/// is; ids from elsewhere may not be).
pub fn compact(id: &Uuid) -> Option<[u8; COMPACT_LEN]> {
    let b = id.as_bytes();
    if b[6] != 0x70 || b[7] & 0xfc != 0 || b[8] & 0xc0 != 0x80 {
        return None;
    }
    let mut random = [0u8; 8];
    random[0] = (b[7] << 6) | (b[8] & 0x3f);
    random[1..].copy_from_slice(&b[9..]);
    let mut out = [0u8; COMPACT_LEN];
    out[..6].copy_from_slice(&b[..6]);
    out[6..].copy_from_slice(&random);
    Some(out)
}

/// The id that `compact` made these bytes from.
pub fn expand(bytes: &[u8; COMPACT_LEN]) -> Uuid {
    let mut ms = [0u8; 8];
    ms[2..].copy_from_slice(&bytes[..6]);
    let mut random = [0u8; 8];
    random.copy_from_slice(&bytes[6..]);
    from_parts(u64::from_be_bytes(ms), u64::from_be_bytes(random))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_id_is_a_uuid_v7_with_the_current_millisecond() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let id = new_id();
        assert_eq!(id.get_version_num(), 7);
        assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        let (secs, nanos) = id.get_timestamp().unwrap().to_unix();
        let ms = secs * 1000 + u64::from(nanos) / 1_000_000;
        assert!(ms >= before.as_millis() as u64 && ms <= before.as_millis() as u64 + 1000);
    }

    #[test]
    fn lease_ids_are_random_uuid_v4s_that_do_not_count_up() {
        let ids: Vec<Uuid> = (0..1000).map(|_| new_lease_id()).collect();
        assert!(ids.iter().all(|id| id.get_version_num() == 4));
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        // Ids made in a row are not neighbours, as `new_id`'s are.
        assert!(ids
            .windows(2)
            .all(|w| w[0].as_u128().abs_diff(w[1].as_u128()) > 1 << 64));
    }

    #[test]
    fn ids_made_in_a_row_are_distinct_and_ascending() {
        let ids: Vec<Uuid> = (0..10_000).map(|_| new_id()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn every_new_id_compacts_to_fourteen_bytes_and_back() {
        for _ in 0..1000 {
            let id = new_id();
            let bytes = compact(&id).expect("hookd's ids are compact");
            assert_eq!(expand(&bytes), id);
        }
        for (ms, random) in [(0, 0), (u64::MAX >> 16, u64::MAX), (1, 1 << 63)] {
            let id = from_parts(ms, random);
            assert_eq!(expand(&compact(&id).unwrap()), id);
        }
    }

    #[test]
    fn a_random_v4_or_a_full_v7_uuid_is_not_compact() {
        assert_eq!(
            compact(&Uuid::parse_str("550e8400-e29b-41d4-a716-446655440000").unwrap()),
            None
        );
        assert_eq!(
            compact(&Uuid::parse_str("01a2018b-9ae4-7432-85bb-4e0096803faa").unwrap()),
            None
        );
    }

    #[test]
    fn ids_made_before_a_time_sort_below_its_first_id_and_later_ones_above() {
        let ms = 1_795_000_000_123_i64;
        let id_at = |ms: i64| {
            let ts = uuid::Timestamp::from_unix(
                uuid::NoContext,
                (ms / 1000) as u64,
                ((ms % 1000) * 1_000_000) as u32,
            );
            Uuid::new_v7(ts)
        };
        let bound = first_of_ms(ms + 1);
        for _ in 0..100 {
            assert!(id_at(ms) < bound);
            assert!(id_at(ms - 1) < bound);
            assert!(id_at(ms + 1) > bound);
        }
    }

    #[test]
    fn the_count_goes_up_within_a_millisecond_and_past_a_step_back_of_the_clock() {
        assert_eq!(next((5, 100), 6, 10), (6, 5));
        assert_eq!(next((5, 100), 5, 9), (5, 110));
        assert_eq!(next((5, 100), 4, 0), (5, 101));
        assert_eq!(next((5, u64::MAX), 5, 8), (6, 4));
    }
}
