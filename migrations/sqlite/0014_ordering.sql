-- Ordered delivery per key, as ../20261206000052_ordering.sql (whose
-- comments say why). One writer at a time: the key's row needs no lock.
ALTER TABLE endpoints ADD COLUMN ordering TEXT NOT NULL DEFAULT 'none'
    CHECK (ordering IN ('none', 'key'));
ALTER TABLE endpoints ADD COLUMN ordering_on_failure TEXT NOT NULL DEFAULT 'continue'
    CHECK (ordering_on_failure IN ('continue', 'hold'));

ALTER TABLE events ADD COLUMN order_key TEXT;
ALTER TABLE notifications ADD COLUMN order_key TEXT;
ALTER TABLE notifications ADD COLUMN sequence INTEGER;
ALTER TABLE notifications ADD COLUMN behind BLOB;

CREATE TABLE order_keys (
    endpoint_id   BLOB NOT NULL,
    order_key     TEXT NOT NULL,
    last_sequence INTEGER NOT NULL,
    held_by       BLOB,
    PRIMARY KEY (endpoint_id, order_key)
) STRICT;

CREATE INDEX notifications_order ON notifications (endpoint_id, order_key, sequence)
    WHERE sequence IS NOT NULL;
-- What waits for a notification: its successor at a release, and whether
-- it is its key's tail at a create.
CREATE INDEX notifications_behind ON notifications (behind) WHERE behind IS NOT NULL;

CREATE TRIGGER notifications_release_order
    AFTER UPDATE OF status ON notifications
    FOR EACH ROW
    WHEN OLD.status = 'pending' AND NEW.status <> 'pending' AND NEW.sequence IS NOT NULL
BEGIN
    UPDATE order_keys SET held_by = NULL
        WHERE NEW.status = 'succeeded'
          AND endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
          AND held_by = NEW.id;
    UPDATE order_keys SET held_by = NEW.id
        WHERE NEW.status <> 'succeeded' AND NEW.behind IS NULL
          AND endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
          AND (SELECT ordering_on_failure FROM endpoints WHERE id = NEW.endpoint_id) = 'hold';
    UPDATE notifications SET
        behind = NEW.behind,
        needs_index = CASE WHEN NEW.behind IS NULL AND pull = 0 THEN 1 ELSE needs_index END,
        next_attempt_at = CASE WHEN NEW.behind IS NULL AND pull = 1
            THEN max(next_attempt_at, NEW.updated_at) ELSE next_attempt_at END
    WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
      AND sequence IS NOT NULL AND behind = NEW.id AND status = 'pending'
      AND NOT (NEW.status <> 'succeeded' AND NEW.behind IS NULL
               AND (SELECT ordering_on_failure FROM endpoints WHERE id = NEW.endpoint_id) = 'hold');
END;
