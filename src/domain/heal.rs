//! Which parts of the due index still owe a heal after a failover
//! (docs/design.md §13): a new epoch means a promoted replica may lack the
//! recent writes, so the recent rows are re-added to every part. A part is
//! healed only once its re-adding succeeded; a part whose master is still
//! down (a cluster counts a new epoch at the first success on any shard)
//! stays owed and is tried again, until its replica is promoted and
//! answers. Each try reads the recent rows from the store, so a part whose
//! master stays down is tried after 1 s, then 2, 4 and 8, then every 10 s:
//! the store is not read every second for as long as a master is gone.
//!
//! While a master is down the cluster's epoch moves at every tick (the
//! dead shard fails, any other shard's next command succeeds), so a new
//! epoch while a part is still owed keeps that part's wait, and owes the
//! parts already healed again only once `LAST_RETRY` has passed since they
//! were last owed: a second failover during the first is healed within
//! 10 s, and the healthy parts are not re-read every second meanwhile.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The wait before the first retry of a part that failed.
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The longest wait between two tries: a promoted replica heals within it.
const LAST_RETRY: Duration = Duration::from_secs(10);

/// The heal bookkeeping of one housekeeper.
#[derive(Debug)]
pub struct Healing {
    epoch: u64,
    owed: BTreeMap<usize, Retry>,
    /// When every part was last owed.
    all_owed_at: Option<Instant>,
    /// An epoch change not yet turned into owed parts.
    unseen: bool,
}

/// When an owed part is tried next, and the wait after that try if it
/// fails too.
#[derive(Debug, Clone, Copy)]
struct Retry {
    at: Instant,
    wait: Duration,
}

impl Healing {
    /// Starts at the index's epoch now: nothing owed.
    pub fn new(epoch: u64) -> Self {
        Self {
            epoch,
            owed: BTreeMap::new(),
            all_owed_at: None,
            unseen: false,
        }
    }

    /// Notes the index's epoch at `now`, for an index of `parts` parts (0:
    /// one part); called at every tick. A change after the first connection
    /// (epoch 0: none yet, so nothing lost) owes every part a heal, to try
    /// at once (a part still owed keeps its wait); true when it did. While
    /// a part is still owed, a change within `LAST_RETRY` of the last one
    /// that owed every part waits until that part is healed or that time
    /// has passed: it is most likely the same outage, and if it is a second
    /// failover it is healed then.
    pub fn observe(&mut self, epoch: u64, parts: usize, now: Instant) -> bool {
        if epoch != self.epoch {
            let before = std::mem::replace(&mut self.epoch, epoch);
            self.unseen |= before != 0;
        }
        if !self.unseen {
            return false;
        }
        let same_outage = !self.owed.is_empty()
            && self
                .all_owed_at
                .is_some_and(|at| now.saturating_duration_since(at) < LAST_RETRY);
        if same_outage {
            return false;
        }
        for part in 0..parts.max(1) {
            self.owed.entry(part).or_insert(Retry {
                at: now,
                wait: FIRST_RETRY,
            });
        }
        self.all_owed_at = Some(now);
        self.unseen = false;
        true
    }

    /// The parts to try at `now`, in order: owed, and past their wait.
    pub fn owed(&self, now: Instant) -> Vec<usize> {
        self.owed
            .iter()
            .filter(|(_, retry)| retry.at <= now)
            .map(|(part, _)| *part)
            .collect()
    }

    /// `part`'s recent rows are re-added: it owes nothing until the next
    /// epoch.
    pub fn healed(&mut self, part: usize) {
        self.owed.remove(&part);
    }

    /// `part`'s try at `now` failed: it is tried again after its wait,
    /// which doubles for the next failure, up to `LAST_RETRY`.
    pub fn failed(&mut self, part: usize, now: Instant) {
        if let Some(retry) = self.owed.get_mut(&part) {
            retry.at = now + retry.wait;
            retry.wait = (retry.wait * 2).min(LAST_RETRY);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Instant, secs: u64) -> Instant {
        start + Duration::from_secs(secs)
    }

    #[test]
    fn the_first_connection_owes_nothing() {
        let now = Instant::now();
        let mut healing = Healing::new(0);
        assert!(!healing.observe(1, 4, now));
        assert!(healing.owed(now).is_empty());
    }

    #[test]
    fn a_new_epoch_owes_every_part_until_each_is_healed() {
        let now = Instant::now();
        let mut healing = Healing::new(1);
        assert!(healing.observe(2, 4, now));
        assert_eq!(healing.owed(now), [0, 1, 2, 3]);
        // Shard 2's master is still down: the others heal now.
        for part in [0, 1, 3] {
            healing.healed(part);
        }
        healing.failed(2, now);
        assert_eq!(healing.owed(at(now, 1)), [2]);
        // The same epoch again changes nothing: shard 2 stays owed.
        assert!(!healing.observe(2, 4, at(now, 1)));
        assert_eq!(healing.owed(at(now, 1)), [2]);
        healing.healed(2);
        assert!(healing.owed(at(now, 100)).is_empty());
    }

    #[test]
    fn a_part_whose_master_stays_down_is_tried_after_1_2_4_and_8_seconds_then_every_10() {
        let start = Instant::now();
        let mut healing = Healing::new(1);
        healing.observe(2, 2, start);
        healing.healed(0);
        let mut tried = Vec::new();
        // Ticks of a second for a minute: the part fails at every try.
        for second in 0..60 {
            let now = at(start, second);
            if healing.owed(now) == [1] {
                tried.push(second);
                healing.failed(1, now);
            }
        }
        assert_eq!(tried, [0, 1, 3, 7, 15, 25, 35, 45, 55]);
        // Once it answers, one try heals it.
        healing.healed(1);
        assert!(healing.owed(at(start, 65)).is_empty());
    }

    #[test]
    fn an_epoch_moving_at_every_tick_while_a_master_is_down_keeps_the_back_off() {
        let start = Instant::now();
        let mut healing = Healing::new(1);
        let mut epoch = 1;
        let mut tried = Vec::new();
        let mut healthy_tries = 0;
        // A cluster with shard 1's master down for a minute: its failure,
        // then another shard's success, count a new epoch at every tick.
        for second in 0..60 {
            let now = at(start, second);
            epoch += 1;
            healing.observe(epoch, 2, now);
            for part in healing.owed(now) {
                if part == 1 {
                    tried.push(second);
                    healing.failed(1, now);
                } else {
                    healthy_tries += 1;
                    healing.healed(0);
                }
            }
        }
        // The dead shard is still tried at most every 10 s (each 10 s the
        // epoch owes every part again, which does not reset its wait).
        assert_eq!(tried, [0, 1, 3, 7, 15, 25, 35, 45, 55]);
        // The healthy one is re-read once each 10 s, not every second.
        assert!(healthy_tries <= 7, "{healthy_tries}");
    }

    #[test]
    fn a_change_during_an_outage_is_healed_once_the_outage_s_part_is() {
        let now = Instant::now();
        let mut healing = Healing::new(1);
        assert!(healing.observe(2, 2, now));
        healing.healed(0);
        healing.failed(1, now);
        // Shard 0's master fails over too, 3 s in: its change waits.
        assert!(!healing.observe(3, 2, at(now, 3)));
        assert_eq!(healing.owed(at(now, 3)), [1]);
        healing.healed(1);
        // Nothing changes any more, and shard 0 is still owed its heal.
        assert!(healing.observe(3, 2, at(now, 4)));
        assert_eq!(healing.owed(at(now, 4)), [0, 1]);
    }

    #[test]
    fn a_second_failover_after_the_first_healed_owes_every_part_again_at_once() {
        let now = Instant::now();
        let mut healing = Healing::new(3);
        healing.observe(4, 2, now);
        healing.healed(0);
        healing.healed(1);
        assert!(healing.observe(5, 2, at(now, 1)));
        assert_eq!(healing.owed(at(now, 1)), [0, 1]);
    }

    #[test]
    fn an_index_of_one_part_owes_part_zero() {
        let now = Instant::now();
        let mut healing = Healing::new(1);
        healing.observe(2, 0, now);
        assert_eq!(healing.owed(now), [0]);
    }

    #[test]
    fn a_healed_or_unknown_part_that_fails_stays_healed() {
        let now = Instant::now();
        let mut healing = Healing::new(1);
        healing.observe(2, 1, now);
        healing.healed(0);
        healing.failed(0, now);
        healing.failed(7, now);
        assert!(healing.owed(at(now, 100)).is_empty());
    }
}
