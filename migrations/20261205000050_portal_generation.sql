-- Portal links of an endpoint can be revoked without rotating portal.key
-- (#47): each link carries the endpoint's generation when it was issued,
-- and `POST /v1/endpoints/{id}/portal/revoke` raises it.
ALTER TABLE endpoints ADD COLUMN portal_generation integer NOT NULL DEFAULT 0
    CONSTRAINT endpoints_portal_generation_range CHECK (portal_generation >= 0);
