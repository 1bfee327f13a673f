-- Bulk actions by filter (docs/design.md §18): `POST /v1/notifications/retry`
-- starts an operation of kind `retry`, which pages over the endpoint's
-- failed notifications as a recover does (its window: every failure until
-- it started) and restarts those its filter holds; `POST
-- /v1/notifications/cancel` with a filter one of kind `cancel`, which pages
-- over the endpoint's notifications newest first and cancels the pending
-- ones its filter holds. The filter (event type, key prefix, created
-- window) is kept as JSON, decided in Rust (src/domain/bulk.rs); a recover
-- has none. One running operation of a kind per endpoint, as before.
ALTER TABLE operations DROP CONSTRAINT operations_kind_check;
ALTER TABLE operations ADD CONSTRAINT operations_kind_check CHECK (kind IN ('recover', 'retry', 'cancel'));
ALTER TABLE operations ADD COLUMN filter text;
