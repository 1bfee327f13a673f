-- Events and fan-out (DESIGN.md §9).
--
-- An event is one business fact; it is stored once, with its payload, and
-- fans out in the same statement to one notification per subscribed
-- endpoint of its owner. Those notifications carry `event_id` and an empty
-- body: the dispatcher and the status API read the event's body, so an
-- event to 10,000 endpoints writes its payload once, not 10,000 times.

CREATE TABLE events (
    id           uuid PRIMARY KEY,                -- UUIDv7; sent as hookd-event-id
    owner        text,                            -- the tenant; NULL: no owner
    event_type   text NOT NULL,
    key          text,                            -- the producer's business key, unique per owner
    content_type text NOT NULL,
    body         bytea NOT NULL,                  -- sent byte for byte by every delivery
    deliver_at   timestamptz NOT NULL,
    deliveries   integer NOT NULL,                -- notifications created by the fan-out
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- A key names one event per owner; events without an owner share one
-- namespace (NULLS NOT DISTINCT, PostgreSQL 15).
CREATE UNIQUE INDEX events_key ON events (key, owner) NULLS NOT DISTINCT WHERE key IS NOT NULL;
-- Listing, newest first, by owner and by type (the primary key serves the rest).
CREATE INDEX events_owner_newest ON events (owner, id DESC);
CREATE INDEX events_event_type_newest ON events (event_type, id DESC);

-- The tenant an endpoint belongs to: events fan out to their owner's
-- endpoints only. The fan-out reads live endpoints by owner.
ALTER TABLE endpoints ADD COLUMN owner text;
CREATE INDEX endpoints_owner ON endpoints (owner, id) WHERE deleted_at IS NULL;

-- A delivery of an event names it; its deliveries are listed, counted and
-- cancelled by it. Notifications without an event get no entry.
-- No foreign key: both rows are written by one statement, and a check per
-- delivery row would cost every fan-out an index probe per endpoint.
ALTER TABLE notifications ADD COLUMN event_id uuid;
CREATE INDEX notifications_event ON notifications (event_id, id DESC) WHERE event_id IS NOT NULL;

-- Alipay's per-order notify_url: this notification goes here instead of
-- its endpoint's URL, with the endpoint's secret and policy.
ALTER TABLE notifications ADD COLUMN url text;
