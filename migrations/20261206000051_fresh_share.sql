-- An endpoint's own `fresh_share` (DESIGN.md §17, lanes): the part of its
-- rate limit kept for fresh notifications (first attempts) while retries
-- are due beside them, 0 to 1. NULL: `dispatcher.fresh_share` applies.
-- The rule is in Rust (src/domain/rate.rs, `decide_lanes`); this keeps
-- the value, bounded as the API bounds it.
ALTER TABLE endpoints
    ADD COLUMN fresh_share double precision
        CONSTRAINT endpoints_fresh_share_range
        CHECK (fresh_share >= 0 AND fresh_share <= 1);
