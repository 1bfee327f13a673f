-- A notification delivered at its first attempt keeps that attempt in its
-- own row instead of a row of `attempts` (#15).
--
-- Most notifications are delivered at their first attempt. Its row of
-- `attempts` (a heap tuple, its primary-key entry and their WAL) was 13 %
-- of PostgreSQL's CPU per delivery in the drain benchmark (BENCHMARKS.md,
-- session 11), while the notification's own row is written by the same
-- statement anyway: it already holds the attempt's start
-- (`last_attempt_at`) and status code (`last_status_code`), and these two
-- columns hold the rest. Such an attempt is number 1, succeeded, with no
-- error.
--
-- Every other attempt (a failure, a retry, the first attempt of a later
-- series) is a row of `attempts` as before. The same first attempt
-- recorded again by a process whose lease had run out adds no row 1 beside
-- it (as ON CONFLICT keeps the first of two rows). `Store::list_attempts`
-- lists the rows and the attempt kept here alike. Rows written before this
-- migration have these columns NULL and all their attempts in `attempts`.
ALTER TABLE notifications
    ADD COLUMN first_attempt_ms   integer,
    ADD COLUMN first_attempt_body text;
