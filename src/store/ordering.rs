//! A created notification's place in its key's order (docs/design.md §17):
//! its key's next sequence, and the notification it waits for. Decided
//! here once; each backend reads and writes what it needs
//! (`postgres::ordering`, `sqlite::ordering`) in the create's transaction:
//!
//! 1. each key's row in `order_keys` is written, in (endpoint, key) order:
//!    its `last_sequence` grows by the key's new notifications, its
//!    `tail` becomes the last of them, and the row stays locked until the
//!    commit (PostgreSQL), so two creates of one key never take the same
//!    tail. The write returns the tail before it (`previous_tail`: the
//!    key's pending notification that none waited for, as the last
//!    transaction that wrote the row left it), or else the one that holds
//!    the key (`held_by`, under `ordering_on_failure = "hold"`);
//! 2. `places` numbers the new ones and chains them: the first waits for
//!    that tail, each next one for the one before it.
//!
//! The release is the other half: when a notification of a key becomes
//! final, its successor waits for what it waited for, and one that waits
//! for nothing is owed to the due index. A trigger does it in both
//! backends (`migrations/*ordering.sql`, `*key_tails.sql`), so that no
//! path that ends a notification can forget it; the recorder of a batch
//! of outcomes does the same in two statements of its own in PostgreSQL
//! (`postgres::releasing`). There a success writes nothing on its
//! successors: a pending notification waits while its `behind` names one
//! that has not succeeded (`postgres::ordering::released`, migration
//! `20261210000056`), and succeeded is final, so the success's own write
//! releases them; the recorder only reads them, to index them. A failure
//! or a cancel still passes its successors over, which `hold`, retention
//! and a requeue rely on. An end of the key's tail gives the key its
//! predecessor as tail, and one that comes to hold the key names itself
//! on the row: both write the key's row *before* they look for what waits
//! for the notification, and look in a snapshot taken after that write.
//! So the two halves meet on the row's lock. In PostgreSQL a create that
//! holds the row commits before the end's look, which sees what it placed
//! behind the tail; an end that holds the row commits before the create
//! reads `tail`, which then names the tail's predecessor. In SQLite one
//! writer does one at a time. Nothing waiting is ever released early:
//! only one whose predecessor is final and does not hold its key.
//! Housekeeping's `release_stranded` stays, for what no end released
//! (an error, a row written by hand).
//!
//! Two ends of neighbours in different PostgreSQL transactions (the tail
//! cancelled while its predecessor's success or failure is being
//! recorded) could each read the other as pending: the cancel's trigger
//! makes the predecessor the tail, and the recorder looks for a key row
//! whose tail is its end in a snapshot where the tail is still the
//! cancelled one, so it neither writes the row nor waits for it. A cancel
//! by id locks the predecessor first (`postgres::cancel`), waits for the
//! recording, and reads its end. A cancel of many at once (by business
//! key, an event's, an endpoint's, the breaker's fail of held ones) does
//! not, and can still leave the key's tail naming one that ended: the
//! key's next create then waits behind it until housekeeping finds it
//! (the overdue sweep; `release_stranded`'s walk behind a failed one),
//! late by that, not lost, not out of order (`tests/it/ordering_races.rs`
//! stages both). Under `hold` a failure that holds its key locks the row
//! whatever its tail, so it waits for the cancel and reads the row as it
//! left it.
//!
//! An end of many notifications in one statement (a cancel, the breaker's
//! fail of held ones) releases as the recorder does, after its update and
//! with the trigger standing aside (`postgres::releasing::
//! release_ended_apart`): it takes their key rows in the creates' (endpoint,
//! key) order, not in the order its rows come, in which it once deadlocked
//! with a create of two of its keys (PostgreSQL failed one of them;
//! `tests/it/ordering_races.rs` stages it).
//!
//! Ordering turned off releases every notification waiting and empties
//! every key's line (`postgres::ordering::release`); turned on again, the
//! endpoint's pending notifications that have a key go back in line, each
//! key's in creation order, those created while it was off numbered on
//! from the key's count, and each key's row names the last as its tail
//! (`postgres::ordering::relink`, `sqlite::ordering::relink`): a create
//! from then on waits behind them, as a third review found it did not.
//!
//! A notification retention removed can never end again: what waited for
//! it (under `hold`, the failed head holding the key; elsewhere one a race
//! stranded) would wait for ever. Housekeeping's `release_stranded` gives
//! it its place again (`orphan_behind`): behind the latest pending one of
//! its key before it, or the stored holder, or else at the head; the walk
//! of the key rows clears a `held_by` naming a gone one.
//!
//! A key's row lasts while the key has history: once its line is empty
//! and was last emptied before retention's cutoff (its row's `emptied_at`,
//! which every end that writes the row stamps), and no stored one holds
//! it, retention deletes the row too (`domain::retention::order_key_expired`
//! decides, the walk is `store::housekeeping::purge_order_keys`), and the
//! key's next create inserts it anew, from sequence 1. In PostgreSQL that
//! delete must not race a create of the key, which writes its
//! notification before it takes the row: `postgres::ordering_retention`'s
//! `delete_unused_keys` says how.

use std::collections::{BTreeMap, HashMap};

use uuid::Uuid;

use super::events::NewEvent;
use super::notifications::{NewNotification, Ordered};

/// One key's new notifications in a create: how many, and the last of
/// them, the key's tail once they are placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRun {
    pub endpoint_id: Uuid,
    pub order_key: String,
    pub count: i64,
    pub last: Uuid,
}

/// What a create read of a key once its row was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyState {
    /// The key's last sequence, the new notifications' included.
    pub last_sequence: i64,
    /// What the key's first new notification waits for: the latest pending
    /// one of the key, or the one holding it.
    pub tail: Option<Uuid>,
}

/// A new notification that has a place to get: created on an endpoint
/// that orders by key, with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item<'a> {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub order_key: &'a str,
}

/// The ordered ones among `items` (those whose endpoint orders by key and
/// that have a key), in the order given.
pub fn ordered<'a>(items: impl IntoIterator<Item = &'a NewNotification>) -> Vec<Item<'a>> {
    items
        .into_iter()
        .filter(|item| item.ordered)
        .filter_map(|item| {
            Some(Item {
                id: item.id,
                endpoint_id: item.endpoint_id,
                order_key: item.order_key.as_deref()?,
            })
        })
        .collect()
}

/// The ordered deliveries of `events` (in commit order, each event's in
/// its order): each carries its event's key.
pub fn ordered_deliveries<'a>(events: impl IntoIterator<Item = &'a NewEvent>) -> Vec<Item<'a>> {
    events
        .into_iter()
        .filter_map(|event| Some((event.order_key.as_deref()?, event)))
        .flat_map(|(key, event)| {
            event
                .deliveries
                .iter()
                .filter(|d| d.ordered)
                .map(move |d| Item {
                    id: d.id,
                    endpoint_id: d.endpoint_id,
                    order_key: key,
                })
        })
        .collect()
}

/// The keys of `items` (in creation order), how many new notifications
/// each has and its last, in (endpoint, key) order: the order every
/// create locks key rows in, so that two creates never wait for each
/// other in a cycle.
pub fn runs(items: &[Item<'_>]) -> Vec<KeyRun> {
    let mut runs: BTreeMap<(Uuid, &str), (i64, Uuid)> = BTreeMap::new();
    for item in items {
        let run = runs
            .entry((item.endpoint_id, item.order_key))
            .or_insert((0, item.id));
        *run = (run.0 + 1, item.id);
    }
    runs.into_iter()
        .map(|((endpoint_id, order_key), (count, last))| KeyRun {
            endpoint_id,
            order_key: order_key.to_string(),
            count,
            last,
        })
        .collect()
}

/// A key's row as a create wrote it: endpoint, key, last sequence (the new
/// notifications' included), the notification holding it, and the key's
/// tail before the create (the latest pending one of the key that none
/// waits for) as the last transaction that wrote the row left it.
pub type WrittenKey = (Uuid, String, i64, Option<Uuid>, Option<Uuid>);

/// Each key's state from its written row: what its first new notification
/// waits for is the tail before the create, or else the one holding the
/// key.
pub fn key_states(written: Vec<WrittenKey>) -> HashMap<(Uuid, String), KeyState> {
    written
        .into_iter()
        .map(|(endpoint, key, last_sequence, held_by, tail)| {
            let state = KeyState {
                last_sequence,
                tail: tail.or(held_by),
            };
            ((endpoint, key), state)
        })
        .collect()
}

/// The place of each of `items` (in creation order) given its key's state:
/// sequences up to the key's last, each waiting for the one before it.
pub fn places(
    items: &[Item<'_>],
    states: &HashMap<(Uuid, String), KeyState>,
) -> HashMap<Uuid, Ordered> {
    let runs: HashMap<(Uuid, String), i64> = runs(items)
        .into_iter()
        .map(|run| ((run.endpoint_id, run.order_key), run.count))
        .collect();
    // Per key: the next sequence to give and what the next one waits for.
    let mut next: HashMap<(Uuid, String), (i64, Option<Uuid>)> = HashMap::new();
    let mut placed = HashMap::with_capacity(items.len());
    for item in items {
        let at = (item.endpoint_id, item.order_key.to_string());
        let Some(state) = states.get(&at) else {
            continue;
        };
        let (sequence, behind) = next
            .entry(at.clone())
            .or_insert_with(|| (state.last_sequence - runs[&at] + 1, state.tail));
        placed.insert(
            item.id,
            Ordered {
                sequence: Some(*sequence),
                behind: *behind,
            },
        );
        *sequence += 1;
        *behind = Some(item.id);
    }
    placed
}

/// A notification of an ordered key pending again, to put back in line.
#[derive(Debug, Clone, Copy)]
pub struct Requeued<'a> {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub order_key: &'a str,
    pub sequence: i64,
}

impl<'a> Requeued<'a> {
    /// `row`, if it has a place in its key's order.
    pub fn of(row: &'a super::notifications::Notification) -> Option<Self> {
        Some(Self {
            id: row.id,
            endpoint_id: row.endpoint_id,
            order_key: row.order_key.as_deref()?,
            sequence: row.sequence?,
        })
    }
}

/// The order in which a page of notifications pending again (`rows`:
/// id, key, sequence, of `endpoint`) go back in line: each key's oldest
/// first, each with those after it, which are not in line meanwhile.
pub fn back_in_line(
    endpoint: Uuid,
    rows: &[(Uuid, String, i64)],
) -> Vec<(Requeued<'_>, Vec<Uuid>)> {
    let mut sorted: Vec<&(Uuid, String, i64)> = rows.iter().collect();
    sorted.sort_by(|a, b| (&a.1, a.2).cmp(&(&b.1, b.2)));
    sorted
        .iter()
        .enumerate()
        .map(|(n, (id, order_key, sequence))| {
            let again = Requeued {
                id: *id,
                endpoint_id: endpoint,
                order_key,
                sequence: *sequence,
            };
            (again, sorted[n + 1..].iter().map(|(id, ..)| *id).collect())
        })
        .collect()
}

/// The first of a key's pending notifications in line: the one that waits
/// for no pending one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineHead {
    pub id: Uuid,
    /// What it waits for: `None` once released (it may be in flight now),
    /// else the failed or cancelled one holding the key.
    pub behind: Option<Uuid>,
}

/// What a notification of a key that is pending again (a retry, a
/// recover) waits for, so that its key's line stays in creation order as
/// far as nothing under way is overtaken: behind `before`, the latest
/// pending one of its key created before it; failing that, at the front,
/// which is behind the line's head once that may be in flight, or behind
/// the one holding the key; with no line, behind the key's holder, if
/// any. The one whose place it takes (that waited for the same) waits for
/// it then. The holder itself is its key's head again: `None`.
pub fn requeued_behind(
    id: Uuid,
    before: Option<Uuid>,
    head: Option<LineHead>,
    held_by: Option<Uuid>,
) -> Option<Uuid> {
    if held_by == Some(id) {
        return None;
    }
    match (before, head) {
        (Some(before), _) => Some(before),
        (None, Some(LineHead { id, behind: None })) => Some(id),
        (None, Some(LineHead { behind, .. })) => behind,
        (None, None) => held_by,
    }
}

/// A pending notification of a key that waits for one no longer stored:
/// retention removed it once final (under `hold`, the failed head that
/// held the key, which can never be retried now), as read under its key's
/// row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Orphan {
    pub id: Uuid,
    /// What it waited for, gone.
    pub gone: Uuid,
    /// The latest pending notification of its key before it, by sequence.
    pub before: Option<Uuid>,
    /// The stored notification holding its key (`held_by`), if any: a
    /// holder retention removed holds nothing.
    pub holder: Option<Uuid>,
}

/// What an orphan waits for now: the latest pending one of its key before
/// it, or else the stored holder of its key; with neither, nothing: it is
/// its key's head, as under `continue`. What waits for it stays behind it.
pub fn orphan_behind(orphan: &Orphan) -> Option<Uuid> {
    orphan
        .before
        .or(orphan.holder.filter(|holder| *holder != orphan.id))
}

/// The moves of `orphans`: each one's (id, what it waited for, what it
/// waits for now), written only where it still waits for what it did.
pub fn orphan_moves(orphans: &[Orphan]) -> Vec<(Uuid, Uuid, Option<Uuid>)> {
    orphans
        .iter()
        .map(|orphan| (orphan.id, orphan.gone, orphan_behind(orphan)))
        .collect()
}

#[cfg(test)]
#[path = "ordering_tests.rs"]
mod tests;
