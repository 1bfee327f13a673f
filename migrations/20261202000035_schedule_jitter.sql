-- An endpoint's schedule jitter (DESIGN.md §16): each wait of its schedule
-- is scaled by a random factor in [1 - j, 1 + j] (the rule is in Rust,
-- src/domain/jitter.rs; this only keeps the value). 0, the default, keeps
-- the schedule exact. Bounded here as the API bounds it, so that no value
-- written by hand reaches the dispatcher out of range.
ALTER TABLE endpoints ADD COLUMN schedule_jitter double precision NOT NULL DEFAULT 0
    CONSTRAINT endpoints_schedule_jitter_range CHECK (schedule_jitter >= 0 AND schedule_jitter <= 0.5);
