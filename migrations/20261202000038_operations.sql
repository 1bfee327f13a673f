-- Operations (DESIGN.md §16): long work the API starts and answers at once
-- with 202, run in the background in pages by whichever hookd process holds
-- the operation's lease, and resumed after a restart from what is kept
-- here. The one kind so far is `recover`: restart, as new series, the
-- endpoint's notifications that ended `failed` (completed_at) between
-- `since` and `until`. The rules (the window, the lease, what a page does)
-- are in Rust (src/domain/operation.rs); this keeps their state.
CREATE TABLE operations (
    id           uuid PRIMARY KEY,
    kind         text NOT NULL CHECK (kind IN ('recover')),
    endpoint_id  uuid NOT NULL,
    status       text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'failed')),
    since        timestamptz NOT NULL,
    until        timestamptz NOT NULL,
    -- Failed notifications of the window found so far, and those restarted.
    matched      bigint NOT NULL DEFAULT 0,
    started      bigint NOT NULL DEFAULT 0,
    -- Where the next page starts: the (completed_at, id) of the last row of
    -- the page before, advanced in the transaction that restarted it.
    cursor_at    timestamptz,
    cursor_id    uuid,
    -- The process working it now, until when (compare-and-set): with
    -- several processes one works an operation at a time, and one whose
    -- lease ran out (a crash) is taken over.
    lease_holder uuid,
    lease_until  timestamptz,
    error        text,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    finished_at  timestamptz,
    CONSTRAINT operations_window CHECK (since <= until)
);

-- One running operation of a kind per endpoint: a second recover of the
-- same endpoint conflicts here (409 with the running one).
CREATE UNIQUE INDEX operations_running_per_endpoint ON operations (endpoint_id, kind)
    WHERE status = 'running';
-- What a runner looks for (few rows: only running operations).
CREATE INDEX operations_running ON operations (lease_until) WHERE status = 'running';
-- Retention of finished operations.
CREATE INDEX operations_finished ON operations (finished_at) WHERE finished_at IS NOT NULL;

-- A recover's page: an endpoint's failed notifications in order of when
-- they failed, by keyset (completed_at, id). Partial, so only failed rows
-- (a small part of a table of mostly succeeded ones) pay for it.
CREATE INDEX notifications_failed_by_endpoint ON notifications (endpoint_id, completed_at, id)
    WHERE status = 'failed';
