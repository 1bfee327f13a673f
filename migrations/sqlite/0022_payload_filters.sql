-- An endpoint's payload filter, as ../20261216000062_payload_filters.sql:
-- its JSON text; NULL for none.
ALTER TABLE endpoints ADD COLUMN filter TEXT;
