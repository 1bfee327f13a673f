//! Which shard of a sharded due index (Redis Cluster, docs/design.md §13) holds
//! a notification, and the order a claim visits the shards in.
//!
//! The shard is a hash of the id's 16 bytes (64-bit FNV-1a) modulo the
//! shard count. It must never change for a deployment: every process and
//! every build must put an id where the others look for it, so the hash is
//! pinned by the tests below, and the shard count is stored beside the
//! index (`due::redis::layout`), which refuses a process configured with
//! another. A hash of every byte, not the id's time: ids made in the same
//! millisecond (a batch) spread over all shards, so one busy moment loads
//! every master, not one.

use uuid::Uuid;

/// Most shards a deployment may have (`redis.shards`).
pub const MAX_SHARDS: u16 = 1024;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The shard of `id` among `shards` (1 to `MAX_SHARDS`; 0 is taken as 1).
pub fn shard_of(id: &Uuid, shards: u16) -> u16 {
    let hash = id.as_bytes().iter().fold(FNV_OFFSET, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(FNV_PRIME)
    });
    (hash % u64::from(shards.max(1))) as u16
}

/// The shards a claim visits, in order: all of them once, from `start`
/// round. Each claim starts one further than the last, so a shard with a
/// backlog cannot keep the others waiting: within `shards` claims every
/// shard has been first once.
pub fn visit_order(start: usize, shards: usize) -> impl Iterator<Item = usize> {
    let shards = shards.max(1);
    (0..shards).map(move |step| (start + step) % shards)
}

/// How long claims pass over a shard after `failures` failed calls in a
/// row (a dead master costs a claim its timeout until the failover): 1 s,
/// doubling up to 4 s; a success starts again from none.
pub fn claim_backoff(failures: u32) -> std::time::Duration {
    match failures {
        0 => std::time::Duration::ZERO,
        n => std::time::Duration::from_secs(1 << (n - 1).min(2)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values every hookd build must agree on: changing the hash would
    /// put a running deployment's ids in shards where no process looks.
    #[test]
    fn the_shard_of_an_id_is_pinned_for_every_build() {
        let nil = Uuid::nil();
        let max = Uuid::max();
        let some = Uuid::parse_str("01936a1e-7c2b-7000-8a3f-5b2c1d0e9f88").unwrap();
        let hashes: Vec<u16> = [nil, max, some]
            .iter()
            .map(|id| shard_of(id, MAX_SHARDS))
            .collect();
        // FNV-1a 64 of the 16 bytes, as any other implementation computes it.
        assert_eq!(hashes, vec![101, 85, 732]);
        assert_eq!(shard_of(&some, 16), 12);
        assert_eq!(shard_of(&some, 1), 0);
        assert_eq!(shard_of(&some, 0), 0, "no shards is one");
    }

    #[test]
    fn ids_made_together_spread_evenly_over_the_shards() {
        let mut counts = [0u32; 16];
        for _ in 0..16_000 {
            counts[usize::from(shard_of(&crate::domain::id::new_id(), 16))] += 1;
        }
        assert!(counts.iter().all(|n| (800..1200).contains(n)), "{counts:?}");
    }

    #[test]
    fn a_claim_visits_every_shard_once_from_where_it_starts() {
        assert_eq!(visit_order(2, 4).collect::<Vec<_>>(), vec![2, 3, 0, 1]);
        assert_eq!(visit_order(5, 4).collect::<Vec<_>>(), vec![1, 2, 3, 0]);
        assert_eq!(visit_order(0, 1).collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn a_failing_shard_is_passed_over_longer_each_time_up_to_four_seconds() {
        let secs: Vec<u64> = (0..6).map(|n| claim_backoff(n).as_secs()).collect();
        assert_eq!(secs, vec![0, 1, 2, 4, 4, 4]);
    }
}
