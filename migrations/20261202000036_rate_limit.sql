-- An endpoint's rate limit (DESIGN.md §16): `per_second` sustained, up to
-- `burst` at once. Both NULL: the endpoint has none of its own
-- (`dispatcher.default_rate_limit` applies, if set). The rule (GCRA) is in
-- Rust, src/domain/rate.rs; this only keeps the values, bounded as the API
-- bounds them so that no value written by hand reaches the dispatcher out
-- of range.
ALTER TABLE endpoints
    ADD COLUMN rate_limit_per_second double precision
        CONSTRAINT endpoints_rate_limit_per_second_range
        CHECK (rate_limit_per_second > 0 AND rate_limit_per_second <= 100000),
    ADD COLUMN rate_limit_burst integer
        CONSTRAINT endpoints_rate_limit_burst_range
        CHECK (rate_limit_burst >= 1 AND rate_limit_burst <= 100000),
    ADD CONSTRAINT endpoints_rate_limit_whole
        CHECK ((rate_limit_per_second IS NULL) = (rate_limit_burst IS NULL));
