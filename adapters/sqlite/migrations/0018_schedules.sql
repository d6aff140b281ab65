-- Schedules, as adapters/postgres/migrations/0018 (docs/schedules.md).
-- Times are unix microseconds, as everywhere in this schema.
CREATE TABLE schedules (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
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
    paused       INTEGER NOT NULL DEFAULT 0,
    next_run_at  INTEGER NOT NULL,
    last_run_at  INTEGER,
    last_task    INTEGER,
    failures     INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL
);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE paused = 0;
CREATE INDEX schedules_requestor ON schedules (requestor);

CREATE TABLE schedule_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    schedule_id INTEGER NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    type        TEXT NOT NULL,
    task_number INTEGER,
    detail      TEXT NOT NULL DEFAULT '',
    actor       TEXT NOT NULL DEFAULT '',
    time        INTEGER NOT NULL
);
CREATE INDEX schedule_events_schedule ON schedule_events (schedule_id, id);

ALTER TABLE tasks ADD COLUMN schedule_id INTEGER;
CREATE INDEX tasks_schedule ON tasks (schedule_id, number DESC) WHERE schedule_id IS NOT NULL;
