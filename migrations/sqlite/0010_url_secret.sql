-- An endpoint's url_secret flag, as ../20261205000048_url_secret.sql
-- (INTEGER 0/1: the table is STRICT, as for `disabled`).
ALTER TABLE endpoints ADD COLUMN url_secret INTEGER NOT NULL DEFAULT 0 CHECK (url_secret IN (0, 1));
