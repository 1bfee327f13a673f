-- An endpoint's portal generation, as ../20261205000050_portal_generation.sql.
ALTER TABLE endpoints ADD COLUMN portal_generation INTEGER NOT NULL DEFAULT 0
    CHECK (portal_generation >= 0);
