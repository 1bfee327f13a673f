-- An endpoint's own fresh_share, as ../20261206000051_fresh_share.sql:
-- REAL for double precision, the same bounds.
ALTER TABLE endpoints ADD COLUMN fresh_share REAL
    CHECK (fresh_share >= 0 AND fresh_share <= 1);
