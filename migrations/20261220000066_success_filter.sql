-- An endpoint's success filter (docs/delivery.md, "Success"): a 2xx
-- succeeds only with a JSON body that satisfies it, in the payload
-- filters' language (`domain::success`), for receivers that acknowledge
-- in JSON (`{"code": "SUCCESS"}`). Validated and parsed in Rust when the
-- endpoint is written. NULL: none (`success_body`, or any 2xx).
ALTER TABLE endpoints ADD COLUMN IF NOT EXISTS success_filter jsonb;
