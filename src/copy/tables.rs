//! What is copied: every table of the embedded schema that a server needs
//! to carry on the same work, column by column with each column's `Kind`,
//! in the order they are copied. Both schemas name tables and columns
//! alike (`migrations/sqlite/0001_initial.sql` is PostgreSQL's shape), so
//! one name serves both sides.
//!
//! The order puts each row after what it refers to, so that a row that
//! has arrived in the target is whole, even in a copy that stopped midway:
//! endpoints before their consumer tokens (a foreign key) and their
//! notifications; events before their deliveries (which read the event's
//! body); attempts before their notifications, so that a notification a
//! server could deliver already has its history (its attempt numbers go on
//! from there).
//!
//! `copy` checks at every run that the source and the target have exactly
//! these columns: a migration that adds one makes the copy refuse to run
//! until this list says what becomes of it, instead of leaving it behind.
//!
//! Not copied, by design:
//! - `endpoint_circuits`: the circuit breaker's state is about the receiver
//!   now, seen from the source's dispatcher; the server starts every
//!   circuit closed, and a receiver still down opens it again within
//!   `failures` attempts. Held notifications are pending rows due at their
//!   times, so the server's index has them due at once.
//! - `minute_stats`, `minute_totals`, `minute_backlog`, `hour_failing`,
//!   `owner_minute_stats`: the overview's
//!   per-minute counts (`GET /v1/stats`) describe the source's last day of
//!   work and are kept two days only; the server's overview starts from
//!   its own deliveries (each notification's attempts, which are copied,
//!   still show on its page).
//! - `fanout_plans`: a large fan-out's deliveries not written yet, which
//!   only a crash leaves; the copy refuses a file that has one (`hookd
//!   serve` writes them out when it starts).
//! - `_sqlx_migrations`: each database keeps its own schema history; the
//!   target's is PostgreSQL's migrations, applied first.
//! - `release_by`: SQLite's switch between its two ways of releasing an
//!   ordered success (a trigger's or the recorder's), which PostgreSQL
//!   has no use for.
//! - `due_indexes`: the Redis indexes seen serving a server-mode database
//!   (`domain::index_owner`); the embedded mode writes none, and the
//!   server's dispatchers name theirs.
//! - The in-process due index and its leases of push deliveries (in memory
//!   only, never in the file): a push delivery under way when the embedded
//!   hookd stopped is a pending row due at its time, delivered again by
//!   the server (as after a restart). `needs_index` is not copied but set
//!   (see `NOTIFICATIONS`).

use super::values::Kind;

/// One column: its name in both schemas, its kind, and (rarely) the SQLite
/// expression read instead of the stored value.
#[derive(Debug)]
pub(crate) struct Column {
    pub name: &'static str,
    pub kind: Kind,
    pub from: Option<&'static str>,
}

const fn col(name: &'static str, kind: Kind) -> Column {
    Column {
        name,
        kind,
        from: None,
    }
}

/// A table as copied: rows are read in primary key order, in pages, and
/// inserted unless a row with the same key is there.
#[derive(Debug)]
pub(crate) struct Table {
    pub name: &'static str,
    /// The primary key's columns, in order.
    pub key: &'static [&'static str],
    pub columns: &'static [Column],
}

impl Table {
    /// The SQLite expressions of the select list.
    pub(crate) fn select_list(&self) -> String {
        self.columns
            .iter()
            .map(|c| match c.from {
                Some(expr) => format!("{expr} AS {}", c.name),
                None => c.name.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The column names, comma-separated.
    pub(crate) fn names(&self) -> String {
        self.columns
            .iter()
            .map(|c| c.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The key's columns, comma-separated.
    pub(crate) fn key_list(&self) -> String {
        self.key.join(", ")
    }

    /// Where each key column is in `columns`.
    pub(crate) fn key_positions(&self) -> Vec<usize> {
        self.key
            .iter()
            .map(|k| {
                self.columns
                    .iter()
                    .position(|c| c.name == *k)
                    .expect("a key column is one of the table's columns")
            })
            .collect()
    }
}

use Kind::*;

const ENDPOINTS: Table = Table {
    name: "endpoints",
    key: &["id"],
    columns: &[
        col("id", Id),
        col("uid", Text),
        col("owner", Text),
        col("url", Text),
        col("delivery", Text),
        col("description", Text),
        col("secret", Text),
        col("previous_secrets", Json),
        col("event_types", TextList),
        col("filter", Json),
        col("schedule_ms", BigIntList),
        col("schedule_name", Text),
        col("schedule_jitter", Real),
        col("url_secret", Flag),
        col("portal_generation", Int),
        col("ordering", Text),
        col("ordering_on_failure", Text),
        col("rate_limit_per_second", Real),
        col("rate_limit_burst", Int),
        col("fresh_share", Real),
        col("breaker_off", Flag),
        col("breaker_failures", Int),
        col("breaker_open_ms", BigInt),
        col("breaker_max_open_ms", BigInt),
        col("success_body", Text),
        col("success_filter", Json),
        col("permanent_statuses", IntList),
        col("headers", Json),
        col("timeout_ms", Int),
        col("max_in_flight", Int),
        col("disabled", Flag),
        col("disabled_reason", Text),
        col("disabled_at", Time),
        col("managed", Flag),
        col("failing_since", Time),
        col("version", BigInt),
        col("created_at", Time),
        col("updated_at", Time),
        col("deleted_at", Time),
    ],
};

/// Each ordered key's last sequence, what holds it and its tail
/// (`store::ordering`), so that the server numbers a key's next
/// notification on from there, behind the one before it
/// (`previous_tail` only serves a create's write, and goes as it is).
const ORDER_KEYS: Table = Table {
    name: "order_keys",
    key: &["endpoint_id", "order_key"],
    columns: &[
        col("endpoint_id", Id),
        col("order_key", Text),
        col("last_sequence", BigInt),
        col("held_by", Id),
        col("tail", Id),
        col("previous_tail", Id),
        // When the key's line was last emptied, which retention reads
        // (both backends stamp it: migrations 20261217000063 and
        // sqlite/0027).
        col("emptied_at", Time),
    ],
};

/// An owner's portal generation (`portal_owners`): a link revoked in the
/// embedded file stays revoked on the server.
const PORTAL_OWNERS: Table = Table {
    name: "portal_owners",
    key: &["owner"],
    columns: &[col("owner", Text), col("generation", Int)],
};

/// A consumer's `hkc_` token keeps working: only its digest is stored.
const CONSUMER_TOKENS: Table = Table {
    name: "consumer_tokens",
    key: &["endpoint_id"],
    columns: &[
        col("endpoint_id", Id),
        col("digest", Bytes),
        col("created_at", Time),
    ],
};

const EVENTS: Table = Table {
    name: "events",
    key: &["id"],
    columns: &[
        col("id", Id),
        col("owner", Text),
        col("event_type", Text),
        col("key", Text),
        col("content_type", Text),
        col("body", Bytes),
        col("deliver_at", Time),
        col("deliveries", Int),
        col("created_at", Time),
        col("order_key", Text),
    ],
};

const ATTEMPTS: Table = Table {
    name: "attempts",
    key: &["notification_id", "number"],
    columns: &[
        col("notification_id", Id),
        col("number", Int),
        col("started_at", Time),
        col("duration_ms", Int),
        col("status_code", Int),
        col("response_body", Text),
        col("error_code", Text),
        col("error_message", Text),
        col("outcome", Text),
        col("sent_headers", Text),
        col("response_headers", Text),
        col("retried", Flag),
    ],
};

/// Pull leases (`lease_id`, `leased_at`, and `next_attempt_at` as the
/// lease's end) are copied as they are: server mode keeps them in
/// PostgreSQL too, so a consumer's receipt stays valid and a lease that
/// runs out is recorded `lease_expired` there.
const NOTIFICATIONS: Table = Table {
    name: "notifications",
    key: &["id"],
    columns: &[
        col("id", Id),
        col("endpoint_id", Id),
        col("event_id", Id),
        col("key", Text),
        col("event_type", Text),
        col("url", Text),
        col("content_type", Text),
        col("body", Bytes),
        col("headers", Json),
        col("schedule_ms", BigIntList),
        col("schedule_name", Text),
        col("status", Text),
        col("attempts", Int),
        col("series_start", Int),
        col("released_by_circuit", Flag),
        col("deliver_at", Time),
        col("next_attempt_at", Time),
        // Every pending push row is owed to the Redis due index, which
        // knows nothing of it: the server's housekeeping indexes marked
        // rows within a second, whether or not its index is complete
        // (a refill at start only runs when Redis lost its marker).
        Column {
            name: "needs_index",
            kind: Flag,
            from: Some("(status = 'pending' AND pull = 0 AND behind IS NULL)"),
        },
        col("pull", Flag),
        col("order_key", Text),
        col("sequence", BigInt),
        col("behind", Id),
        col("lease_id", Id),
        col("leased_at", Time),
        col("last_attempt_at", Time),
        col("last_status_code", Int),
        col("last_error", Text),
        col("first_attempt_ms", Int),
        col("first_attempt_body", Text),
        col("created_at", Time),
        col("updated_at", Time),
        col("completed_at", Time),
    ],
};

/// Recovers and bulk retries and cancels (`GET /v1/operations/{id}`):
/// finished ones stay readable, and a running one goes on on the server
/// from its cursor (an operation answered 202 survives the move as it
/// survives a restart). Its lease is not copied: the embedded process that
/// held it is stopped, and the server's first runner takes it at once.
const OPERATIONS: Table = Table {
    name: "operations",
    key: &["id"],
    columns: &[
        col("id", Id),
        col("kind", Text),
        col("endpoint_id", Id),
        col("status", Text),
        col("since", Time),
        col("until", Time),
        col("filter", Text),
        col("matched", BigInt),
        col("started", BigInt),
        col("cursor_at", Time),
        col("cursor_id", Id),
        Column {
            name: "lease_holder",
            kind: Id,
            from: Some("NULL"),
        },
        Column {
            name: "lease_until",
            kind: Time,
            from: Some("NULL"),
        },
        col("error", Text),
        col("created_at", Time),
        col("updated_at", Time),
        col("finished_at", Time),
    ],
};

/// The tables of the embedded schema left behind by design (the module's
/// doc says why). A table in neither list makes the copy refuse, as a
/// column does: a migration that adds one must say what becomes of it.
pub(crate) const NOT_COPIED: [&str; 10] = [
    "endpoint_circuits",
    "minute_stats",
    "minute_totals",
    "minute_backlog",
    "hour_failing",
    "owner_minute_stats",
    "fanout_plans",
    "_sqlx_migrations",
    "release_by",
    "due_indexes",
];

/// Every table copied, in the order copied (operations last: a running
/// one resumes on rows that are all there).
pub(crate) const TABLES: [Table; 8] = [
    ENDPOINTS,
    PORTAL_OWNERS,
    ORDER_KEYS,
    CONSUMER_TOKENS,
    EVENTS,
    ATTEMPTS,
    NOTIFICATIONS,
    OPERATIONS,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_column_is_a_column_of_its_table() {
        for table in &TABLES {
            assert_eq!(
                table.key_positions().len(),
                table.key.len(),
                "{}",
                table.name
            );
        }
    }

    #[test]
    fn a_computed_column_is_read_under_its_own_name() {
        let list = NOTIFICATIONS.select_list();
        assert!(
            list.contains("(status = 'pending' AND pull = 0 AND behind IS NULL) AS needs_index"),
            "{list}"
        );
        assert!(list.starts_with("id, endpoint_id, event_id"), "{list}");
    }
}
