-- Per-minute counts behind the console's overview (GET /v1/stats, DESIGN.md
-- §11), so that it reads a few thousand small rows, never the attempts.
-- Written in the transaction that records a batch of attempts, as additive
-- upserts of sums made in Rust (src/domain/minute_stats.rs): several hookd
-- processes add to the same rows and each adds exactly what it committed.
-- Deleted after two days by housekeeping's retention.
--
-- `late_0` … `late_45`: how many attempts were that late (start minus
-- due), in the fixed log-spaced buckets of src/domain/lateness.rs (below
-- 1 ms, then two per doubling up to 70 minutes, then above); with
-- `lateness_max_ms` they give a p99 that merges by adding.

-- Per endpoint and minute (the minute's start, UTC).
CREATE TABLE minute_stats (
    endpoint_id     uuid NOT NULL,
    minute          timestamptz NOT NULL,
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
    PRIMARY KEY (endpoint_id, minute)
) WITH (fillfactor = 80);
-- Room on each page for the updates of a row's minute to be heap-only
-- (no column of an index changes, except `failed_attempts` for
-- `minute_stats_failing`).

-- Retention, in bounded batches.
CREATE INDEX minute_stats_by_minute ON minute_stats (minute);
-- The endpoints failing most over a window: only rows with a failure, so
-- a day of a thousand healthy endpoints costs nothing to pass over.
CREATE INDEX minute_stats_failing ON minute_stats (minute, endpoint_id, failed_attempts)
    WHERE failed_attempts > 0;

-- The whole deployment per minute, in a few rows per minute: each batch
-- adds to one of 16 shards (chosen at random), so processes recording at
-- the same moment seldom wait on one row. The overview without a filter
-- sums these: 1,440 × at most 16 rows a day, however many endpoints.
CREATE TABLE minute_totals (
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
    PRIMARY KEY (minute, shard)
) WITH (fillfactor = 80);

-- Pending notifications, the whole deployment, sampled once a minute by
-- housekeeping (the first process to sample a minute keeps it).
CREATE TABLE minute_backlog (
    minute  timestamptz PRIMARY KEY,
    pending bigint NOT NULL
);
