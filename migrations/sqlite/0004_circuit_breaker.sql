-- The circuit breaker, as ../20261202000037_circuit_breaker.sql: ids as
-- BLOBs, times as INTEGER microseconds, flags as INTEGER 0/1.
ALTER TABLE endpoints ADD COLUMN breaker_off INTEGER NOT NULL DEFAULT 0 CHECK (breaker_off IN (0, 1));
ALTER TABLE endpoints ADD COLUMN breaker_failures INTEGER
    CHECK (breaker_failures BETWEEN 1 AND 1000);
ALTER TABLE endpoints ADD COLUMN breaker_open_ms INTEGER
    CHECK (breaker_open_ms BETWEEN 1 AND 86400000);
ALTER TABLE endpoints ADD COLUMN breaker_max_open_ms INTEGER
    CHECK (breaker_max_open_ms BETWEEN 1 AND 86400000);

CREATE TABLE endpoint_circuits (
    endpoint_id    BLOB PRIMARY KEY,
    failures       INTEGER NOT NULL DEFAULT 0,
    state          TEXT NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'probing')),
    opened_at      INTEGER,
    next_probe_at  INTEGER,
    open_ms        INTEGER NOT NULL DEFAULT 0,
    probe_until    INTEGER,
    release_passes INTEGER NOT NULL DEFAULT 0,
    release_at     INTEGER
) STRICT;

CREATE INDEX notifications_endpoint_pending_due ON notifications (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending';
