-- A success releases what waits for it without writing it (#48).
--
-- A pending notification waits while `behind` names a notification that
-- has not succeeded: one pending, the failed or cancelled one holding its
-- key (`hold`), or one retention removed (an orphan, which housekeeping
-- gives a place again). Once the one it names succeeded it waits for
-- nothing; succeeded is final, so that never changes back.
--
-- Why: the recording of a batch of outcomes wrote each successor of an
-- ordered success (`behind = NULL`). That write changes an indexed column,
-- so it is never a HOT update: a new version of the row and an entry in
-- each of the table's indexes, 15.6 ms a batch of about 490 in the ordering
-- bench (pg_stat_statements), as much as the recording itself. The
-- recording now only reads the successors, to index them; a failed or
-- cancelled end still passes its successors over (`behind` becomes what it
-- waited for), as a hold, a retention and a requeue need it.
--
-- So that `behind` never names a removed success: the recording of a
-- success clears the notification's own `behind`, and retention clears
-- the `behind` of pending notifications naming a success before removing
-- it (`postgres::housekeeping`, `postgres::partitions`).
--
-- `hookd_waits_for(behind)` is the rule for a read: what the notification
-- waits for (NULL: nothing). Statements on the delivery path write it
-- inline (`postgres::ordering::released!`), where `behind IS NULL` short-
-- circuits it for every unordered row; a function with a subquery is not
-- inlined.
CREATE FUNCTION hookd_waits_for(behind uuid) RETURNS uuid LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN $1 IS NULL OR EXISTS (
        SELECT 1 FROM notifications p WHERE p.id = $1 AND p.status = 'succeeded')
        THEN NULL ELSE $1 END
$$;

-- The release trigger, for ends outside a recording (a cancel, the
-- breaker's fail of held ones, a pull consumer's answer): a notification
-- is its key's head when it waits for nothing by the rule above, not only
-- when `behind` is NULL, and what it passes to its successors and its
-- key's tail is what it waited for by that rule.
CREATE OR REPLACE FUNCTION hookd_release_order() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    waited uuid := hookd_waits_for(NEW.behind);
    holds boolean := NEW.status <> 'succeeded' AND waited IS NULL AND EXISTS (
        SELECT 1 FROM endpoints
        WHERE id = NEW.endpoint_id AND ordering_on_failure = 'hold');
BEGIN
    UPDATE order_keys SET
        held_by = CASE WHEN holds THEN NEW.id
            WHEN NEW.status = 'succeeded' AND held_by = NEW.id THEN NULL
            ELSE held_by END,
        tail = CASE WHEN tail = NEW.id THEN CASE WHEN holds THEN NULL ELSE waited END
            ELSE tail END
        WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
          AND (holds OR tail = NEW.id OR (NEW.status = 'succeeded' AND held_by = NEW.id));
    IF holds THEN
        RETURN NULL;
    END IF;
    UPDATE notifications SET
        behind = waited,
        needs_index = needs_index OR (waited IS NULL AND NOT pull),
        next_attempt_at = CASE WHEN waited IS NULL AND pull
            THEN GREATEST(next_attempt_at, NEW.updated_at) ELSE next_attempt_at END
    WHERE behind = NEW.id AND (status = 'pending') IS TRUE;
    RETURN NULL;
END;
$$;
