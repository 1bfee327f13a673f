-- Consumer tokens are checked in memory (DESIGN.md §14): each process reads
-- them all at start, then about once a second only those whose token was
-- issued, or whose endpoint changed, since its last read
-- (`Store::consumer_tokens`). Issuing a token sets `created_at`; an
-- endpoint's changes (a delete, a switch of delivery) set its `updated_at`
-- (`endpoints_changed`). This index finds the tokens issued lately.
CREATE INDEX consumer_tokens_issued ON consumer_tokens (created_at);

-- A token works only while its endpoint exists and is pull, and a switch
-- to push now removes it: the tokens push and deleted endpoints kept
-- before go too, so that a switch back to pull does not bring one back.
DELETE FROM consumer_tokens t USING endpoints e
WHERE e.id = t.endpoint_id AND (e.deleted_at IS NOT NULL OR e.delivery <> 'pull');
