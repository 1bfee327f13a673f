-- Ordered delivery per key (docs/design.md §17, #48).
--
-- An endpoint with `ordering = 'key'` attempts the notifications that
-- share an `order_key` one at a time, in creation order. Each ordered
-- notification gets its key's next `sequence` (1, 2, 3 …, sent as
-- `webhook-sequence`) and, while an earlier one of its key is pending,
-- `behind` = that one's id: a notification with `behind` set is not in
-- the due index and no pull consumer is offered it, so no dispatcher and
-- no consumer can take it, in any process.
--
-- `order_keys` holds each key's last sequence. Its row is locked by the
-- transactions that create notifications of the key (each in (endpoint,
-- key) order), so two creates never take the same tail. The release (the
-- trigger below) takes no lock on it: a batch of outcomes ends
-- notifications of many keys in no order of its own, and would deadlock
-- with a create. A create racing its predecessor's end may therefore read
-- the predecessor as pending and wait behind it after its release ran;
-- housekeeping releases such a notification within a second
-- (`release_stranded`). `held_by` is the failed (or cancelled) head that
-- holds the key under `ordering_on_failure = 'hold'`.
ALTER TABLE endpoints
    ADD COLUMN ordering text NOT NULL DEFAULT 'none'
        CONSTRAINT endpoints_ordering_values CHECK (ordering IN ('none', 'key')),
    ADD COLUMN ordering_on_failure text NOT NULL DEFAULT 'continue'
        CONSTRAINT endpoints_ordering_on_failure_values
        CHECK (ordering_on_failure IN ('continue', 'hold'));

-- An event's key: its deliveries carry it.
ALTER TABLE events ADD COLUMN order_key text;

ALTER TABLE notifications
    ADD COLUMN order_key text,
    ADD COLUMN sequence bigint,
    ADD COLUMN behind uuid;

CREATE TABLE order_keys (
    endpoint_id   uuid NOT NULL,
    order_key     text NOT NULL,
    last_sequence bigint NOT NULL,
    held_by       uuid,
    PRIMARY KEY (endpoint_id, order_key)
);

-- A key's notifications by sequence: its predecessor at a create, its
-- successor at a release.
CREATE INDEX notifications_order ON notifications (endpoint_id, order_key, sequence)
    WHERE sequence IS NOT NULL;
-- What waits for a notification: its successor at a release, and whether
-- it is its key's tail at a create.
CREATE INDEX notifications_behind ON notifications (behind) WHERE behind IS NOT NULL;

-- The release, in the transaction that makes a notification of a key
-- final, whatever path does it (a delivery's outcome, a cancel, a pull
-- consumer's ack or nack, a held notification failed by the breaker or
-- `max_wait`): the notification leaves its key's chain, its successor
-- now waits for what it waited for, and a successor that waits for
-- nothing more is owed to the due index (`needs_index`; the dispatcher
-- that recorded the outcome adds it at once, the housekeeper within a
-- second otherwise). A pull successor's wait for a consumer starts then.
-- Under `hold`, a head that ends failed or cancelled keeps its successors
-- waiting until it is retried to success (they may be cancelled).
CREATE FUNCTION hookd_release_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'succeeded' THEN
        UPDATE order_keys SET held_by = NULL
            WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
              AND held_by = NEW.id;
    ELSIF NEW.behind IS NULL AND EXISTS (
        SELECT 1 FROM endpoints
        WHERE id = NEW.endpoint_id AND ordering_on_failure = 'hold'
    ) THEN
        UPDATE order_keys SET held_by = NEW.id
            WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key;
        RETURN NULL;
    END IF;
    UPDATE notifications SET
        behind = NEW.behind,
        needs_index = needs_index OR (NEW.behind IS NULL AND NOT pull),
        next_attempt_at = CASE WHEN NEW.behind IS NULL AND pull
            THEN GREATEST(next_attempt_at, NEW.updated_at) ELSE next_attempt_at END
    WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
      AND sequence IS NOT NULL AND behind = NEW.id AND status = 'pending';
    RETURN NULL;
END;
$$;

CREATE TRIGGER notifications_release_order
    AFTER UPDATE OF status ON notifications
    FOR EACH ROW
    WHEN (OLD.status = 'pending' AND NEW.status <> 'pending' AND NEW.sequence IS NOT NULL)
    EXECUTE FUNCTION hookd_release_order();
