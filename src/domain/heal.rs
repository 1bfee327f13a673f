//! Which parts of the due index still owe a heal after a failover
//! (DESIGN.md §13): a new epoch means a promoted replica may lack the
//! recent writes, so the recent rows are re-added to every part. A part is
//! healed only once its re-adding succeeded; a part whose master is still
//! down (a cluster counts a new epoch at the first success on any shard)
//! stays owed and is tried again at the next tick, until its replica is
//! promoted and answers.

use std::collections::BTreeSet;

/// The heal bookkeeping of one housekeeper.
#[derive(Debug)]
pub struct Healing {
    epoch: u64,
    owed: BTreeSet<usize>,
}

impl Healing {
    /// Starts at the index's epoch now: nothing owed.
    pub fn new(epoch: u64) -> Self {
        Self {
            epoch,
            owed: BTreeSet::new(),
        }
    }

    /// Notes the index's epoch now, for an index of `parts` parts (0: one
    /// part). A change after the first connection (epoch 0: none yet, so
    /// nothing lost) owes every part a heal; true when it did.
    pub fn observe(&mut self, epoch: u64, parts: usize) -> bool {
        if epoch == self.epoch {
            return false;
        }
        let before = std::mem::replace(&mut self.epoch, epoch);
        if before == 0 {
            return false;
        }
        self.owed.extend(0..parts.max(1));
        true
    }

    /// The parts still to heal, in order.
    pub fn owed(&self) -> Vec<usize> {
        self.owed.iter().copied().collect()
    }

    /// `part`'s recent rows are re-added: it owes nothing until the next
    /// epoch.
    pub fn healed(&mut self, part: usize) {
        self.owed.remove(&part);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_connection_owes_nothing() {
        let mut healing = Healing::new(0);
        assert!(!healing.observe(1, 4));
        assert!(healing.owed().is_empty());
    }

    #[test]
    fn a_new_epoch_owes_every_part_until_each_is_healed() {
        let mut healing = Healing::new(1);
        assert!(healing.observe(2, 4));
        assert_eq!(healing.owed(), [0, 1, 2, 3]);
        // Shard 2's master is still down: the others heal now.
        for part in [0, 1, 3] {
            healing.healed(part);
        }
        assert_eq!(healing.owed(), [2]);
        // The same epoch again changes nothing: shard 2 stays owed.
        assert!(!healing.observe(2, 4));
        assert_eq!(healing.owed(), [2]);
        healing.healed(2);
        assert!(healing.owed().is_empty());
    }

    #[test]
    fn another_epoch_while_a_part_is_owed_owes_them_all_again() {
        let mut healing = Healing::new(3);
        healing.observe(4, 2);
        healing.healed(0);
        assert!(healing.observe(5, 2));
        assert_eq!(healing.owed(), [0, 1]);
    }

    #[test]
    fn an_index_of_one_part_owes_part_zero() {
        let mut healing = Healing::new(1);
        healing.observe(2, 0);
        assert_eq!(healing.owed(), [0]);
    }
}
