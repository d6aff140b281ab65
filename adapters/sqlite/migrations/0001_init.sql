-- Tasks, their steps and events, chat memories and the notification outbox
-- (docs/tasks.md), with the semantics of adapters/postgres/migrations. Times
-- are INTEGER unix microseconds (UTC), NULL when unset; JSON is TEXT.

CREATE TABLE tasks (
    -- AUTOINCREMENT: a number is never handed out twice, even after the
    -- highest task is deleted.
    number               INTEGER PRIMARY KEY AUTOINCREMENT,
    name                 TEXT NOT NULL,
    goal                 TEXT NOT NULL,
    status               TEXT NOT NULL CHECK (status IN
                           ('queued', 'running', 'paused', 'waiting',
                            'completed', 'failed', 'stalemate', 'canceled')),
    progress             INTEGER NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
    previous_progress    INTEGER NOT NULL DEFAULT 0 CHECK (previous_progress BETWEEN 0 AND 100),
    stale_counter        INTEGER NOT NULL DEFAULT 0 CHECK (stale_counter >= 0),
    iteration            INTEGER NOT NULL DEFAULT 0 CHECK (iteration >= 0),
    max_iterations       INTEGER NOT NULL CHECK (max_iterations > 0),
    max_stale_iterations INTEGER NOT NULL CHECK (max_stale_iterations > 0),
    requestor_id         TEXT NOT NULL DEFAULT '',
    platform             TEXT NOT NULL DEFAULT '',
    room_id              TEXT NOT NULL DEFAULT '',
    workspace_id         TEXT NOT NULL DEFAULT '',
    parent_number        INTEGER REFERENCES tasks (number),
    last_processed_at    INTEGER,
    created_at           INTEGER,
    started_at           INTEGER,
    completed_at         INTEGER,
    summary              TEXT NOT NULL DEFAULT '',
    error                TEXT NOT NULL DEFAULT '',
    prompt_tokens        INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens    INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    lease_owner          TEXT NOT NULL DEFAULT '',
    lease_expires_at     INTEGER,
    fence                INTEGER NOT NULL DEFAULT 0 CHECK (fence >= 0),
    -- The sequence of the task's latest event; the next one is event_seq+1.
    event_seq            INTEGER NOT NULL DEFAULT 0 CHECK (event_seq >= 0),
    CONSTRAINT tasks_stale_within_limit CHECK (stale_counter <= max_stale_iterations),
    CONSTRAINT tasks_iteration_within_limit CHECK (iteration <= max_iterations),
    CONSTRAINT tasks_ended_hold_no_lease CHECK (
        status NOT IN ('completed', 'failed', 'stalemate', 'canceled') OR lease_owner = '')
) STRICT;

-- The queue. Partial, so claiming costs the same however many tasks have
-- ended. SQLite sorts NULL first in ascending order, as the queue wants.
CREATE INDEX tasks_queue ON tasks (last_processed_at, number)
    WHERE status IN ('queued', 'running');
CREATE INDEX tasks_workspace_status ON tasks (workspace_id, status, number);
CREATE INDEX tasks_status ON tasks (status, number);
CREATE INDEX tasks_room ON tasks (room_id, number);
CREATE INDEX tasks_parent ON tasks (parent_number) WHERE parent_number IS NOT NULL;

CREATE TABLE task_steps (
    task_number INTEGER NOT NULL REFERENCES tasks (number),
    iteration   INTEGER NOT NULL,
    thought     TEXT NOT NULL DEFAULT '',
    action      TEXT NOT NULL,
    params      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(params)),
    result      TEXT NOT NULL DEFAULT '',
    success     INTEGER NOT NULL,
    error       TEXT NOT NULL DEFAULT '',
    progress    INTEGER NOT NULL,
    time        INTEGER,
    PRIMARY KEY (task_number, iteration)
) STRICT;

CREATE TABLE task_events (
    -- Global order of every event, what Server-Sent Events resume from.
    -- Events are never deleted, so the rowid alone never goes back (and
    -- AUTOINCREMENT would cost a write to sqlite_sequence per event).
    id          INTEGER PRIMARY KEY,
    task_number INTEGER NOT NULL REFERENCES tasks (number),
    sequence    INTEGER NOT NULL CHECK (sequence > 0),
    type        TEXT NOT NULL,
    payload     TEXT NOT NULL CHECK (json_valid(payload)),
    actor       TEXT NOT NULL DEFAULT '',
    fence       INTEGER NOT NULL DEFAULT 0,
    time        INTEGER,
    UNIQUE (task_number, sequence)
) STRICT;

CREATE TABLE memories (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    platform     TEXT NOT NULL DEFAULT '',
    message_id   TEXT NOT NULL DEFAULT '',
    room         TEXT NOT NULL,
    workspace_id TEXT NOT NULL DEFAULT '',
    author_id    TEXT NOT NULL DEFAULT '',
    author_name  TEXT NOT NULL DEFAULT '',
    text         TEXT NOT NULL DEFAULT '',
    from_bot     INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER
) STRICT;
-- A redelivered message is stored once.
CREATE UNIQUE INDEX memories_message ON memories (platform, message_id) WHERE message_id <> '';
CREATE INDEX memories_room ON memories (room, created_at, id);

-- The outbox: notifications wait here until the platform accepted them.
CREATE TABLE notifications (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    room             TEXT NOT NULL,
    task_number      INTEGER NOT NULL DEFAULT 0,
    category         TEXT NOT NULL,
    payload          TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(payload)),
    created_at       INTEGER,
    attempts         INTEGER NOT NULL DEFAULT 0,
    -- NULL: due at once.
    next_attempt_at  INTEGER,
    last_error       TEXT NOT NULL DEFAULT '',
    claimed_by       TEXT NOT NULL DEFAULT '',
    claim_expires_at INTEGER
) STRICT;
CREATE INDEX notifications_room ON notifications (room, created_at, id);
CREATE INDEX notifications_due ON notifications (next_attempt_at, created_at, id);

-- The progress of each task as last shown in each room.
CREATE TABLE room_progress (
    room        TEXT NOT NULL,
    task_number INTEGER NOT NULL,
    progress    INTEGER NOT NULL,
    PRIMARY KEY (room, task_number)
) STRICT;
