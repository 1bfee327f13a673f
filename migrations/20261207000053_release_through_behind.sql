-- The release trigger finds a notification's successors through
-- `notifications_behind` alone (#48). hookd plans each statement once
-- (`plan_cache_mode = force_generic_plan`), and the trigger's statements
-- with it. Its successor update named the key and `status = 'pending'`
-- besides `behind`: on a table whose statistics had seen few pending
-- rows (a settled history), the generic plan probed
-- `notifications_endpoint_pending_due` by endpoint instead, reading every
-- pending notification of the endpoint for each one ended: a record of
-- 1,000 outcomes took 0.4-2.2 s on an endpoint with 20,000 waiting
-- (auto_explain, the ordering bench). `behind = id` names the successors
-- exactly; `(status = 'pending') IS TRUE` is a filter no partial index on
-- pending rows can serve, so `notifications_behind` is the only index left.
CREATE OR REPLACE FUNCTION hookd_release_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'succeeded' THEN
        UPDATE order_keys SET held_by = NULL
            WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key
              AND held_by = NEW.id;
    ELSIF NEW.behind IS NULL AND EXISTS (
        SELECT 1 FROM endpoints
        WHERE id = NEW.endpoint_id AND ordering_on_failure = 'hold'
    ) THEN
        UPDATE order_keys SET held_by = NEW.id
            WHERE endpoint_id = NEW.endpoint_id AND order_key = NEW.order_key;
        RETURN NULL;
    END IF;
    UPDATE notifications SET
        behind = NEW.behind,
        needs_index = needs_index OR (NEW.behind IS NULL AND NOT pull),
        next_attempt_at = CASE WHEN NEW.behind IS NULL AND pull
            THEN GREATEST(next_attempt_at, NEW.updated_at) ELSE next_attempt_at END
    WHERE behind = NEW.id AND (status = 'pending') IS TRUE;
    RETURN NULL;
END;
$$;
