-- Schedules: tasks created from a goal at the times of a cron expression
-- (docs/schedules.md). next_run_at is the due time a schedule waits for;
-- the replica that claims a due schedule creates its run and moves
-- next_run_at on in one transaction, so each due time fires once.
CREATE TABLE schedules (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         TEXT NOT NULL,
    cron         TEXT NOT NULL,
    goal         TEXT NOT NULL,
    platform     TEXT NOT NULL DEFAULT '',
    room         TEXT NOT NULL DEFAULT '',
    workspace    TEXT NOT NULL DEFAULT '',
    requestor    TEXT NOT NULL DEFAULT '',
    strategy     TEXT NOT NULL DEFAULT 'loop',
    overlap      TEXT NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip', 'allow')),
    catch_up     TEXT NOT NULL DEFAULT 'one' CHECK (catch_up IN ('one', 'none')),
    paused       BOOLEAN NOT NULL DEFAULT false,
    next_run_at  TIMESTAMPTZ NOT NULL,
    last_run_at  TIMESTAMPTZ,
    last_task    BIGINT,
    failures     INTEGER NOT NULL DEFAULT 0,
    created_at   TIMESTAMPTZ NOT NULL
);

-- The firing loop's claim walks this index: due schedules, most overdue first.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE NOT paused;
CREATE INDEX schedules_requestor ON schedules (requestor);

CREATE TABLE schedule_events (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schedule_id BIGINT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    type        TEXT NOT NULL,
    task_number BIGINT,
    detail      TEXT NOT NULL DEFAULT '',
    actor       TEXT NOT NULL DEFAULT '',
    time        TIMESTAMPTZ NOT NULL
);
CREATE INDEX schedule_events_schedule ON schedule_events (schedule_id, id);

-- A task made by a schedule names it; the schedule's latest runs are read
-- by this index (overlap, failures in a row). Deleting a schedule keeps
-- its runs, so there is no foreign key.
ALTER TABLE tasks ADD COLUMN schedule_id BIGINT;
CREATE INDEX tasks_schedule ON tasks (schedule_id, number DESC) WHERE schedule_id IS NOT NULL;
