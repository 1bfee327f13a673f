-- When an endpoint was disabled, as ../20261205000049_endpoint_disabled_at.sql
-- (which says why): INTEGER microseconds, NULL while it is enabled.
ALTER TABLE endpoints ADD COLUMN disabled_at INTEGER;
UPDATE endpoints SET disabled_at = updated_at WHERE disabled = 1;
