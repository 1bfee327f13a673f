-- Operator events and automatic disabling of failing endpoints.
--
-- Operator events (`notification.failed`, `endpoint.disabled`) are ordinary
-- notifications to a config-managed endpoint, so they get the same signing,
-- retries, attempt history and durability as every other delivery. They are
-- written in the same statement as the change they report: a notification
-- never ends failed without its event being committed with it.

-- A managed endpoint belongs to hookd's configuration (operator.url): the
-- REST API neither lists nor changes it.
ALTER TABLE endpoints ADD COLUMN managed boolean NOT NULL DEFAULT false;
-- Since when every attempt to the endpoint has failed; NULL after a success.
ALTER TABLE endpoints ADD COLUMN failing_since timestamptz;
-- Why the endpoint is disabled, when hookd disabled it (`failing`).
ALTER TABLE endpoints ADD COLUMN disabled_reason text;

-- The periodic disable check reads only endpoints that are failing.
CREATE INDEX endpoints_failing ON endpoints (failing_since)
    WHERE failing_since IS NOT NULL AND NOT disabled AND deleted_at IS NULL;

-- A UUIDv7 (RFC 9562) made in SQL, for rows PostgreSQL creates itself: the
-- millisecond Unix time in the first 48 bits, version 7, variant 10.
CREATE FUNCTION hookd_uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid
$$;
