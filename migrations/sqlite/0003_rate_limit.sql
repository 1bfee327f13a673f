-- An endpoint's rate limit, as ../20261202000036_rate_limit.sql: REAL for
-- double precision, the same bounds. SQLite adds one column per statement
-- and no table constraint to an existing table, so that both or neither
-- are set is checked on the second column.
ALTER TABLE endpoints ADD COLUMN rate_limit_per_second REAL
    CHECK (rate_limit_per_second > 0 AND rate_limit_per_second <= 100000);
ALTER TABLE endpoints ADD COLUMN rate_limit_burst INTEGER
    CHECK (CASE WHEN rate_limit_burst IS NULL THEN rate_limit_per_second IS NULL
                ELSE rate_limit_burst >= 1 AND rate_limit_burst <= 100000
                     AND rate_limit_per_second IS NOT NULL END);
