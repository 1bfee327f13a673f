-- Failed attempts per hour and endpoint, beside the per-minute rows
-- (20261203000039_minute_stats.sql), added by the same statement that adds
-- those (src/store/postgres/stats.rs), only where a batch had failures.
--
-- Why: ranking the endpoints failing most over a day read every failing
-- (endpoint, minute) row of it: about 100,000 for a day of 1,000
-- endpoints that fail now and then, 57 ms of PostgreSQL's time and the
-- bulk of `GET /v1/stats` (BENCHMARKS.md, #36). From these, a day is at
-- most 24 rows per failing endpoint, plus the minutes of the window's
-- first, partial hour read per minute (domain::minute_stats::
-- ranked_from_hours), so the ranking stays exact.
--
-- Kept as long as the per-minute rows (two days), by the same purge.
CREATE TABLE hour_failing (
    hour            timestamptz NOT NULL,
    endpoint_id     uuid NOT NULL,
    failed_attempts integer NOT NULL,
    PRIMARY KEY (hour, endpoint_id)
);

INSERT INTO hour_failing (hour, endpoint_id, failed_attempts)
SELECT date_trunc('hour', minute), endpoint_id, sum(failed_attempts)
FROM minute_stats WHERE failed_attempts > 0
GROUP BY 1, 2;
