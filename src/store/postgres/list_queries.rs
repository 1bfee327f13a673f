//! The statements of `GET /v1/notifications` in PostgreSQL: a page, and
//! where a bounded page stops reading (`NotificationFilter::bounded`); and
//! those of `GET /v1/events` (`EventFilter::bounded`).

use sqlx::QueryBuilder;

use super::notifications::{columns_without_body, push_created};
use crate::store::events::EventFilter;
use crate::store::notifications::{NotificationFilter, MAX_EXAMINED};

/// `list_notifications`' statement (`list_plan_tests` reads its plans).
/// A bounded page (`NotificationFilter::bounded`) reads its scope's rows
/// in a subquery that no other condition reaches (its `LIMIT` keeps them
/// out): the scope's index between the frontier and the cursor, whatever
/// the planner guesses of `status` or `event_type`, which are then checked
/// on those rows only.
pub(super) fn list_query(filter: &NotificationFilter) -> QueryBuilder<sqlx::Postgres> {
    let bounded = filter.bounded();
    let rows = if bounded {
        "(SELECT * FROM notifications WHERE true"
    } else {
        "notifications WHERE true"
    };
    // An owner's: the newest of each of its endpoints (through
    // `notifications_endpoint_newest`), then the newest of those. A
    // join walking the primary key for rows of the owner's endpoints
    // read 50,000 rows of 1,000,000 for an owner of one endpoint in
    // 1,000; this reads at most `limit` an endpoint (or, bounded, the
    // rows from the frontier on).
    let mut query = QueryBuilder::new(match filter.owner {
        Some(_) => format!(
            "SELECT n.* FROM endpoints o CROSS JOIN LATERAL (SELECT {} FROM {rows} \
             AND endpoint_id = o.id",
            columns_without_body()
        ),
        None => format!("SELECT {} FROM {rows}", columns_without_body()),
    });
    if let Some(endpoint_id) = filter.endpoint_id {
        query.push(" AND endpoint_id = ").push_bind(endpoint_id);
    }
    push_created(&mut query, &filter.created);
    let order = filter.order;
    if let Some(cursor) = filter.cursor {
        query
            .push(format_args!(" AND id {} ", order.past()))
            .push_bind(cursor);
    }
    if let Some(from) = filter.from {
        query
            .push(format_args!(" AND id {} ", order.up_to()))
            .push_bind(from);
    }
    if bounded {
        // Never fewer than the rows from the frontier on (an endpoint has
        // at most `examined_per_endpoint` there): the limit only keeps
        // the conditions below out, and the scan in the index's order.
        query
            .push(format_args!(" ORDER BY id {} LIMIT ", order.direction()))
            .push_bind(MAX_EXAMINED.max(filter.limit))
            .push(") notifications WHERE true");
    }
    if let Some(status) = filter.status {
        // A literal, not a parameter: with generic plans (see
        // `PgStore::connect`) only a literal lets PostgreSQL use the
        // partial index of failed and cancelled notifications.
        query.push(format_args!(" AND status = '{}'", status.as_str()));
    }
    if let Some(key) = &filter.key {
        // Through `notification_keys`: `notifications` has no key index
        // (its uniqueness moved there), and a key names a few rows; an
        // event's deliveries have their key on the event row only.
        query
            .push(" AND id IN (SELECT k.id FROM notification_keys k WHERE k.key = ")
            .push_bind(key.clone())
            .push(
                " UNION ALL SELECT d.id FROM events e JOIN notifications d \
                 ON d.event_id = e.id WHERE e.key = ",
            )
            .push_bind(key.clone())
            .push(")");
    }
    if let Some(ids) = &filter.ids {
        query
            .push(" AND id = ANY(")
            .push_bind(ids.clone())
            .push(")");
    }
    if let Some(prefix) = filter.checked_prefix() {
        // On the rows a bounded page reads: a delivery's key is its
        // event's, looked up by id.
        query
            .push(
                " AND starts_with(coalesce(key, \
                 (SELECT e.key FROM events e WHERE e.id = event_id)), ",
            )
            .push_bind(prefix.to_string())
            .push(")");
    }
    if let Some(after) = filter.completed_after {
        query.push(" AND completed_at >= ").push_bind(after);
    }
    if let Some(event_type) = &filter.event_type {
        // An event's deliveries have their type on the event row only.
        if bounded {
            // Its event looked up by id for each row read: `events` has
            // no index on the type, and a set of a type's events would be
            // every event of it.
            query
                .push(
                    " AND CASE WHEN event_id IS NULL THEN event_type \
                     ELSE (SELECT e.event_type FROM events e WHERE e.id = event_id) END = ",
                )
                .push_bind(event_type.clone());
        } else {
            query
                .push(" AND (event_type = ")
                .push_bind(event_type.clone())
                .push(" OR event_id IN (SELECT e.id FROM events e WHERE e.event_type = ")
                .push_bind(event_type.clone())
                .push("))");
        }
    }
    if let Some(event_id) = filter.event_id {
        query.push(" AND event_id = ").push_bind(event_id);
    }
    query
        .push(format_args!(" ORDER BY id {} LIMIT ", order.direction()))
        .push_bind(filter.limit);
    if let Some(owner) = &filter.owner {
        query
            .push(") n WHERE o.owner = ")
            .push_bind(owner.clone())
            .push(format_args!(
                " AND o.deleted_at IS NULL AND NOT o.managed ORDER BY n.id {} LIMIT ",
                order.direction()
            ))
            .push_bind(filter.limit);
    }
    query
}

/// `key_prefix_ids`' statement: up to `cap` ids of the notifications
/// whose key, or whose event's key, starts with the filter's prefix, in
/// its endpoint and creation window, past its cursor. The keys' ranges
/// are read in byte order (`"C"`), which the prefix indexes
/// (`notification_keys_prefix`, `events_key_prefix`) hold whatever the
/// database's collation.
pub(super) fn prefix_ids_query(
    filter: &NotificationFilter,
    prefix: &str,
    cap: i64,
) -> QueryBuilder<sqlx::Postgres> {
    let mut query =
        QueryBuilder::new("SELECT id FROM (SELECT k.id FROM notification_keys k WHERE true");
    push_scope(&mut query, "k", filter);
    push_prefix(&mut query, "k", prefix);
    // An event's deliveries, read for each event in the range (`LATERAL`,
    // kept a subquery by its `LIMIT`) through `notifications_event`, never
    // joined with every delivery.
    query.push(
        " UNION ALL SELECT d.id FROM events e CROSS JOIN LATERAL \
         (SELECT d.id FROM notifications d WHERE d.event_id = e.id",
    );
    push_scope(&mut query, "d", filter);
    query.push(" LIMIT ").push_bind(cap).push(") d WHERE true");
    push_prefix(&mut query, "e", prefix);
    query.push(") m LIMIT ").push_bind(cap);
    query
}

/// `AND <rows>.…`: the filter's endpoint, its creation window as ids, and
/// its cursor.
fn push_scope(query: &mut QueryBuilder<sqlx::Postgres>, rows: &str, filter: &NotificationFilter) {
    if let Some(endpoint_id) = filter.endpoint_id {
        query
            .push(format_args!(" AND {rows}.endpoint_id = "))
            .push_bind(endpoint_id);
    }
    for (op, bound) in filter.id_terms() {
        query
            .push(format_args!(" AND {rows}.id {op} "))
            .push_bind(bound);
    }
}

/// `AND <keyed>.key` in the prefix's range, in byte order.
fn push_prefix(query: &mut QueryBuilder<sqlx::Postgres>, keyed: &str, prefix: &str) {
    query
        .push(format_args!(" AND {keyed}.key COLLATE \"C\" >= "))
        .push_bind(prefix.to_string());
    if let Some(end) = crate::domain::fields::prefix_end(prefix) {
        query
            .push(format_args!(" AND {keyed}.key COLLATE \"C\" < "))
            .push_bind(end);
    }
}

/// `notifications_frontier`'s statement for a scope of `per_endpoint` rows
/// an endpoint: the last id of the scope's first rows past the cursor in
/// the list's order (newest first: the lowest of the newest), in the
/// creation window, read on the ids of its index alone; for an owner, the
/// first such id of its endpoints in that order (every owner row before
/// it is among those read). No row there when the scope has fewer.
pub(super) fn frontier_query(
    filter: &NotificationFilter,
    per_endpoint: i64,
) -> QueryBuilder<sqlx::Postgres> {
    let owner = filter
        .owner
        .as_ref()
        .filter(|_| filter.endpoint_id.is_none());
    let mut query = QueryBuilder::new(match owner {
        Some(_) => {
            "SELECT f.id FROM endpoints o CROSS JOIN LATERAL (SELECT id FROM \
             notifications WHERE endpoint_id = o.id"
        }
        None => "SELECT id FROM notifications WHERE true",
    });
    if let Some(endpoint_id) = filter.endpoint_id {
        query.push(" AND endpoint_id = ").push_bind(endpoint_id);
    }
    let (low, high) = filter.created.id_range();
    if let (Some(_), Some(low)) = (filter.created.after, low) {
        query.push(" AND id >= ").push_bind(low);
    }
    if let (Some(_), Some(high)) = (filter.created.before, high) {
        query.push(" AND id < ").push_bind(high);
    }
    let order = filter.order;
    if let Some(cursor) = filter.cursor {
        query
            .push(format_args!(" AND id {} ", order.past()))
            .push_bind(cursor);
    }
    query
        .push(format_args!(" ORDER BY id {} OFFSET ", order.direction()))
        .push_bind(per_endpoint - 1)
        .push(" LIMIT 1");
    if let Some(owner) = owner {
        query
            .push(") f WHERE o.owner = ")
            .push_bind(owner.clone())
            // The first in the list's order (PostgreSQL has no `max` or
            // `min` of a uuid).
            .push(format_args!(
                " AND o.deleted_at IS NULL AND NOT o.managed ORDER BY f.id {} LIMIT 1",
                order.direction()
            ));
    }
    query
}

/// The events' scope (an owner's, those without one, or all) and window,
/// the terms `events_owner_newest` or the primary key serve.
fn event_scope(query: &mut QueryBuilder<sqlx::Postgres>, filter: &EventFilter) {
    match &filter.owner {
        Some(Some(owner)) => {
            query.push(" AND owner = ").push_bind(owner.clone());
        }
        Some(None) => {
            query.push(" AND owner IS NULL");
        }
        None => {}
    }
}

/// `list_events`' statement: bounded, the scope's rows in a subquery the
/// type cannot reach, from the frontier on, as `list_query`.
pub(super) fn events(filter: &EventFilter, columns: &str) -> QueryBuilder<sqlx::Postgres> {
    let bounded = filter.bounded();
    let rows = if bounded {
        "(SELECT * FROM events WHERE true"
    } else {
        "events WHERE true"
    };
    let mut query = QueryBuilder::new(format!("SELECT {columns}, ''::bytea AS body FROM {rows}"));
    event_scope(&mut query, filter);
    push_created(&mut query, &filter.created);
    if let Some(before) = filter.before {
        query.push(" AND id < ").push_bind(before);
    }
    if let Some(from) = filter.from {
        query.push(" AND id >= ").push_bind(from);
    }
    if bounded {
        query
            .push(" ORDER BY id DESC LIMIT ")
            .push_bind(MAX_EXAMINED.max(filter.limit))
            .push(") events WHERE true");
    }
    if let Some(event_type) = &filter.event_type {
        query
            .push(" AND event_type = ")
            .push_bind(event_type.clone());
    }
    if let Some(key) = &filter.key {
        query.push(" AND key = ").push_bind(key.clone());
    }
    query
        .push(" ORDER BY id DESC LIMIT ")
        .push_bind(filter.limit);
    query
}

/// `events_frontier`'s statement: the lowest id of the scope's newest
/// `MAX_EXAMINED` events below the cursor, on its index's ids alone.
pub(super) fn events_frontier(filter: &EventFilter) -> QueryBuilder<sqlx::Postgres> {
    let mut query = QueryBuilder::new("SELECT id FROM events WHERE true");
    event_scope(&mut query, filter);
    let (low, high) = filter.created.id_range();
    if let (Some(_), Some(low)) = (filter.created.after, low) {
        query.push(" AND id >= ").push_bind(low);
    }
    if let (Some(_), Some(high)) = (filter.created.before, high) {
        query.push(" AND id < ").push_bind(high);
    }
    if let Some(before) = filter.before {
        query.push(" AND id < ").push_bind(before);
    }
    query
        .push(" ORDER BY id DESC OFFSET ")
        .push_bind(MAX_EXAMINED - 1)
        .push(" LIMIT 1");
    query
}
