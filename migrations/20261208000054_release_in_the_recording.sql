-- The recorder releases the successors of a batch's ordered ends in one
-- statement (`postgres::ordering::RELEASE_ENDED`, #48); the release
-- trigger keeps every other end (a cancel, a breaker's fail, a pull
-- consumer's ack, an endpoint's ordering turned off) and stands aside
-- for a recording transaction that says it does the same itself
-- (`hookd.release = 'batch'`, set local to it).
--
-- Why: run once per row, the trigger's two updates cost a recording
-- about 60 µs per ordered end, and the read of what they released 28 µs
-- more, against 42 µs for the recording's own update: in the ordering
-- bench the recorder was busy for the whole of each ordered round, which
-- took three times as long as an unordered one (a timed trace of the
-- recorder, BENCHMARKS.md). The rule is the trigger's, set-based.
DROP TRIGGER notifications_release_order ON notifications;
CREATE TRIGGER notifications_release_order
    AFTER UPDATE OF status ON notifications
    FOR EACH ROW
    WHEN (OLD.status = 'pending' AND NEW.status <> 'pending' AND NEW.sequence IS NOT NULL
          AND current_setting('hookd.release', true) IS DISTINCT FROM 'batch')
    EXECUTE FUNCTION hookd_release_order();
