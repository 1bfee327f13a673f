-- An attempt's headers (docs/design.md §18): what its request carried that
-- its notification does not say, and its response's headers, each as text
-- (src/domain/attempt_headers.rs gives the format). `retried`: the attempt
-- opens a series a retry started, as the console's timeline marks it.
--
-- The rest of a request's headers (webhook-id, webhook-timestamp,
-- content-type, hookd-attempt...) follow from the notification and the
-- attempt, so they are not kept: `sent_headers` holds the signature and the
-- custom headers' names only (about 50 bytes for one secret), and never a
-- custom header's value. An attempt kept in its notification's row (a
-- delivery at its first attempt, the write most deliveries make) keeps
-- none: with them that write grew by about 140 bytes, and the drain lost
-- 10 % (server) to 20 % (embedded) (BENCHMARKS.md). Attempts recorded
-- before this migration have them NULL too: the API says nothing of their
-- headers. Adding a nullable column, or one with a constant default, does
-- not rewrite the table.
ALTER TABLE attempts
    ADD COLUMN sent_headers     text,
    ADD COLUMN response_headers text,
    ADD COLUMN retried          boolean NOT NULL DEFAULT false;
