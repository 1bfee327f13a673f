-- When an endpoint was disabled (NULL while it is enabled).
--
-- Why: a disabled endpoint holds its notifications (DESIGN.md §17), and a
-- pull endpoint's `pull.max_wait` counts only while it is enabled. When it
-- is enabled again, each held pull notification's due time moves on by
-- the time it spent disabled (domain::lease::due_after_hold), in the
-- statement's transaction; this is where that span starts.
--
-- Endpoints disabled before this column: the time is unknown, and their
-- last change is the best bound there is.
ALTER TABLE endpoints ADD COLUMN disabled_at timestamptz;
UPDATE endpoints SET disabled_at = updated_at WHERE disabled;
