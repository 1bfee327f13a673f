//! What one group commit writes: notifications and events (with their
//! deliveries), in one transaction, so a commit is one fsync however many
//! requests it answers.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::events::{EventInserted, NewEvent};
use super::notifications::{Inserted, NewNotification};

/// Rows to commit together.
#[derive(Debug, Default)]
pub struct Writes {
    pub notifications: Vec<NewNotification>,
    pub events: Vec<NewEvent>,
    /// Also read each created notification's (and event delivery's)
    /// endpoint version (`Committed::endpoint_versions`): the committer
    /// hands these rows to this process's dispatcher, which must know
    /// whether its prepared endpoint is current. Costs an index probe per
    /// row, so it is asked for only then.
    pub endpoint_versions: bool,
}

/// How many of each kind one request put into a `Writes`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    notifications: usize,
    events: usize,
}

/// What became of each row, in the order given.
#[derive(Debug, Default)]
pub struct Committed {
    pub notifications: Vec<Inserted>,
    pub events: Vec<EventInserted>,
    /// Each created notification's (or event delivery's) endpoint version
    /// (its row's `version`), by notification id, when
    /// `Writes::endpoint_versions` asked for it.
    pub endpoint_versions: HashMap<Uuid, i64>,
}

impl Writes {
    pub fn is_empty(&self) -> bool {
        self.notifications.is_empty() && self.events.is_empty()
    }

    /// Rows this writes: notifications, events and their deliveries.
    pub fn rows(&self) -> usize {
        self.notifications.len()
            + self
                .events
                .iter()
                .map(|e| 1 + e.deliveries.len())
                .sum::<usize>()
    }

    pub fn counts(&self) -> Counts {
        Counts {
            notifications: self.notifications.len(),
            events: self.events.len(),
        }
    }

    /// Whether a row carries a business key, and so may meet an existing
    /// row that the commit must then read.
    #[cfg(feature = "server")]
    pub(crate) fn keyed(&self) -> bool {
        self.notifications.iter().any(|n| n.key.is_some())
            || self.events.iter().any(|e| e.key.is_some())
    }

    /// Whether a row takes a place in its key's order: its commit then
    /// holds its key's row from the place's read to its write
    /// (`store::ordering`), which takes a transaction.
    #[cfg(feature = "server")]
    pub(crate) fn ordered(&self) -> bool {
        self.notifications
            .iter()
            .any(|n| n.ordered && n.order_key.is_some())
            || self
                .events
                .iter()
                .any(|e| e.order_key.is_some() && e.deliveries.iter().any(|d| d.ordered))
    }

    pub fn append(&mut self, other: Writes) {
        self.notifications.extend(other.notifications);
        self.events.extend(other.events);
    }
}

impl Committed {
    /// Every push notification the commit created, with when it is due:
    /// what the due index gets. One behind an earlier one of its key is
    /// not indexed until that one ends (`store::ordering`).
    pub fn due(&self) -> Vec<(Uuid, DateTime<Utc>)> {
        let singles = self.notifications.iter().filter_map(|r| match r {
            Inserted::Created(n) if !n.pull && n.behind.is_none() => {
                n.next_attempt_at.map(|at| (n.id, at))
            }
            _ => None,
        });
        let deliveries = self.events.iter().flat_map(|r| match r {
            EventInserted::Created { push, .. } => push.as_slice(),
            _ => &[],
        });
        singles
            .chain(
                deliveries
                    .filter(|d| d.place.behind.is_none())
                    .map(|d| (d.id, d.next_attempt_at)),
            )
            .collect()
    }

    /// The pull endpoints the commit gave new notifications to: their
    /// waiting consumers are woken.
    pub fn pulled(&self) -> Vec<Uuid> {
        let singles = self.notifications.iter().filter_map(|r| match r {
            Inserted::Created(n) if n.pull => Some(n.endpoint_id),
            _ => None,
        });
        let deliveries = self.events.iter().flat_map(|r| match r {
            EventInserted::Created { pulled, .. } => pulled.as_slice(),
            _ => &[],
        });
        let mut endpoints: Vec<Uuid> = singles.chain(deliveries.copied()).collect();
        endpoints.sort_unstable();
        endpoints.dedup();
        endpoints
    }

    /// Splits the results back into one `Committed` per request, by the
    /// counts each request put in.
    pub fn split(self, counts: impl Iterator<Item = Counts>) -> impl Iterator<Item = Committed> {
        let mut notifications = self.notifications.into_iter();
        let mut events = self.events.into_iter();
        counts
            .map(move |c| Committed {
                notifications: notifications.by_ref().take(c.notifications).collect(),
                events: events.by_ref().take(c.events).collect(),
                endpoint_versions: HashMap::new(),
            })
            .collect::<Vec<_>>()
            .into_iter()
    }
}
