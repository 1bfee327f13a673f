-- Notifications that carry custom headers, by id: the start-up walk that
-- seals header values under the current key (src/store/reseal.rs) reads
-- only these instead of the whole primary key. Most notifications have no
-- headers and get no entry here, so ingest and delivery pay nothing for it.
CREATE INDEX notifications_with_headers ON notifications (id) WHERE headers <> '{}'::jsonb;
