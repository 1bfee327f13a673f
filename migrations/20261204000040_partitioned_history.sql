-- no-transaction
-- Time-partitioned history (DESIGN.md §13, #37; the path for a running
-- deployment, its locks and its rollback: docs/partitioning.md).
--
-- What is partitioned, and why:
-- - `notifications` and `attempts`: by RANGE of the notification id
--   (UUIDv7, so its creation time), one partition per UTC day, bounded by
--   the smallest UUIDv7 of each midnight (`domain::partition::day_bound`;
--   the SQL below makes the same for the partitions it creates itself).
--   A notification's attempts live in its day's partition of `attempts`,
--   so retention drops a day of both together, and a lookup by id reads
--   one partition of each. These are the rows that multiply: a delivery is
--   a notification row and up to one attempt row per retry.
-- - `events` stays one table: an event is one row per business fact, not
--   per delivery (an event to k endpoints writes 1 event row, k
--   notifications and their attempts), so it grows at most as fast as
--   notifications and usually far slower; its retention stays the bounded
--   row-by-row walk (`purge_events`), which deletes an event once its
--   deliveries are gone (a dropped partition takes them). Its key index
--   `events_key` stays global and unchanged.
--
-- A unique index of a partitioned table must include the partition key,
-- so the notifications' idempotency key, unique per endpoint, moves to
-- `notification_keys` (key, endpoint → id), written in the statement that
-- inserts the notification and deleted with it by retention. A key whose
-- notification is gone (a dropped partition, before its key rows are
-- deleted) is taken over by the next create with it, as a key freed by
-- retention always was.
--
-- The path, in three steps, each its own transaction (hence
-- `no-transaction`): no row of the existing tables is copied, and the
-- long parts (a scan of each table, the fill of the keys) run under locks
-- that let reads and writes go on. Each step is skipped once the swap is
-- done, so a migration that stopped midway can be run again.
-- 1. (brief ACCESS EXCLUSIVE) the key table; a CHECK on each table's id
--    range, NOT VALID (new rows are checked, old ones not yet); the bound
--    is the midnight after tomorrow's, so that a slow step 2 never
--    refuses the inserts meanwhile.
-- 2. (SHARE UPDATE EXCLUSIVE: reads and writes go on) VALIDATE each CHECK,
--    one scan of each table; then the keys of the existing rows, one
--    INSERT ... SELECT over the keyed rows: a read of the table and one
--    key row (two index entries) per keyed notification; 6.5 s for 500,000
--    keys of 1,000,000 notifications (637 MB) on a shared 2-core machine,
--    where the VALIDATEs took 0.47 s, step 1 12 ms and step 3 0.16 s
--    (docs/partitioning.md).
-- 3. (ACCESS EXCLUSIVE, on the order of a second) the keys of rows created
--    since step 2 began; each table renamed `<table>_legacy` with its
--    indexes; the partitioned table made with the same columns, checks and
--    indexes; the legacy table ATTACHed as the partition of every id below
--    the bound (the valid CHECK spares the scan, its indexes are attached
--    as they are); the daily partitions up to a week ahead and a DEFAULT
--    partition, so an insert is never refused (housekeeping warns when it
--    holds rows).
-- Every process of the previous version must be stopped before this runs:
-- its statements name `ON CONFLICT (key, endpoint_id) WHERE key IS NOT
-- NULL`, resolved at plan time against the unique index step 3 drops, so
-- after step 3 its every create and delivery record fails. A migration
-- stopped after step 1 must be run again before step 1's CHECK bound, or
-- every insert then fails the CHECK.

-- Step 1.
BEGIN;
SET LOCAL lock_timeout = '5s';
DO $$
BEGIN
    IF to_regclass('notifications_legacy') IS NOT NULL THEN
        RETURN;
    END IF;
    CREATE TABLE IF NOT EXISTS notification_keys (
        key         text NOT NULL,
        endpoint_id uuid NOT NULL,
        id          uuid NOT NULL,
        PRIMARY KEY (key, endpoint_id)
    );
    CREATE INDEX IF NOT EXISTS notification_keys_id ON notification_keys (id);
    -- Where the legacy partition ends and since when keys are filled: kept
    -- for the later steps (and a run again), dropped by step 3.
    CREATE TABLE IF NOT EXISTS hookd_partitioning (
        legacy_end_day date NOT NULL,
        legacy_end     uuid NOT NULL,
        fill_from      timestamptz NOT NULL
    );
    INSERT INTO hookd_partitioning
    SELECT d,
           encode(substring(int8send((extract(epoch FROM d::timestamp) * 1000)::bigint) FROM 3)
                  || '\x00000000000000000000'::bytea, 'hex')::uuid,
           now()
    FROM (SELECT (now() AT TIME ZONE 'UTC')::date + 2 AS d) AS day
    WHERE NOT EXISTS (SELECT 1 FROM hookd_partitioning);
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'notifications_legacy_range') THEN
        EXECUTE format('ALTER TABLE notifications ADD CONSTRAINT notifications_legacy_range CHECK (id < %L) NOT VALID',
                       (SELECT legacy_end FROM hookd_partitioning));
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'attempts_legacy_range') THEN
        EXECUTE format('ALTER TABLE attempts ADD CONSTRAINT attempts_legacy_range CHECK (notification_id < %L) NOT VALID',
                       (SELECT legacy_end FROM hookd_partitioning));
    END IF;
END $$;
COMMIT;

-- Step 2.
BEGIN;
DO $$
BEGIN
    IF to_regclass('notifications_legacy') IS NOT NULL THEN
        RETURN;
    END IF;
    ALTER TABLE notifications VALIDATE CONSTRAINT notifications_legacy_range;
    ALTER TABLE attempts VALIDATE CONSTRAINT attempts_legacy_range;
END $$;
COMMIT;
BEGIN;
DO $$
BEGIN
    IF to_regclass('notifications_legacy') IS NOT NULL THEN
        RETURN;
    END IF;
    INSERT INTO notification_keys (key, endpoint_id, id)
    SELECT key, endpoint_id, id FROM notifications WHERE key IS NOT NULL
    ON CONFLICT DO NOTHING;
END $$;
COMMIT;

-- Step 3.
BEGIN;
SET LOCAL lock_timeout = '5s';
DO $$
DECLARE
    legacy_end uuid;
    first_day  date;
    fill_from  timestamptz;
    t          text;
    i          record;
    d          date;
    lo         uuid;
    hi         uuid;
BEGIN
    IF to_regclass('notifications_legacy') IS NOT NULL THEN
        RETURN;
    END IF;
    SELECT p.legacy_end, p.legacy_end_day, p.fill_from INTO legacy_end, first_day, fill_from FROM hookd_partitioning p;
    LOCK TABLE notifications, attempts IN ACCESS EXCLUSIVE MODE;
    -- Keys of the rows created while step 2 ran (and a margin for ids made
    -- before their commit), through the primary key.
    INSERT INTO notification_keys (key, endpoint_id, id)
    SELECT key, endpoint_id, id FROM notifications
    WHERE key IS NOT NULL
      AND id >= encode(substring(int8send((extract(epoch FROM fill_from - interval '10 minutes') * 1000)::bigint) FROM 3)
                       || '\x00000000000000000000'::bytea, 'hex')::uuid
    ON CONFLICT DO NOTHING;
    -- The key's uniqueness is notification_keys' now, and lists and
    -- cancels by key go through it.
    DROP INDEX notifications_key;

    FOREACH t IN ARRAY ARRAY['notifications', 'attempts'] LOOP
        EXECUTE format('ALTER TABLE %I RENAME TO %I', t, t || '_legacy');
        FOR i IN SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
                 WHERE x.indrelid = (t || '_legacy')::regclass LOOP
            EXECUTE format('ALTER INDEX %I RENAME TO %I', i.relname, i.relname || '_legacy');
        END LOOP;
        -- The same columns in the same order, defaults and checks (under
        -- their names, which ATTACH matches); the range check is the
        -- legacy partition's alone.
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (%I)',
                       t, t || '_legacy', CASE t WHEN 'attempts' THEN 'notification_id' ELSE 'id' END);
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t, t || '_legacy_range');
        -- Each index as the legacy table has it (so ATTACH takes the
        -- legacy's as they are instead of building one), under its name.
        FOR i IN SELECT c.relname, pg_get_indexdef(x.indexrelid) AS def, x.indisprimary
                 FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
                 WHERE x.indrelid = (t || '_legacy')::regclass LOOP
            IF i.indisprimary THEN
                EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (%s)', t, left(i.relname, -7),
                               substring(i.def FROM '\((.*)\)$'));
            ELSE
                EXECUTE regexp_replace(
                    replace(i.def, 'INDEX ' || i.relname || ' ON ', 'INDEX ' || left(i.relname, -7) || ' ON '),
                    ' ON (\S*)' || t || '_legacy USING ', ' ON \1' || t || ' USING ');
            END IF;
        END LOOP;
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)',
                       t, t || '_legacy', legacy_end);
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t || '_legacy', t || '_legacy_range');
        -- Daily partitions from the legacy one's end to a week ahead.
        FOR d IN SELECT generate_series(first_day, greatest(first_day, (now() AT TIME ZONE 'UTC')::date + 7), '1 day')::date LOOP
            lo := encode(substring(int8send((extract(epoch FROM d::timestamp) * 1000)::bigint) FROM 3)
                         || '\x00000000000000000000'::bytea, 'hex')::uuid;
            hi := encode(substring(int8send((extract(epoch FROM (d + 1)::timestamp) * 1000)::bigint) FROM 3)
                         || '\x00000000000000000000'::bytea, 'hex')::uuid;
            EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                           t || '_p' || to_char(d, 'YYYYMMDD'), t, lo, hi);
        END LOOP;
        EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', t || '_default', t);
    END LOOP;
    DROP TABLE hookd_partitioning;
END $$;
COMMIT;
