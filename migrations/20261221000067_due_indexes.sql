-- The due indexes that dispatchers on this database claim from, by the
-- name each keeps in Redis beside its keys (`domain::index_owner`): every
-- dispatcher writes its index's row once a second, and one on an index
-- other than the first seen among the live ones pauses, since two
-- indexes over one database each deliver what the other leased.
CREATE TABLE IF NOT EXISTS due_indexes (
    identity   text PRIMARY KEY,
    first_seen timestamptz NOT NULL,
    seen_at    timestamptz NOT NULL
);
