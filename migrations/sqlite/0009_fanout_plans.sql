-- A large fan-out's deliveries not written yet (issue #47): a commit whose
-- events fan out to more than 1,000 deliveries writes the first 1,000 and
-- stores the rest here, in its transaction, as one row per event; they are
-- then written 1,000 a transaction, and the row deleted with its event's
-- last delivery. A row left by a crash is written out at the next start
-- (`store::sqlite::fanout`).
CREATE TABLE fanout_plans (
    event_id BLOB PRIMARY KEY,
    plan     TEXT NOT NULL              -- JSON: every delivery still to write, ids included
) STRICT;
