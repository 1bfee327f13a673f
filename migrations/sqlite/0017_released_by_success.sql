-- The release trigger by PostgreSQL's rule (migration 20261210000056,
-- which says why it changed, #48): a pending notification waits while
-- `behind` names a notification that has not succeeded. PostgreSQL's
-- recorder leaves a success's pushed successors unwritten; SQLite's trigger
-- still writes them (`behind` NULL, marked for the index): leaving them
-- unwritten here measured no faster in the ordering bench (0.64 and 0.66
-- against 0.63 and 0.65), and the trigger is what releases them whatever
-- path ended the success. The rule still decides here what the ended one
-- was and passes on, and SQLite's reads apply it (`sqlite::ordering::
-- released!`), so that `behind` means the same in both backends: a
-- notification released by a success, then failed or cancelled under
-- `hold`, holds its key.
--
-- SQLite's triggers have no variables: the rule is written out where it
-- is used. NEW waits for nothing when
--   NEW.behind IS NULL OR EXISTS (SELECT 1 FROM notifications p
--       WHERE p.id = NEW.behind AND p.status = 'succeeded')
DROP TRIGGER notifications_release_order;

CREATE TRIGGER notifications_release_order
    AFTER UPDATE OF status ON notifications
    FOR EACH ROW
    WHEN OLD.status = 'pending' AND NEW.status <> 'pending' AND NEW.sequence IS NOT NULL
BEGIN
    -- The key's tail, ended, leaves what it waited for as the tail (none
    -- if it holds the key). Before the holder is written: `held_by` below
    -- names what holds.
    UPDATE order_keys SET tail = CASE
            WHEN NEW.behind IS NULL OR EXISTS (SELECT 1 FROM notifications p
                WHERE p.id = NEW.behind AND p.status = 'succeeded')
            THEN NULL ELSE NEW.behind END
        WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key AND tail = NEW.id;
    UPDATE order_keys SET held_by = NULL
        WHERE NEW.status = 'succeeded'
          AND endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
          AND held_by = NEW.id;
    UPDATE order_keys SET held_by = NEW.id
        WHERE NEW.status <> 'succeeded'
          AND (NEW.behind IS NULL OR EXISTS (SELECT 1 FROM notifications p
              WHERE p.id = NEW.behind AND p.status = 'succeeded'))
          AND endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
          AND (SELECT ordering_on_failure FROM endpoints WHERE id = NEW.endpoint_id) = 'hold';
    -- Its successors wait for what it waited for, by the rule, unless it
    -- holds its key now (they stay).
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
