-- An endpoint whose whole URL path is a credential (DESIGN.md §14, #47):
-- callers without the `secrets` scope see only its origin. The masking
-- rule is in Rust (src/domain/receiver_url.rs); this only keeps the flag.
ALTER TABLE endpoints ADD COLUMN url_secret boolean NOT NULL DEFAULT false;
