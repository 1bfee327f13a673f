-- The 30 s sweeps of pull rows (`Store::adopt_strays`,
-- `Store::cancel_orphaned_pulls`) look only at endpoints changed or deleted
-- in the last day; these keep them from reading every endpoint ever made.
-- An endpoint's row changes rarely (its API writes, a disable); the
-- recorder's health updates leave `updated_at` alone.
CREATE INDEX endpoints_changed ON endpoints (updated_at);
CREATE INDEX endpoints_deleted ON endpoints (deleted_at) WHERE deleted_at IS NOT NULL;
