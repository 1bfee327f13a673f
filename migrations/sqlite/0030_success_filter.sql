-- An endpoint's success filter, as ../20261220000066_success_filter.sql:
-- its JSON text; NULL for none.
ALTER TABLE endpoints ADD COLUMN success_filter TEXT;
