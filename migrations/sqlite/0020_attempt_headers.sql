-- An attempt's headers, as ../20261214000060_attempt_headers.sql.
ALTER TABLE attempts ADD COLUMN sent_headers TEXT;
ALTER TABLE attempts ADD COLUMN response_headers TEXT;
ALTER TABLE attempts ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
ALTER TABLE notifications ADD COLUMN first_attempt_sent TEXT;
ALTER TABLE notifications ADD COLUMN first_attempt_headers TEXT;
