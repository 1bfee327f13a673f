-- Per-minute counts per owner, beside the per-endpoint ones
-- (20261203000039_minute_stats.sql), added by the same statement that adds
-- those (src/store/postgres/stats.rs): the batch's per-endpoint sums
-- grouped by their endpoint's owner as the statement reads it.
--
-- Why: an owner's overview (`GET /v1/stats?owner=`, what an owner's
-- portal link shows) summed 1,440 rows of `minute_stats` per endpoint the
-- owner has for a day: 14,400 rows and 33 ms of PostgreSQL's time (warm;
-- 137 ms cold) for an owner of ten, growing with its endpoints
-- (BENCHMARKS.md, #36). From these it reads at most `OWNER_SHARDS` rows per
-- minute however many endpoints the owner has, as the deployment's
-- overview reads `minute_totals`.
--
-- What an owner's counts are: the attempts (and ends) of its endpoints
-- recorded while they were its. An endpoint whose owner changes (PATCH)
-- keeps its past in the old owner's counts and adds to the new owner's
-- from the change on; a deleted endpoint's past stays in its owner's
-- counts, as it stays in the deployment's totals. Endpoints without an
-- owner, and the operator's (managed) ones, are in no owner's counts. The
-- ranking of the endpoints failing most is of the endpoints the owner has
-- now (store::stats).
--
-- `shard`: each batch adds to one of `OWNER_SHARDS` rows of its owner's
-- minute (store::stats), so processes recording an owner's endpoints at
-- the same moment seldom wait on one row.
--
-- Kept as long as the per-minute rows (two days), by the same purge.
CREATE TABLE owner_minute_stats (
    owner           text NOT NULL,
    minute          timestamptz NOT NULL,
    shard           smallint NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    failed_attempts integer NOT NULL DEFAULT 0,
    delivered       integer NOT NULL DEFAULT 0,
    failed          integer NOT NULL DEFAULT 0,
    lateness_max_ms bigint NOT NULL DEFAULT 0,
    late_0 integer NOT NULL DEFAULT 0,
    late_1 integer NOT NULL DEFAULT 0,
    late_2 integer NOT NULL DEFAULT 0,
    late_3 integer NOT NULL DEFAULT 0,
    late_4 integer NOT NULL DEFAULT 0,
    late_5 integer NOT NULL DEFAULT 0,
    late_6 integer NOT NULL DEFAULT 0,
    late_7 integer NOT NULL DEFAULT 0,
    late_8 integer NOT NULL DEFAULT 0,
    late_9 integer NOT NULL DEFAULT 0,
    late_10 integer NOT NULL DEFAULT 0,
    late_11 integer NOT NULL DEFAULT 0,
    late_12 integer NOT NULL DEFAULT 0,
    late_13 integer NOT NULL DEFAULT 0,
    late_14 integer NOT NULL DEFAULT 0,
    late_15 integer NOT NULL DEFAULT 0,
    late_16 integer NOT NULL DEFAULT 0,
    late_17 integer NOT NULL DEFAULT 0,
    late_18 integer NOT NULL DEFAULT 0,
    late_19 integer NOT NULL DEFAULT 0,
    late_20 integer NOT NULL DEFAULT 0,
    late_21 integer NOT NULL DEFAULT 0,
    late_22 integer NOT NULL DEFAULT 0,
    late_23 integer NOT NULL DEFAULT 0,
    late_24 integer NOT NULL DEFAULT 0,
    late_25 integer NOT NULL DEFAULT 0,
    late_26 integer NOT NULL DEFAULT 0,
    late_27 integer NOT NULL DEFAULT 0,
    late_28 integer NOT NULL DEFAULT 0,
    late_29 integer NOT NULL DEFAULT 0,
    late_30 integer NOT NULL DEFAULT 0,
    late_31 integer NOT NULL DEFAULT 0,
    late_32 integer NOT NULL DEFAULT 0,
    late_33 integer NOT NULL DEFAULT 0,
    late_34 integer NOT NULL DEFAULT 0,
    late_35 integer NOT NULL DEFAULT 0,
    late_36 integer NOT NULL DEFAULT 0,
    late_37 integer NOT NULL DEFAULT 0,
    late_38 integer NOT NULL DEFAULT 0,
    late_39 integer NOT NULL DEFAULT 0,
    late_40 integer NOT NULL DEFAULT 0,
    late_41 integer NOT NULL DEFAULT 0,
    late_42 integer NOT NULL DEFAULT 0,
    late_43 integer NOT NULL DEFAULT 0,
    late_44 integer NOT NULL DEFAULT 0,
    late_45 integer NOT NULL DEFAULT 0,
    PRIMARY KEY (owner, minute, shard)
) WITH (fillfactor = 80);

-- Retention, in bounded batches.
CREATE INDEX owner_minute_stats_by_minute ON owner_minute_stats (minute);

-- The rows kept so far, by their endpoint's owner now (which endpoint was
-- whose before is not known): one scan of `minute_stats`, two days.
INSERT INTO owner_minute_stats (owner, minute, shard, attempts, failed_attempts, delivered, failed, lateness_max_ms, late_0, late_1, late_2, late_3, late_4, late_5, late_6, late_7, late_8, late_9, late_10, late_11, late_12, late_13, late_14, late_15, late_16, late_17, late_18, late_19, late_20, late_21, late_22, late_23, late_24, late_25, late_26, late_27, late_28, late_29, late_30, late_31, late_32, late_33, late_34, late_35, late_36, late_37, late_38, late_39, late_40, late_41, late_42, late_43, late_44, late_45)
SELECT e.owner, s.minute, 0, sum(s.attempts), sum(s.failed_attempts), sum(s.delivered), sum(s.failed), max(s.lateness_max_ms), sum(s.late_0), sum(s.late_1), sum(s.late_2), sum(s.late_3), sum(s.late_4), sum(s.late_5), sum(s.late_6), sum(s.late_7), sum(s.late_8), sum(s.late_9), sum(s.late_10), sum(s.late_11), sum(s.late_12), sum(s.late_13), sum(s.late_14), sum(s.late_15), sum(s.late_16), sum(s.late_17), sum(s.late_18), sum(s.late_19), sum(s.late_20), sum(s.late_21), sum(s.late_22), sum(s.late_23), sum(s.late_24), sum(s.late_25), sum(s.late_26), sum(s.late_27), sum(s.late_28), sum(s.late_29), sum(s.late_30), sum(s.late_31), sum(s.late_32), sum(s.late_33), sum(s.late_34), sum(s.late_35), sum(s.late_36), sum(s.late_37), sum(s.late_38), sum(s.late_39), sum(s.late_40), sum(s.late_41), sum(s.late_42), sum(s.late_43), sum(s.late_44), sum(s.late_45)
FROM minute_stats s JOIN endpoints e ON e.id = s.endpoint_id
WHERE e.owner IS NOT NULL AND NOT e.managed
GROUP BY e.owner, s.minute;
