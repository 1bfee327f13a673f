-- An endpoint's payload filter (docs/design.md §19): a predicate over an
-- event's JSON payload, validated and parsed in Rust when the endpoint is
-- written (`domain::payload_filter`) and evaluated there at fan-out. NULL:
-- every event of its subscribed types. No index: no query reads it.
ALTER TABLE endpoints ADD COLUMN IF NOT EXISTS filter jsonb;
