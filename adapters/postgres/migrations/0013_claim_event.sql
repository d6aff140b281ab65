-- A claim in one statement (docs/PERFORMANCE.md): the claim statement writes its
-- own "claimed" event, so a claim is one round trip, committed on its own.
-- These two functions are what that statement needs beyond plain SQL.

-- taskloom_in_turn raises when ok is false: the claim statement calls it
-- with whether the row it claimed is the one its snapshot ordered first
-- (see txn.claim in adapters/postgres), and the claim, its event and its
-- transaction are undone, to be taken again on a fresh snapshot. A
-- function, not an expression, so that the planner cannot evaluate it
-- ahead of the rows.
CREATE FUNCTION taskloom_in_turn(ok BOOLEAN) RETURNS BOOLEAN
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT ok THEN
        RAISE EXCEPTION 'taskloom: the task claimed was served since the queue was read'
            USING ERRCODE = 'TLTRN';
    END IF;
    RETURN TRUE;
END
$$;

-- taskloom_json_time is a time as an event payload carries it: what Go's
-- encoding/json writes for a UTC time.Time (RFC 3339 with the fraction's
-- trailing zeros cut, no fraction when it is zero).
CREATE FUNCTION taskloom_json_time(t TIMESTAMPTZ) RETURNS TEXT
LANGUAGE sql STABLE STRICT AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
        || rtrim(rtrim(to_char(t AT TIME ZONE 'UTC', '.US'), '0'), '.')
        || 'Z'
$$;
