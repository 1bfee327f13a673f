-- `GET /v1/notifications?order=attempts` (docs/design.md §18): one
-- endpoint's notifications attempted more than once, most attempts first,
-- then newest, read backwards on this index from a cursor `(attempts, id)`.
-- Only rows past their first attempt are in it: a create and a delivery
-- that succeeds at once write nothing here, and `attempts` is already
-- written with columns other indexes hold (no update it touches was HOT).
CREATE INDEX IF NOT EXISTS notifications_endpoint_most_attempts
    ON notifications (endpoint_id, attempts, id) WHERE attempts > 1;
