-- hookd's schema: endpoints (receivers and their policy), notifications (one
-- payload for one endpoint, with its delivery state) and attempts (every
-- delivery attempt, for the status API). PostgreSQL is the source of truth;
-- Redis only indexes when pending notifications are next due.

CREATE TABLE endpoints (
    id                   uuid PRIMARY KEY,              -- UUIDv7: time-ordered
    uid                  text,                          -- the producer's own name for it
    url                  text NOT NULL,
    description          text NOT NULL DEFAULT '',
    secret               text NOT NULL,                 -- whsec_<base64>
    previous_secret      text,                          -- still signs until previous_secret_expires_at
    previous_secret_expires_at timestamptz,
    event_types          text[],                        -- NULL: every event type
    schedule_ms          bigint[] NOT NULL,             -- delays, see domain::schedule
    schedule_name        text,                          -- preset name, when the schedule is one
    success_body         text,
    permanent_statuses   integer[] NOT NULL DEFAULT '{410}',
    headers              jsonb NOT NULL DEFAULT '{}',
    timeout_ms           integer,                       -- NULL: sender.timeout_ms
    max_in_flight        integer,                       -- NULL: dispatcher.endpoint_max_in_flight
    disabled             boolean NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    deleted_at           timestamptz                    -- soft delete keeps notification history intact
);

-- A uid names one live endpoint; a deleted endpoint frees its uid.
CREATE UNIQUE INDEX endpoints_uid_key ON endpoints (uid) WHERE deleted_at IS NULL;

CREATE TABLE notifications (
    id               uuid PRIMARY KEY,                  -- UUIDv7; also the webhook-id
    endpoint_id      uuid NOT NULL REFERENCES endpoints (id),
    key              text,                              -- producer's business key, unique per endpoint
    event_type       text,
    content_type     text NOT NULL,
    body             bytea NOT NULL,                    -- sent byte for byte
    headers          jsonb NOT NULL DEFAULT '{}',
    schedule_ms      bigint[] NOT NULL,                 -- snapshot taken at creation
    schedule_name    text,
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
    attempts         integer NOT NULL DEFAULT 0,        -- attempts made, over every series
    series_start     integer NOT NULL DEFAULT 0,        -- `attempts` when the current series began (retry)
    deliver_at       timestamptz NOT NULL,
    next_attempt_at  timestamptz,                       -- NULL once the notification is final
    needs_index      boolean NOT NULL DEFAULT false,    -- Redis was unreachable when it became due
    last_attempt_at  timestamptz,
    last_status_code integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    completed_at     timestamptz,
    CONSTRAINT notifications_endpoint_key UNIQUE (endpoint_id, key)
);

-- Dispatcher and rebuild: pending rows by due time.
CREATE INDEX notifications_pending_due ON notifications (next_attempt_at, id) WHERE status = 'pending';
-- Rows whose indexing in Redis is still owed.
CREATE INDEX notifications_needs_index ON notifications (next_attempt_at) WHERE needs_index;
-- Listing, newest first, by endpoint (the unique constraint serves endpoint + key).
CREATE INDEX notifications_endpoint_newest ON notifications (endpoint_id, id DESC);
CREATE INDEX notifications_key_newest ON notifications (key, id DESC) WHERE key IS NOT NULL;
CREATE INDEX notifications_status_newest ON notifications (status, id DESC);
CREATE INDEX notifications_event_type_newest ON notifications (event_type, id DESC) WHERE event_type IS NOT NULL;
-- Retention sweeps: final rows by completion time.
CREATE INDEX notifications_completed ON notifications (completed_at) WHERE completed_at IS NOT NULL;

CREATE TABLE attempts (
    notification_id  uuid NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    number           integer NOT NULL,                  -- 1-based, over every series
    started_at       timestamptz NOT NULL,
    duration_ms      integer NOT NULL,
    status_code      integer,
    response_body    text,                              -- first 4 KiB
    error_code       text,                              -- e.g. timeout, connect, blocked_address
    error_message    text,
    outcome          text NOT NULL CHECK (outcome IN ('succeeded', 'retry', 'failed')),
    -- One row per attempt number: a second process recording the same attempt
    -- (after a lease expired) conflicts instead of counting it twice.
    PRIMARY KEY (notification_id, number)
);
