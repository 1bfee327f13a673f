-- Events are listed by type through their owner's index
-- (`events_owner_newest`, which serves `?owner=…&event_type=…`) or, without
-- an owner, by walking the primary key newest first. An index on the type
-- cost every event an entry on the write path, where a single-POST event
-- with one subscriber already writes two rows (BENCHMARKS.md, figure 8).
DROP INDEX events_event_type_newest;
