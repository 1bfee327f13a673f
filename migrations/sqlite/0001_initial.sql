-- hookd's embedded schema (DESIGN.md §12): the shape PostgreSQL has after
-- every migration in ../ (not their history), for one process on one file.
-- Names of tables, columns and indexes are PostgreSQL's, so that both
-- backends report the same conflict names and `hookd copy` maps column to
-- column. Read ../*.sql for what each column and index is for; what is
-- written here is only how SQLite holds it and why.
--
-- Encodings (the Rust side converts; SQLite has no types for these):
-- - Ids: 16-byte BLOBs, the uuid's bytes in order. hookd's ids are UUIDv7
--   made in Rust (src/domain/id.rs), so byte order is creation order, as in
--   PostgreSQL's uuid: `ORDER BY id DESC` and keyset cursors (`id < ?`) work
--   unchanged. A BLOB keeps every index entry of an id at 16 bytes instead
--   of 36 for hyphenated TEXT (ids are in most indexes here); in the sqlite3
--   shell, `hex(id)` reads one.
-- - Times: INTEGER microseconds since the Unix epoch, UTC. PostgreSQL's
--   timestamptz holds microseconds, so a time copied between the backends
--   (`hookd copy`) or compared against a cursor keeps its exact value;
--   an i64 of µs covers ±292,000 years. No column has a time default: the
--   time a row is written is decided in Rust, like everything else.
-- - JSON (jsonb in PostgreSQL): TEXT, as serde_json writes it. An empty map
--   is written as exactly '{}' (notifications_with_headers relies on it).
-- - Arrays (text[], bigint[], integer[]): TEXT holding a JSON array. No
--   query looks inside one (fan-out matching and schedules are decided in
--   Rust), so a child table would only cost a join per read.
-- - Booleans: INTEGER 0 or 1, checked.
-- - bytea: BLOB.
--
-- Tables are STRICT: a value of the wrong type (a uuid bound as TEXT, a
-- time as TEXT) is refused instead of stored, so the encodings above hold.
-- Checks keep statuses to their enums, as in PostgreSQL; the rules for
-- moving between them live in src/domain/.
--
-- Partial indexes: SQLite uses one only when the query's WHERE contains
-- the index's terms as written here (`pull = 1`, `status = 'pending'`),
-- with literals, not parameters.

CREATE TABLE endpoints (
    id                   BLOB PRIMARY KEY,
    uid                  TEXT,
    owner                TEXT,
    url                  TEXT,                          -- NULL for a pull endpoint
    delivery             TEXT NOT NULL DEFAULT 'push' CHECK (delivery IN ('push', 'pull')),
    description          TEXT NOT NULL DEFAULT '',
    secret               TEXT NOT NULL,                 -- sealed when secrets.keys is set
    previous_secrets     TEXT NOT NULL DEFAULT '[]',    -- JSON [{"secret", "expires_at"}], newest first
    event_types          TEXT,                          -- JSON array of patterns; NULL: every event type
    schedule_ms          TEXT NOT NULL,                 -- JSON array of delays in ms
    schedule_name        TEXT,
    success_body         TEXT,
    permanent_statuses   TEXT NOT NULL DEFAULT '[410]', -- JSON array of status codes
    headers              TEXT NOT NULL DEFAULT '{}',    -- JSON object; values sealed
    timeout_ms           INTEGER,
    max_in_flight        INTEGER,
    disabled             INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
    disabled_reason      TEXT,
    managed              INTEGER NOT NULL DEFAULT 0 CHECK (managed IN (0, 1)),
    failing_since        INTEGER,
    -- Optimistic concurrency: a change writes `version + 1` where the
    -- version it read still holds (PostgreSQL read xmin for this; it gets
    -- the same column). SQLite has no row locks to take instead.
    version              INTEGER NOT NULL DEFAULT 0,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL,
    deleted_at           INTEGER,
    CONSTRAINT endpoints_url_by_delivery CHECK ((delivery = 'push') = (url IS NOT NULL))
) STRICT;

CREATE UNIQUE INDEX endpoints_uid_key ON endpoints (uid) WHERE deleted_at IS NULL;
CREATE INDEX endpoints_failing ON endpoints (failing_since)
    WHERE failing_since IS NOT NULL AND disabled = 0 AND deleted_at IS NULL;
CREATE INDEX endpoints_owner ON endpoints (owner, id) WHERE deleted_at IS NULL;
CREATE INDEX endpoints_changed ON endpoints (updated_at);
CREATE INDEX endpoints_deleted ON endpoints (deleted_at) WHERE deleted_at IS NOT NULL;

-- No foreign key to endpoints, as in PostgreSQL since
-- 20261127000001: endpoints are never deleted (deleted_at), and every
-- insert takes its endpoint id from a row just read.
CREATE TABLE notifications (
    id                 BLOB PRIMARY KEY,                -- also the webhook-id
    endpoint_id        BLOB NOT NULL,
    event_id           BLOB,                            -- the event it fans out; body then empty
    key                TEXT,
    event_type         TEXT,
    url                TEXT,                            -- overrides the endpoint's URL
    content_type       TEXT NOT NULL,
    body               BLOB NOT NULL,
    headers            TEXT NOT NULL DEFAULT '{}',      -- JSON object; values sealed
    schedule_ms        TEXT NOT NULL,                   -- JSON array, snapshot taken at creation
    schedule_name      TEXT,
    status             TEXT NOT NULL DEFAULT 'pending'
                       CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
    attempts           INTEGER NOT NULL DEFAULT 0,
    series_start       INTEGER NOT NULL DEFAULT 0,
    deliver_at         INTEGER NOT NULL,
    next_attempt_at    INTEGER,                         -- lease expiry while a pull lease is held
    -- The Redis index's debt. The in-process index of embedded mode is
    -- rebuilt from this table at start and owes nothing; the column stays
    -- so that both backends persist the same decisions.
    needs_index        INTEGER NOT NULL DEFAULT 0 CHECK (needs_index IN (0, 1)),
    pull               INTEGER NOT NULL DEFAULT 0 CHECK (pull IN (0, 1)),
    lease_id           BLOB,
    leased_at          INTEGER,
    last_attempt_at    INTEGER,
    last_status_code   INTEGER,
    last_error         TEXT,
    first_attempt_ms   INTEGER,                         -- a first attempt that succeeded, kept here
    first_attempt_body TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    completed_at       INTEGER
) STRICT;

CREATE INDEX notifications_pending_due ON notifications (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX notifications_needs_index ON notifications (next_attempt_at) WHERE needs_index = 1;
CREATE INDEX notifications_endpoint_newest ON notifications (endpoint_id, id DESC);
CREATE INDEX notifications_event_type_newest ON notifications (event_type, id DESC)
    WHERE event_type IS NOT NULL;
CREATE INDEX notifications_unsettled_newest ON notifications (status, id DESC)
    WHERE status IN ('failed', 'cancelled');
CREATE UNIQUE INDEX notifications_key ON notifications (key, endpoint_id) WHERE key IS NOT NULL;
CREATE INDEX notifications_with_headers ON notifications (id) WHERE headers <> '{}';
CREATE INDEX notifications_event ON notifications (event_id, id DESC) WHERE event_id IS NOT NULL;
CREATE INDEX notifications_pull_due ON notifications (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending' AND pull = 1;
CREATE INDEX notifications_leases ON notifications (next_attempt_at) WHERE lease_id IS NOT NULL;

-- Every attempt but a first one that succeeded (kept in its notification).
-- No foreign key, as in PostgreSQL since 20261126000001: retention deletes
-- a notification's attempts in the transaction that deletes it.
CREATE TABLE attempts (
    notification_id  BLOB NOT NULL,
    number           INTEGER NOT NULL,                  -- 1-based, over every series
    started_at       INTEGER NOT NULL,
    duration_ms      INTEGER NOT NULL,
    status_code      INTEGER,
    response_body    TEXT,
    error_code       TEXT,
    error_message    TEXT,
    outcome          TEXT NOT NULL CHECK (outcome IN ('succeeded', 'retry', 'failed')),
    PRIMARY KEY (notification_id, number)
) STRICT;

CREATE TABLE events (
    id           BLOB PRIMARY KEY,                      -- sent as hookd-event-id
    owner        TEXT,
    event_type   TEXT NOT NULL,
    key          TEXT,
    content_type TEXT NOT NULL,
    body         BLOB NOT NULL,
    deliver_at   INTEGER NOT NULL,
    deliveries   INTEGER NOT NULL,
    created_at   INTEGER NOT NULL
) STRICT;

-- A key names one event per owner, and events without an owner share one
-- namespace: PostgreSQL's NULLS NOT DISTINCT, which SQLite's unique indexes
-- lack (NULLs are distinct there). The expression gives every NULL owner
-- the same value, the empty BLOB, which no TEXT owner equals. A lookup uses
-- this index when it writes the same expression:
-- `key = ? AND ifnull(owner, x'') = ifnull(?, x'')`. A violation names the
-- index itself ("index 'events_key'"), as PostgreSQL does.
CREATE UNIQUE INDEX events_key ON events (key, ifnull(owner, x'')) WHERE key IS NOT NULL;
CREATE INDEX events_owner_newest ON events (owner, id DESC);
CREATE INDEX events_event_type_newest ON events (event_type, id DESC);

CREATE TABLE consumer_tokens (
    endpoint_id BLOB PRIMARY KEY REFERENCES endpoints (id),
    digest      BLOB NOT NULL,                          -- SHA-256 of the hkc_ token
    created_at  INTEGER NOT NULL
) STRICT;

-- Named as PostgreSQL names the column's UNIQUE constraint.
CREATE UNIQUE INDEX consumer_tokens_digest_key ON consumer_tokens (digest);
CREATE INDEX consumer_tokens_issued ON consumer_tokens (created_at);
