-- The circuit breaker (DESIGN.md §16; the rule is in Rust,
-- src/domain/breaker.rs). An endpoint's own settings override
-- `[dispatcher.breaker]`: NULL each is the default, `breaker_off` turns
-- its breaker off (`"breaker": null` in the API). Bounded as the API
-- bounds them.
ALTER TABLE endpoints
    ADD COLUMN breaker_off boolean NOT NULL DEFAULT false,
    ADD COLUMN breaker_failures integer
        CONSTRAINT endpoints_breaker_failures_range CHECK (breaker_failures BETWEEN 1 AND 1000),
    ADD COLUMN breaker_open_ms bigint
        CONSTRAINT endpoints_breaker_open_ms_range CHECK (breaker_open_ms BETWEEN 1 AND 86400000),
    ADD COLUMN breaker_max_open_ms bigint
        CONSTRAINT endpoints_breaker_max_open_ms_range CHECK (breaker_max_open_ms BETWEEN 1 AND 86400000);

-- The state of each endpoint's circuit, shared by every process. Not part
-- of the endpoint's `version` (a circuit changes without the endpoint's
-- settings changing), and kept apart from its row so that counting never
-- waits on an API change of the endpoint. A closed circuit with nothing
-- counted and no release owed has no row: the table holds only the
-- circuits that are not clean, which every dispatcher reads each second.
CREATE TABLE endpoint_circuits (
    endpoint_id    uuid PRIMARY KEY,
    failures       integer NOT NULL DEFAULT 0,
    state          text NOT NULL DEFAULT 'closed'
        CONSTRAINT endpoint_circuits_state CHECK (state IN ('closed', 'open', 'probing')),
    opened_at      timestamptz,
    next_probe_at  timestamptz,
    open_ms        bigint NOT NULL DEFAULT 0,
    probe_until    timestamptz,
    release_passes integer NOT NULL DEFAULT 0,
    release_at     timestamptz
);

-- What a probe sends and a release moves: one endpoint's pending
-- notifications in due order (push ones; pull has its own index).
CREATE INDEX notifications_endpoint_pending_due ON notifications (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending';
