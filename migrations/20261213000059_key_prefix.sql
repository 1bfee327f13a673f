-- Search by key prefix (docs/design.md §18): `GET /v1/notifications?key_prefix=`
-- reads the keys that start with it as one range of an index, the
-- notifications' (`notification_keys`) and the events' (a delivery's key is
-- its event's). A prefix's keys are neighbours only in byte order: under a
-- collation such as en_US.UTF-8 "order-12" and "order12" sort together, so
-- the keys' own indexes (in the database's collation) cannot serve the
-- range. These hold the keys in byte order ("C") whatever the database's
-- collation; the statement asks for that order (src/store/postgres/list_queries.rs).
CREATE INDEX IF NOT EXISTS notification_keys_prefix ON notification_keys (key COLLATE "C");
CREATE INDEX IF NOT EXISTS events_key_prefix ON events (key COLLATE "C") WHERE key IS NOT NULL;
