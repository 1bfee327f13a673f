-- Per-minute counts per owner, as ../20261204000042_owner_stats.sql
-- (which says why and what they count): times as INTEGER microseconds.
CREATE TABLE owner_minute_stats (
    owner           TEXT NOT NULL,
    minute          INTEGER NOT NULL,
    shard           INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    failed_attempts INTEGER NOT NULL DEFAULT 0,
    delivered       INTEGER NOT NULL DEFAULT 0,
    failed          INTEGER NOT NULL DEFAULT 0,
    lateness_max_ms INTEGER NOT NULL DEFAULT 0,
    late_0 INTEGER NOT NULL DEFAULT 0,
    late_1 INTEGER NOT NULL DEFAULT 0,
    late_2 INTEGER NOT NULL DEFAULT 0,
    late_3 INTEGER NOT NULL DEFAULT 0,
    late_4 INTEGER NOT NULL DEFAULT 0,
    late_5 INTEGER NOT NULL DEFAULT 0,
    late_6 INTEGER NOT NULL DEFAULT 0,
    late_7 INTEGER NOT NULL DEFAULT 0,
    late_8 INTEGER NOT NULL DEFAULT 0,
    late_9 INTEGER NOT NULL DEFAULT 0,
    late_10 INTEGER NOT NULL DEFAULT 0,
    late_11 INTEGER NOT NULL DEFAULT 0,
    late_12 INTEGER NOT NULL DEFAULT 0,
    late_13 INTEGER NOT NULL DEFAULT 0,
    late_14 INTEGER NOT NULL DEFAULT 0,
    late_15 INTEGER NOT NULL DEFAULT 0,
    late_16 INTEGER NOT NULL DEFAULT 0,
    late_17 INTEGER NOT NULL DEFAULT 0,
    late_18 INTEGER NOT NULL DEFAULT 0,
    late_19 INTEGER NOT NULL DEFAULT 0,
    late_20 INTEGER NOT NULL DEFAULT 0,
    late_21 INTEGER NOT NULL DEFAULT 0,
    late_22 INTEGER NOT NULL DEFAULT 0,
    late_23 INTEGER NOT NULL DEFAULT 0,
    late_24 INTEGER NOT NULL DEFAULT 0,
    late_25 INTEGER NOT NULL DEFAULT 0,
    late_26 INTEGER NOT NULL DEFAULT 0,
    late_27 INTEGER NOT NULL DEFAULT 0,
    late_28 INTEGER NOT NULL DEFAULT 0,
    late_29 INTEGER NOT NULL DEFAULT 0,
    late_30 INTEGER NOT NULL DEFAULT 0,
    late_31 INTEGER NOT NULL DEFAULT 0,
    late_32 INTEGER NOT NULL DEFAULT 0,
    late_33 INTEGER NOT NULL DEFAULT 0,
    late_34 INTEGER NOT NULL DEFAULT 0,
    late_35 INTEGER NOT NULL DEFAULT 0,
    late_36 INTEGER NOT NULL DEFAULT 0,
    late_37 INTEGER NOT NULL DEFAULT 0,
    late_38 INTEGER NOT NULL DEFAULT 0,
    late_39 INTEGER NOT NULL DEFAULT 0,
    late_40 INTEGER NOT NULL DEFAULT 0,
    late_41 INTEGER NOT NULL DEFAULT 0,
    late_42 INTEGER NOT NULL DEFAULT 0,
    late_43 INTEGER NOT NULL DEFAULT 0,
    late_44 INTEGER NOT NULL DEFAULT 0,
    late_45 INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (owner, minute, shard)
) STRICT;

CREATE INDEX owner_minute_stats_by_minute ON owner_minute_stats (minute);

INSERT INTO owner_minute_stats (owner, minute, shard, attempts, failed_attempts, delivered, failed, lateness_max_ms, late_0, late_1, late_2, late_3, late_4, late_5, late_6, late_7, late_8, late_9, late_10, late_11, late_12, late_13, late_14, late_15, late_16, late_17, late_18, late_19, late_20, late_21, late_22, late_23, late_24, late_25, late_26, late_27, late_28, late_29, late_30, late_31, late_32, late_33, late_34, late_35, late_36, late_37, late_38, late_39, late_40, late_41, late_42, late_43, late_44, late_45)
SELECT e.owner, s.minute, 0, sum(s.attempts), sum(s.failed_attempts), sum(s.delivered), sum(s.failed), max(s.lateness_max_ms), sum(s.late_0), sum(s.late_1), sum(s.late_2), sum(s.late_3), sum(s.late_4), sum(s.late_5), sum(s.late_6), sum(s.late_7), sum(s.late_8), sum(s.late_9), sum(s.late_10), sum(s.late_11), sum(s.late_12), sum(s.late_13), sum(s.late_14), sum(s.late_15), sum(s.late_16), sum(s.late_17), sum(s.late_18), sum(s.late_19), sum(s.late_20), sum(s.late_21), sum(s.late_22), sum(s.late_23), sum(s.late_24), sum(s.late_25), sum(s.late_26), sum(s.late_27), sum(s.late_28), sum(s.late_29), sum(s.late_30), sum(s.late_31), sum(s.late_32), sum(s.late_33), sum(s.late_34), sum(s.late_35), sum(s.late_36), sum(s.late_37), sum(s.late_38), sum(s.late_39), sum(s.late_40), sum(s.late_41), sum(s.late_42), sum(s.late_43), sum(s.late_44), sum(s.late_45)
FROM minute_stats s JOIN endpoints e ON e.id = s.endpoint_id
WHERE e.owner IS NOT NULL AND e.managed = 0
GROUP BY e.owner, s.minute;
