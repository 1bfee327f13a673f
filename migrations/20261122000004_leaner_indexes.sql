-- Fewer B-tree entries per notification, on insert and on every state change.
--
-- A delivery's UPDATE changes indexed columns (status, next_attempt_at), so it
-- is never a HOT update: PostgreSQL adds an entry to every index of the table
-- whose predicate the new row version meets. Each index here is paid for on
-- every insert and on every attempt, so each must earn its place.

-- One index for both the key's uniqueness per endpoint and listing by key.
-- Rows without a key (the common case for fire-and-forget producers) get no
-- entry at all; a key names at most one notification per endpoint, so
-- "newest first" for a key sorts a handful of rows.
ALTER TABLE notifications DROP CONSTRAINT notifications_endpoint_key;
DROP INDEX notifications_key_newest;
CREATE UNIQUE INDEX notifications_key ON notifications (key, endpoint_id) WHERE key IS NOT NULL;

-- Retention walks the primary key instead: ids are UUIDv7, so a notification
-- completed before a time was also created before it (see
-- Store::purge_completed). That saves an entry on every completion.
DROP INDEX notifications_completed;

-- Compact ids, as the application makes them (src/domain/id.rs): the top 10
-- bits of rand_a are zero, so the id fits in 14 bytes in the Redis due index.
CREATE OR REPLACE FUNCTION hookd_uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(set_byte(set_byte(b, 6, 112), 7, get_byte(b, 7) & 3), 'hex')::uuid
    FROM (SELECT overlay(uuid_send(gen_random_uuid())
                         PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                         FROM 1 FOR 6) AS b) AS v
$$;
