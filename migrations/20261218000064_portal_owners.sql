-- An owner's portal generation kept apart from its endpoints' (#47). An
-- owner link is refused below the highest of this and the owner's live
-- endpoints' generations. The endpoints' alone could fall: once every
-- endpoint a revoke raised was deleted or moved to another owner, a new
-- endpoint of the owner (generation 0) brought the revoked links back.
-- Each revoke that refuses an owner's links (the owner's, or one of its
-- endpoints') raises this too; it never falls.
CREATE TABLE portal_owners (
    owner text PRIMARY KEY,
    generation integer NOT NULL CONSTRAINT portal_owners_generation_range CHECK (generation >= 0)
);
