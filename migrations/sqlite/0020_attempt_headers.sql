-- An attempt's headers, as ../20261214000060_attempt_headers.sql.
ALTER TABLE attempts ADD COLUMN sent_headers TEXT;
ALTER TABLE attempts ADD COLUMN response_headers TEXT;
ALTER TABLE attempts ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
