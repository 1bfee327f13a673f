-- `notifications_order` holds only pending ordered notifications, and a
-- key's row says when its line was last emptied (#48).
--
-- Why: `notifications_order` took an entry for every version of every
-- ordered row: one at the create, and another at the end that the
-- recording writes (a change of `status`, never a HOT update). Its entries
-- go where their key sorts, not at the end of the index as those of the
-- time-ordered indexes do, so each is a write into a page of its own. In
-- the ordering bench (1,000 keys × 20 notifications, server mode) the
-- recording and the create of an ordered round cost PostgreSQL about 280
-- ms more than an unordered round's (1,373 against 889 ms in all); without
-- the index's entries for ended rows the recording costs what an unordered
-- one does, and the round's ordered ÷ unordered drain went from 0.70-0.76
-- to 0.78-0.80 (BENCHMARKS.md, "the order index's entries").
--
-- Every read of a key's notifications by sequence is of its pending ones
-- (a requeue's place in line, an orphan's new place), and tests them as
-- `(status = 'pending') IS TRUE`, the predicate's own words: PostgreSQL
-- proves this index's predicate from that test, and no other partial index
-- on pending rows (`status = 'pending'`) from it, so their generic plans
-- keep to this index (`postgres::ordering`).
--
-- The one read of ended rows was retention's: whether any notification of
-- a key is left before its row goes (`ordering_retention::KEY_PAGE`). It
-- now reads the key's row alone: a key whose line is empty (`tail IS
-- NULL`) saw the last of its notifications end when its line was last
-- emptied (`emptied_at`: the end of a key's tail writes its row, and an
-- end that empties the line is the tail's), so once that is before the
-- retention cutoff every one of them is past it, and retention removes
-- them (`HousekeepingStore::purge_order_keys`).
ALTER TABLE order_keys ADD COLUMN emptied_at timestamptz NOT NULL DEFAULT now();

DROP INDEX notifications_order;
-- A key's pending notifications by sequence: its place for a requeue, an
-- orphan's new place.
CREATE INDEX notifications_order ON notifications (endpoint_id, order_key, sequence)
    WHERE (status = 'pending') IS TRUE AND sequence IS NOT NULL;

-- The release trigger (migration 20261210000056), which also stamps the
-- key's row with the end's time: never earlier than the completion
-- retention compares with its cutoff.
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
            ELSE tail END,
        emptied_at = GREATEST(emptied_at, NEW.completed_at, NEW.updated_at)
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
