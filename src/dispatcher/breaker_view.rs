//! The breaker's view in this process: the circuits it knows, the
//! policies it delivered under, its probes and the failures its recorder
//! has not counted yet; and the rules `Breaker::admit` and
//! `Breaker::stops` read from it.

use std::collections::{HashMap, HashSet};

use uuid::Uuid;

use crate::domain::breaker::{Circuit, Policy};

#[derive(Default)]
pub(super) struct View {
    /// Circuits that are not clean, as last read or written here.
    pub(super) circuits: HashMap<Uuid, Circuit>,
    /// The policy of each endpoint with a breaker this process delivered to.
    pub(super) policies: HashMap<Uuid, Policy>,
    /// Notifications this process sends as probes.
    pub(super) probes: HashSet<Uuid>,
    /// Counts this process's own writes; `written` is the count at each
    /// endpoint's last one. A read of the table that began before a write
    /// does not undo it in the view (the write is newer than what it read).
    pub(super) writes: u64,
    pub(super) written: HashMap<Uuid, u64>,
    /// Endpoints whose breaker is off now while their circuit holds: the
    /// recorder closes it.
    pub(super) turned_off: HashSet<Uuid>,
    /// Per endpoint, the counting failures this process's deliveries had
    /// since their last answer and the recorder has not counted yet.
    pub(super) unrecorded: HashMap<Uuid, i32>,
}

impl View {
    /// Whether the failures in the recorder's queue would open `endpoint`'s
    /// circuit (`stored`, closed or clean): it opens after `failures`
    /// attempts, not after those plus however many went out while they
    /// were written.
    pub(super) fn foresees_opening(
        &self,
        endpoint: Uuid,
        stored: Option<Circuit>,
        policy: &Policy,
    ) -> bool {
        let counted = stored.map_or(0, |c| c.failures);
        let unrecorded = self.unrecorded.get(&endpoint).copied().unwrap_or(0);
        counted + unrecorded >= policy.failures as i32
    }

    /// `Breaker::stops`.
    pub(super) fn stops(&self, endpoint: Uuid, id: Uuid) -> bool {
        if self.probes.contains(&id) {
            return false;
        }
        let stored = self.circuits.get(&endpoint).copied();
        stored.is_some_and(|c| c.holds())
            || self
                .policies
                .get(&endpoint)
                .is_some_and(|policy| self.foresees_opening(endpoint, stored, policy))
    }
}
