//! Ids ordered by a time: the in-process index's due set and its leases
//! are each one of these. An ordered set of (time, id), to take the
//! earliest, beside a map id → time, to find and move one id; 24-byte keys,
//! nothing allocated per entry but the containers' own room.

use std::collections::{BTreeSet, HashMap};

use uuid::Uuid;

/// Ids, each at one time (unix ms).
#[derive(Debug, Default)]
pub(super) struct Schedule {
    order: BTreeSet<(i64, Uuid)>,
    at: HashMap<Uuid, i64>,
}

impl Schedule {
    pub(super) fn len(&self) -> usize {
        self.at.len()
    }

    /// The time `id` is at, if it is here.
    pub(super) fn get(&self, id: &Uuid) -> Option<i64> {
        self.at.get(id).copied()
    }

    pub(super) fn contains(&self, id: &Uuid) -> bool {
        self.at.contains_key(id)
    }

    /// Puts `id` at `at`, moving it if it was at another time.
    pub(super) fn insert(&mut self, id: Uuid, at: i64) {
        match self.at.insert(id, at) {
            Some(old) if old == at => return,
            Some(old) => {
                self.order.remove(&(old, id));
            }
            None => {}
        }
        self.order.insert((at, id));
    }

    /// Takes `id` out; returns the time it was at.
    pub(super) fn remove(&mut self, id: &Uuid) -> Option<i64> {
        let at = self.at.remove(id)?;
        self.order.remove(&(at, *id));
        Some(at)
    }

    /// The earliest time of all.
    pub(super) fn first(&self) -> Option<i64> {
        self.order.first().map(|(at, _)| *at)
    }

    /// Takes out the earliest id if its time is `by` or before.
    pub(super) fn pop_by(&mut self, by: i64) -> Option<Uuid> {
        let &(at, id) = self.order.first()?;
        if at > by {
            return None;
        }
        self.order.pop_first();
        self.at.remove(&id);
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::Schedule;
    use uuid::Uuid;

    #[test]
    fn an_id_moved_to_another_time_is_there_once_and_comes_out_at_its_new_time() {
        let mut schedule = Schedule::default();
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        schedule.insert(a, 10);
        schedule.insert(b, 20);
        schedule.insert(a, 30);
        schedule.insert(a, 30);
        assert_eq!(schedule.len(), 2);
        assert_eq!(schedule.get(&a), Some(30));
        assert_eq!(schedule.first(), Some(20));
        assert_eq!(schedule.pop_by(25), Some(b));
        assert_eq!(schedule.pop_by(25), None);
        assert_eq!(schedule.pop_by(30), Some(a));
        assert_eq!(schedule.len(), 0);
        assert_eq!(schedule.first(), None);
    }

    #[test]
    fn ids_at_the_same_time_come_out_in_id_order_and_a_removed_one_not_at_all() {
        let mut schedule = Schedule::default();
        for n in [3u128, 1, 2] {
            schedule.insert(Uuid::from_u128(n), 5);
        }
        assert_eq!(schedule.remove(&Uuid::from_u128(2)), Some(5));
        assert_eq!(schedule.remove(&Uuid::from_u128(2)), None);
        assert_eq!(schedule.pop_by(5), Some(Uuid::from_u128(1)));
        assert_eq!(schedule.pop_by(5), Some(Uuid::from_u128(3)));
        assert!(!schedule.contains(&Uuid::from_u128(3)));
    }
}
