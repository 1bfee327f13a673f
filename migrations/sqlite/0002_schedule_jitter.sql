-- An endpoint's schedule jitter, as ../20261202000035_schedule_jitter.sql:
-- REAL for PostgreSQL's double precision, the same default and bounds.
ALTER TABLE endpoints ADD COLUMN schedule_jitter REAL NOT NULL DEFAULT 0
    CHECK (schedule_jitter >= 0 AND schedule_jitter <= 0.5);
