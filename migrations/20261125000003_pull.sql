-- Pull consumption (DESIGN.md §10).
--
-- A pull endpoint has no URL: consumers take its notifications when they
-- are due, under a lease, and ack or nack them. PostgreSQL holds the
-- leases (not Redis), so a lease outlives a crash of hookd and a loss of
-- the Redis index, and a receipt is checked where the row is written.

ALTER TABLE endpoints ADD COLUMN delivery text NOT NULL DEFAULT 'push'
    CHECK (delivery IN ('push', 'pull'));
ALTER TABLE endpoints ALTER COLUMN url DROP NOT NULL;
ALTER TABLE endpoints ADD CONSTRAINT endpoints_url_by_delivery
    CHECK ((delivery = 'push') = (url IS NOT NULL));

-- A pull notification is never in the Redis index: it waits here, in due
-- order per endpoint. While leased, `lease_id` names the lease (the
-- receipt carries it), `leased_at` is when the attempt started, and
-- `next_attempt_at` is when the lease runs out.
ALTER TABLE notifications ADD COLUMN pull boolean NOT NULL DEFAULT false;
ALTER TABLE notifications ADD COLUMN lease_id uuid;
ALTER TABLE notifications ADD COLUMN leased_at timestamptz;

-- What a pull takes: pending pull rows of one endpoint, earliest due first.
CREATE INDEX notifications_pull_due ON notifications (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending' AND pull;
-- Leases by expiry, for the sweep that records `lease_expired` attempts.
CREATE INDEX notifications_leases ON notifications (next_attempt_at) WHERE lease_id IS NOT NULL;

-- One consumer token per endpoint (`hkc_…`), kept as its SHA-256 digest.
-- Issuing a new one replaces the old: that is the rotation.
CREATE TABLE consumer_tokens (
    endpoint_id uuid PRIMARY KEY REFERENCES endpoints (id),
    digest      bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);
