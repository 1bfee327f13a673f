-- A success the recorder records leaves its pushed successors unwritten,
-- as in PostgreSQL (migration 20261210000056, #48): a pending notification
-- waits while `behind` names one that has not succeeded, and a success is
-- final, so its own write releases them. The recorder reads them before
-- it records (`sqlite::recording::SUCCESSORS`) and indexes the ones a
-- success released. Every other end (a failure, a cancel, a success
-- recorded elsewhere or not as ordered) still passes its successors over
-- here and marks them for the index: `release_by.recorder` is 1 only
-- inside a recording transaction that reads them itself, as PostgreSQL's
-- `hookd.release = 'batch'` (one writer: no other transaction sees it).
--
-- 0017 still wrote them: that measured no faster while each create's key
-- rows came back a row at a time (12.7 ms a batch of 1,000). With those
-- read as one (`columns::json_rows`), the trigger's writes of `behind`
-- and `needs_index` and the recorder's unmarking after were a fifth of an
-- ordered round's time on the one writer (`BENCHMARKS.md`).
--
-- The trigger also writes each ended notification's key row in one
-- update instead of three (PostgreSQL's `hookd_release_order` writes it
-- once too): each of the three found the row again.
--
-- SQLite's triggers have no variables: the rule is written out where it
-- is used. NEW waits for nothing when
--   NEW.behind IS NULL OR EXISTS (SELECT 1 FROM notifications p
--       WHERE p.id = NEW.behind AND p.status = 'succeeded')
CREATE TABLE release_by (recorder INTEGER NOT NULL) STRICT;
INSERT INTO release_by (recorder) VALUES (0);

DROP TRIGGER notifications_release_order;

CREATE TRIGGER notifications_release_order
    AFTER UPDATE OF status ON notifications
    FOR EACH ROW
    WHEN OLD.status = 'pending' AND NEW.status <> 'pending' AND NEW.sequence IS NOT NULL
BEGIN
    -- The key's row, in one write (three before: each found the row
    -- again): its tail, ended, leaves what it waited for as the tail (none
    -- if it holds the key); a success frees the key if it held it; one
    -- that holds (ended otherwise, waiting for nothing, on an endpoint
    -- that holds its keys) names itself. `held_by` is then what the
    -- successors' update below reads.
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
    -- Its successors wait for what it waited for, by the rule, unless it
    -- holds its key now (they stay). A success the recorder records
    -- leaves its pushed successors as they are: the rule releases them,
    -- and the recorder indexes them.
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
      AND (NEW.status <> 'succeeded' OR pull = 1
           OR (SELECT recorder FROM release_by) = 0)
      AND NOT EXISTS (SELECT 1 FROM order_keys
          WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
            AND held_by = NEW.id);
END;
