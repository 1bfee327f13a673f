-- Operations, as ../20261202000038_operations.sql: ids as 16-byte BLOBs,
-- times as INTEGER microseconds, the same checks, indexes and names.
CREATE TABLE operations (
    id           BLOB PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('recover')),
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
    CONSTRAINT operations_window CHECK (since <= until)
) STRICT;

CREATE UNIQUE INDEX operations_running_per_endpoint ON operations (endpoint_id, kind)
    WHERE status = 'running';
CREATE INDEX operations_running ON operations (lease_until) WHERE status = 'running';
CREATE INDEX operations_finished ON operations (finished_at) WHERE finished_at IS NOT NULL;

CREATE INDEX notifications_failed_by_endpoint ON notifications (endpoint_id, completed_at, id)
    WHERE status = 'failed';
