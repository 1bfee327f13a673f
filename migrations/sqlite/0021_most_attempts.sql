-- One endpoint's notifications attempted more than once, as
-- ../20261215000061_most_attempts.sql.
CREATE INDEX IF NOT EXISTS notifications_endpoint_most_attempts
    ON notifications (endpoint_id, attempts, id) WHERE attempts > 1;
