-- An endpoint's rate limit, as ../20261202000036_rate_limit.sql: REAL for
-- double precision, the same bounds. SQLite adds one column per statement
-- and no table constraint to an existing table, so that both or neither
-- are set is a check on the second column.
ALTER TABLE endpoints ADD COLUMN rate_limit_per_second REAL
    CHECK (rate_limit_per_second > 0 AND rate_limit_per_second <= 100000);
ALTER TABLE endpoints ADD COLUMN rate_limit_burst INTEGER
    CHECK (rate_limit_burst >= 1 AND rate_limit_burst <= 100000
           AND rate_limit_per_second IS NOT NULL)
    CHECK (rate_limit_burst IS NOT NULL OR rate_limit_per_second IS NULL);
