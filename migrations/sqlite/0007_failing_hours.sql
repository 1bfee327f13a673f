-- Failed attempts per hour and endpoint, as ../20261204000041_failing_hours.sql
-- (which says why): times as INTEGER microseconds, ids as 16-byte BLOBs.
CREATE TABLE hour_failing (
    hour            INTEGER NOT NULL,
    endpoint_id     BLOB NOT NULL,
    failed_attempts INTEGER NOT NULL,
    PRIMARY KEY (hour, endpoint_id)
) STRICT;

INSERT INTO hour_failing (hour, endpoint_id, failed_attempts)
SELECT minute - minute % 3600000000, endpoint_id, sum(failed_attempts)
FROM minute_stats WHERE failed_attempts > 0
GROUP BY 1, 2;
