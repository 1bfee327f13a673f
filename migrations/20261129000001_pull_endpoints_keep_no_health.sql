-- A pull endpoint keeps no health record: its consumers set its pace, and
-- only push attempts mark an endpoint failing. Switching an endpoint to pull
-- now clears `failing_since`; this clears what a switch left before.
-- (A pull endpoint's NULL url also stopped the periodic check that disables
-- failing endpoints, for every endpoint: `Store::failing_endpoints` now reads
-- push endpoints only.)
UPDATE endpoints SET failing_since = NULL WHERE url IS NULL AND failing_since IS NOT NULL;
