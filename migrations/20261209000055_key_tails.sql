-- Each key's tail kept on its row (#48): `order_keys.tail` is the key's
-- pending notification that none waits for, or NULL when the key has
-- none (a key held under `hold` names its holder in `held_by`).
--
-- Why: a create read its tail with a search of the key's pending
-- notifications (`TAILS`), and since an end took no key lock, a tail
-- could end between that read and the create's commit, unseen by both:
-- the create then passed over it again after its commit, waiting for
-- the end's transaction if it had to (`settle`). In the ordering bench
-- that was 70 of the 140 ms an ordered batch of 1,000 took to create.
--
-- Now the row says it, and the two halves meet on the row's lock:
-- - a create writes the row first (its `last_sequence`, as before, and
--   `tail`: its own last notification of the key), and reads the tail
--   before from that write, as the last transaction that wrote the row
--   left it (`previous_tail`, which only that write sets and returns:
--   PostgreSQL before 18 has no `RETURNING OLD`);
-- - an end of the key's tail (or of its holder, or of one that comes to
--   hold it) writes the row too, before it looks for what waits for the
--   notification, and looks in a snapshot taken after that write: a
--   create that held the row is committed by then, and what it placed
--   behind the tail is seen and passed over. The tail's predecessor is
--   the key's tail after it (NULL for a head).
-- PostgreSQL's READ COMMITTED rechecks `tail = NEW.id` on the row's
-- latest version when the write waited, so an end whose notification
-- stopped being the tail meanwhile leaves the row alone.
ALTER TABLE order_keys ADD COLUMN tail uuid, ADD COLUMN previous_tail uuid;

UPDATE order_keys k SET tail = (
    SELECT n.id FROM notifications n
    WHERE n.endpoint_id = k.endpoint_id AND n.order_key = k.order_key
      AND n.sequence IS NOT NULL AND n.status = 'pending'
      AND NOT EXISTS (SELECT 1 FROM notifications s
                      WHERE s.behind = n.id AND s.status = 'pending')
    ORDER BY n.sequence DESC LIMIT 1);

-- Each statement of a plpgsql function (VOLATILE) takes its own snapshot:
-- the successors' update sees a create that committed while the key's
-- row was being written.
CREATE OR REPLACE FUNCTION hookd_release_order() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    holds boolean := NEW.status <> 'succeeded' AND NEW.behind IS NULL AND EXISTS (
        SELECT 1 FROM endpoints
        WHERE id = NEW.endpoint_id AND ordering_on_failure = 'hold');
BEGIN
    UPDATE order_keys SET
        held_by = CASE WHEN holds THEN NEW.id
            WHEN NEW.status = 'succeeded' AND held_by = NEW.id THEN NULL
            ELSE held_by END,
        tail = CASE WHEN tail = NEW.id THEN CASE WHEN holds THEN NULL ELSE NEW.behind END
            ELSE tail END
        WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
          AND (holds OR tail = NEW.id OR (NEW.status = 'succeeded' AND held_by = NEW.id));
    IF holds THEN
        RETURN NULL;
    END IF;
    UPDATE notifications SET
        behind = NEW.behind,
        needs_index = needs_index OR (NEW.behind IS NULL AND NOT pull),
        next_attempt_at = CASE WHEN NEW.behind IS NULL AND pull
            THEN GREATEST(next_attempt_at, NEW.updated_at) ELSE next_attempt_at END
    WHERE behind = NEW.id AND (status = 'pending') IS TRUE;
    RETURN NULL;
END;
$$;
