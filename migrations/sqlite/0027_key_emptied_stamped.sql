-- SQLite's key rows keep `emptied_at` as PostgreSQL's do (its migration
-- 20261217000063), and retention reads it in both (#48): a key goes once
-- its line is empty (`tail IS NULL`), it was last emptied before
-- retention's cutoff and no stored notification holds it
-- (`domain::retention::order_key_expired`, decided in Rust for both
-- backends). Until now SQLite answered "is any notification of this key
-- left" through `notifications_order` instead, a second rule.
--
-- Every write that can empty a key's line now stamps its row with the
-- end's time, the later of the stamp and the end (as PostgreSQL's
-- `GREATEST`): this trigger (every end but a success the recorder
-- records), the recorder's own writes for those (`SUCCESSES_RELEASE`)
-- and a change of ordering (`sqlite::ordering::release`). A create stamps
-- a key row it inserts with its own time.
--
-- A key row written before this has no stamp: it counts as emptied now,
-- so an empty one goes a retention period from now, never before what was
-- left of its history could.
UPDATE order_keys SET emptied_at = CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)
    WHERE emptied_at IS NULL;

-- As 0023 wrote it, with the stamp.
DROP TRIGGER notifications_release_order;
CREATE TRIGGER notifications_release_order
    AFTER UPDATE OF status ON notifications
    FOR EACH ROW
    WHEN OLD.status = 'pending' AND NEW.status <> 'pending' AND NEW.sequence IS NOT NULL
      AND (NEW.status <> 'succeeded' OR (SELECT recorder FROM release_by) = 0)
BEGIN
    UPDATE order_keys SET
        tail = CASE WHEN tail = NEW.id THEN
                CASE WHEN (NEW.behind IS NULL OR EXISTS (SELECT 1 FROM notifications p
                WHERE p.id = NEW.behind AND p.status = 'succeeded'))
                THEN NULL ELSE NEW.behind END
            ELSE tail END,
        held_by = CASE
            WHEN NEW.status <> 'succeeded'
                AND (NEW.behind IS NULL OR EXISTS (SELECT 1 FROM notifications p
                WHERE p.id = NEW.behind AND p.status = 'succeeded'))
                AND (SELECT ordering_on_failure FROM endpoints WHERE id = NEW.endpoint_id) = 'hold'
            THEN NEW.id
            WHEN NEW.status = 'succeeded' AND held_by = NEW.id THEN NULL
            ELSE held_by END,
        emptied_at = max(ifnull(emptied_at, 0), NEW.updated_at)
        WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
          AND (tail = NEW.id OR (NEW.status = 'succeeded' AND held_by = NEW.id)
               OR (NEW.status <> 'succeeded'
                   AND (NEW.behind IS NULL OR EXISTS (SELECT 1 FROM notifications p
                WHERE p.id = NEW.behind AND p.status = 'succeeded'))
                   AND (SELECT ordering_on_failure FROM endpoints
                        WHERE id = NEW.endpoint_id) = 'hold'));
    UPDATE notifications SET
        behind = CASE WHEN NEW.behind IS NULL OR EXISTS (SELECT 1 FROM notifications p
                WHERE p.id = NEW.behind AND p.status = 'succeeded')
            THEN NULL ELSE NEW.behind END,
        needs_index = CASE WHEN pull = 0 AND (NEW.behind IS NULL OR EXISTS (
                SELECT 1 FROM notifications p WHERE p.id = NEW.behind AND p.status = 'succeeded'))
            THEN 1 ELSE needs_index END,
        next_attempt_at = CASE WHEN pull = 1 AND (NEW.behind IS NULL OR EXISTS (
                SELECT 1 FROM notifications p WHERE p.id = NEW.behind AND p.status = 'succeeded'))
            THEN max(next_attempt_at, NEW.updated_at) ELSE next_attempt_at END
    WHERE behind = NEW.id AND status = 'pending'
      AND NOT EXISTS (SELECT 1 FROM order_keys
          WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
            AND held_by = NEW.id);
END;
