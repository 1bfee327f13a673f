-- The due indexes seen on this database, as ../20261221000067_due_indexes.sql
-- (the embedded mode's index lives in its process and writes none; the
-- table keeps the store's seams alike). Times in the schema's microseconds.
CREATE TABLE IF NOT EXISTS due_indexes (
    identity   TEXT NOT NULL,
    process    BLOB NOT NULL,
    first_seen INTEGER NOT NULL,
    seen_at    INTEGER NOT NULL,
    PRIMARY KEY (identity, process)
) STRICT;
