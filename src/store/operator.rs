//! Writing operator events: each is a notification to the managed operator
//! endpoint, inserted by the statement that writes the change it reports
//! (a notification ending failed, an endpoint disabled), so one never
//! commits without the other. The events come built (`domain::operator_event`);
//! this only stores them.

use uuid::Uuid;

use crate::domain::operator_event::OperatorEvent;

/// SQL for a CTE that inserts operator events, for a statement that binds
/// them as the arrays `$subjects` (uuid[]), `$types`, `$keys` (text[]) and
/// `$bodies` (bytea[]) (see `EventBinds`) and the operator endpoint's id as
/// `$operator`, and whose CTE `$changed` returns the `id` of each row it
/// changed. An event is inserted only if its subject's change was, and only
/// while the operator endpoint exists; its key makes a second recording of
/// the same change insert nothing. The events are due at once and marked
/// `needs_index`: the housekeeper adds them to the due index.
macro_rules! insert_operator_events {
    ($changed:literal, $subjects:literal, $types:literal, $keys:literal, $bodies:literal, $operator:literal) => {
        concat!(
            "INSERT INTO notifications (id, endpoint_id, key, event_type, content_type, body, \
                 schedule_ms, schedule_name, deliver_at, next_attempt_at, needs_index) \
             SELECT hookd_uuid_v7(), op.id, ev.key, ev.event_type, 'application/json', ev.body, \
                 op.schedule_ms, op.schedule_name, now(), now(), true \
             FROM UNNEST(",
            $subjects,
            "::uuid[], ",
            $types,
            "::text[], ",
            $keys,
            "::text[], ",
            $bodies,
            "::bytea[]) AS ev(subject, event_type, key, body) \
             JOIN ",
            $changed,
            " changed ON changed.id = ev.subject \
             JOIN endpoints op ON op.id = ",
            $operator,
            " AND op.deleted_at IS NULL \
             ON CONFLICT (key, endpoint_id) WHERE key IS NOT NULL DO NOTHING"
        )
    };
}
pub(super) use insert_operator_events;

/// Operator events as the arrays `insert_operator_events!` binds.
#[derive(Default)]
pub(super) struct EventBinds<'a> {
    pub subjects: Vec<Uuid>,
    pub types: Vec<&'static str>,
    pub keys: Vec<&'a str>,
    pub bodies: Vec<&'a [u8]>,
}

impl<'a> EventBinds<'a> {
    pub fn push(&mut self, event: &'a OperatorEvent) {
        self.subjects.push(event.subject);
        self.types.push(event.event_type);
        self.keys.push(&event.key);
        self.bodies.push(&event.body);
    }
}

impl<'a> FromIterator<&'a OperatorEvent> for EventBinds<'a> {
    fn from_iter<I: IntoIterator<Item = &'a OperatorEvent>>(events: I) -> Self {
        let mut binds = Self::default();
        for event in events {
            binds.push(event);
        }
        binds
    }
}
