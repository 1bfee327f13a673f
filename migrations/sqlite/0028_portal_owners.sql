-- An owner's portal generation apart from its endpoints', as
-- ../20261218000064_portal_owners.sql.
CREATE TABLE portal_owners (
    owner TEXT PRIMARY KEY NOT NULL,
    generation INTEGER NOT NULL CHECK (generation >= 0)
) STRICT;
