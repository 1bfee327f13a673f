-- The due indexes that processes on this database use, a row per process
-- (`domain::index_owner`), by the name each index keeps in Redis beside
-- its keys: every server-mode process writes its row once a second and
-- deletes it when it stops. A process on an index other than the one seen
-- longest among the live ones pauses, since two indexes over one
-- database each deliver what the other leased.
CREATE TABLE IF NOT EXISTS due_indexes (
    identity   text NOT NULL,
    process    uuid NOT NULL,
    first_seen timestamptz NOT NULL,
    seen_at    timestamptz NOT NULL,
    PRIMARY KEY (identity, process)
);
