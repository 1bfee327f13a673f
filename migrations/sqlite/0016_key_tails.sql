-- Each key's tail kept on its row, as ../20261209000055_key_tails.sql
-- (whose comments say why): a create reads it from the key's row instead
-- of searching the key's pending notifications. One writer at a time:
-- the end's write of the row needs no lock, only to keep the tail.
ALTER TABLE order_keys ADD COLUMN tail BLOB;
ALTER TABLE order_keys ADD COLUMN previous_tail BLOB;

UPDATE order_keys SET tail = (
    SELECT n.id FROM notifications n
    WHERE n.endpoint_id = order_keys.endpoint_id AND n.order_key = order_keys.order_key
      AND n.sequence IS NOT NULL AND n.status = 'pending'
      AND NOT EXISTS (SELECT 1 FROM notifications s
                      WHERE s.behind = n.id AND s.status = 'pending')
    ORDER BY n.sequence DESC LIMIT 1);

DROP TRIGGER notifications_release_order;

CREATE TRIGGER notifications_release_order
    AFTER UPDATE OF status ON notifications
    FOR EACH ROW
    WHEN OLD.status = 'pending' AND NEW.status <> 'pending' AND NEW.sequence IS NOT NULL
BEGIN
    -- The key's tail, ended, leaves its predecessor as the tail (none if
    -- it holds the key). Before the holder is written: `held_by` below
    -- names what holds.
    UPDATE order_keys SET tail = CASE
            WHEN NEW.status <> 'succeeded' AND NEW.behind IS NULL
                 AND (SELECT ordering_on_failure FROM endpoints WHERE id = NEW.endpoint_id) = 'hold'
            THEN NULL ELSE NEW.behind END
        WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key AND tail = NEW.id;
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
    WHERE behind = NEW.id AND status = 'pending'
      AND NOT (NEW.status <> 'succeeded' AND NEW.behind IS NULL
               AND (SELECT ordering_on_failure FROM endpoints WHERE id = NEW.endpoint_id) = 'hold');
END;
