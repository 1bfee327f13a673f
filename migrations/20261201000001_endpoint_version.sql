-- An endpoint's version for optimistic concurrency, explicit instead of
-- PostgreSQL's `xmin`: a SQLite backend has no `xmin`, and `xmin` changed
-- with every write of the row, health included, so the dispatcher reloaded
-- an endpoint's delivery plan each time its failing state flipped. Raised
-- by every change of what a delivery to the endpoint uses (its settings,
-- secrets, disabling, deletion, the operator endpoint's sync); not by
-- health (`failing_since`) nor by a reseal, which keeps every value.
ALTER TABLE endpoints ADD COLUMN version bigint NOT NULL DEFAULT 0;
