-- Several rotated-out secrets may sign at once, each until its own expiry:
-- a second rotation no longer cuts the first one's overlap short. The list,
-- newest first, holds `{"secret": ..., "expires_at": ...}` objects; with
-- `secrets.keys` set, each secret is sealed like `endpoints.secret`.
ALTER TABLE endpoints ADD COLUMN previous_secrets jsonb NOT NULL DEFAULT '[]';

UPDATE endpoints
SET previous_secrets = jsonb_build_array(
        jsonb_build_object('secret', previous_secret, 'expires_at', previous_secret_expires_at))
WHERE previous_secret IS NOT NULL AND previous_secret_expires_at > now();

-- The old single slot goes: it held a plaintext secret.
ALTER TABLE endpoints DROP COLUMN previous_secret, DROP COLUMN previous_secret_expires_at;
