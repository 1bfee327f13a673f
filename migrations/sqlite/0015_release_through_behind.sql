-- The release trigger finds a notification's successors through
-- `notifications_behind` alone, as ../20261207000053_release_through_behind.sql
-- does in PostgreSQL (#48). Its successor update named the key besides
-- `behind`, and SQLite's planner, with two equalities against one,
-- searched `notifications_order` by the key: every recorded end read all
-- of its key's notifications, ended ones included (20 per key in the
-- ordering bench, any number for a key that lives long). `behind = id`
-- names the successors exactly.
DROP TRIGGER notifications_release_order;

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
    WHERE behind = NEW.id AND status = 'pending'
      AND NOT (NEW.status <> 'succeeded' AND NEW.behind IS NULL
               AND (SELECT ordering_on_failure FROM endpoints WHERE id = NEW.endpoint_id) = 'hold');
END;
