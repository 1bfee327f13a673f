-- What waits for a notification, indexed with whether it is pulled (#48):
-- the recorded successes' trigger (0023) looks for pull successors only,
-- and now finds that a success has none in the index alone.
--
-- Why: with `behind` alone, the trigger's update found each success's
-- successor (pushed, nearly always) through the index, then read its row
-- to learn it was not pulled. In the ordering bench, the move of an
-- ordered round's 20,000 took 240 ms against 154 for an unordered one;
-- with this, 214 (medians of 20 rounds each, sqlx's statement log;
-- BENCHMARKS.md). In a sitting before, with the trigger's pull update
-- taken out altogether (an experiment), it took 171 against 214 with it.
--
-- Every other read of the index names `behind` first, as before: the
-- release trigger's successors, the recorder's pushed successors
-- (`pull = 0`, now in the index too), housekeeping's orphans and
-- stranded ones. `pull` is 0 or 1, which SQLite stores in an index
-- entry's header alone: the entries grow by a byte.
DROP INDEX notifications_behind;
CREATE INDEX notifications_behind ON notifications (behind, pull) WHERE behind IS NOT NULL;
