-- Listing by status, newest first, needs an index only for the statuses that
-- are rare and worth finding: failed and cancelled. Pending rows are found
-- through notifications_pending_due, succeeded ones are most of the table
-- (the primary key walks them newest first). Maintaining a (status, id)
-- entry for every row cost each insert and each state change a B-tree
-- insertion (see BENCHMARKS.md, batch ingest).
DROP INDEX notifications_status_newest;
CREATE INDEX notifications_unsettled_newest ON notifications (status, id DESC)
    WHERE status IN ('failed', 'cancelled');
