-- The column PostgreSQL's key rows gained in its migration
-- 20261217000063 (`emptied_at`, when a key's line was last emptied, which
-- PostgreSQL's retention reads instead of an index over every ordered
-- notification), so that both schemas keep one shape (`hookd copy` checks
-- that they do, column by column). SQLite's retention still reads a key's
-- history through its `notifications_order`, and writes nothing here:
-- `hookd copy` stamps each key it copies with the copy's time
-- (`copy::tables::ORDER_KEYS`).
ALTER TABLE order_keys ADD COLUMN emptied_at INTEGER;
