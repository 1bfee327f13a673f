-- The release trigger stands aside for a success the recorder records
-- (#48), as PostgreSQL's does for the whole recording (migration
-- 20261208000054): its own trigger writes only what such a success
-- changes, the key row and any pull successor.
--
-- Why: for such a success the trigger's successors' update wrote nothing
-- for a pushed successor (the recorder reads and indexes those itself,
-- 0018), yet it still ran for every success: each found its successor
-- through `notifications_behind`, read it and tested it, in an update
-- whose conditions read other rows. In a replay of the ordering bench's
-- statements (20 batches of 1,000 keys, the sqlite3 shell), recording
-- the successes of a batch of ordered notifications cost 2.0-2.1 times
-- their insert; with this, 1.2 (1.05-1.1 with no trigger at all;
-- BENCHMARKS.md).
--
-- The two triggers are exclusive (`release_by.recorder` is 0 or 1), so
-- neither depends on the order in which SQLite fires them. The recorded
-- one needs neither the rule below nor a test of `held_by`: what waits
-- for a success waits for nothing (0017), and a success never leaves its
-- key held by itself. Elsewhere, NEW waits for nothing when
--   NEW.behind IS NULL OR EXISTS (SELECT 1 FROM notifications p
--       WHERE p.id = NEW.behind AND p.status = 'succeeded')
DROP TRIGGER notifications_release_order;

CREATE TRIGGER notifications_release_order
    AFTER UPDATE OF status ON notifications
    FOR EACH ROW
    WHEN OLD.status = 'pending' AND NEW.status <> 'pending' AND NEW.sequence IS NOT NULL
      AND (NEW.status <> 'succeeded' OR (SELECT recorder FROM release_by) = 0)
BEGIN
    -- As 0018 wrote it, for every other end: the key's row in one write,
    -- then the successors, which wait for what it waited for unless it
    -- holds its key now. The recorder's test left the successors' update:
    -- a success it records comes to the trigger below.
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
            ELSE held_by END
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
CREATE TRIGGER notifications_release_order_recorded
    AFTER UPDATE OF status ON notifications
    FOR EACH ROW
    WHEN OLD.status = 'pending' AND NEW.status = 'succeeded' AND NEW.sequence IS NOT NULL
      AND (SELECT recorder FROM release_by) = 1
BEGIN
    -- A success releases what waits for it: its key has no tail if it was
    -- the tail, and is no longer held by it.
    UPDATE order_keys SET
        tail = CASE WHEN tail = NEW.id THEN NULL ELSE tail END,
        held_by = CASE WHEN held_by = NEW.id THEN NULL ELSE held_by END
        WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
          AND (tail = NEW.id OR held_by = NEW.id);
    -- Its pull successors (an endpoint turned pull while they waited; the
    -- recorder reads only pushed ones) wait for nothing, and for a
    -- consumer from now.
    UPDATE notifications SET
        behind = NULL,
        next_attempt_at = max(next_attempt_at, NEW.updated_at)
    WHERE behind = NEW.id AND status = 'pending' AND pull = 1;
END;
