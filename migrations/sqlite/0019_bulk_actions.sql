-- Bulk actions by filter, as ../20261212000058_bulk_actions.sql: kinds
-- `retry` and `cancel`, and the filter's JSON. SQLite cannot change a
-- CHECK, so the table (a few rows: operations are purged with retention)
-- is made again with it.
CREATE TABLE operations_new (
    id           BLOB PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('recover', 'retry', 'cancel')),
    endpoint_id  BLOB NOT NULL,
    status       TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'failed')),
    since        INTEGER NOT NULL,
    until        INTEGER NOT NULL,
    matched      INTEGER NOT NULL DEFAULT 0,
    started      INTEGER NOT NULL DEFAULT 0,
    cursor_at    INTEGER,
    cursor_id    BLOB,
    lease_holder BLOB,
    lease_until  INTEGER,
    error        TEXT,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    finished_at  INTEGER,
    filter       TEXT,
    CONSTRAINT operations_window CHECK (since <= until)
) STRICT;

INSERT INTO operations_new (id, kind, endpoint_id, status, since, until, matched, started,
    cursor_at, cursor_id, lease_holder, lease_until, error, created_at, updated_at, finished_at)
SELECT id, kind, endpoint_id, status, since, until, matched, started,
    cursor_at, cursor_id, lease_holder, lease_until, error, created_at, updated_at, finished_at
FROM operations;

DROP TABLE operations;
ALTER TABLE operations_new RENAME TO operations;

CREATE UNIQUE INDEX operations_running_per_endpoint ON operations (endpoint_id, kind)
    WHERE status = 'running';
CREATE INDEX operations_running ON operations (lease_until) WHERE status = 'running';
CREATE INDEX operations_finished ON operations (finished_at) WHERE finished_at IS NOT NULL;
