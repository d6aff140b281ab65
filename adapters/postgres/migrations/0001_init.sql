-- Tasks, their steps and events, chat memories and the notification outbox
-- (docs/tasks.md). Every column of domain.Task is a column here; times are NULL
-- when unset.

CREATE TABLE tasks (
    -- An identity is a sequence: numbers are never handed out twice, even
    -- when the transaction that took one rolls back.
    number               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
    parent_number        BIGINT REFERENCES tasks (number),
    last_processed_at    TIMESTAMPTZ,
    created_at           TIMESTAMPTZ,
    started_at           TIMESTAMPTZ,
    completed_at         TIMESTAMPTZ,
    summary              TEXT NOT NULL DEFAULT '',
    error                TEXT NOT NULL DEFAULT '',
    prompt_tokens        BIGINT NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens    BIGINT NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    lease_owner          TEXT NOT NULL DEFAULT '',
    lease_expires_at     TIMESTAMPTZ,
    fence                BIGINT NOT NULL DEFAULT 0 CHECK (fence >= 0),
    -- The sequence of the task's latest event; the next one is event_seq+1.
    event_seq            BIGINT NOT NULL DEFAULT 0 CHECK (event_seq >= 0),
    CONSTRAINT tasks_stale_within_limit CHECK (stale_counter <= max_stale_iterations),
    CONSTRAINT tasks_iteration_within_limit CHECK (iteration <= max_iterations),
    CONSTRAINT tasks_ended_hold_no_lease CHECK (
        status NOT IN ('completed', 'failed', 'stalemate', 'canceled') OR lease_owner = '')
);

-- The queue. Partial, so claiming costs the same however many tasks have
-- ended; its order is the claim's ORDER BY.
CREATE INDEX tasks_queue ON tasks (last_processed_at NULLS FIRST, number)
    WHERE status IN ('queued', 'running');
CREATE INDEX tasks_workspace_status ON tasks (workspace_id, status, number);
CREATE INDEX tasks_status ON tasks (status, number);
CREATE INDEX tasks_room ON tasks (room_id, number);
CREATE INDEX tasks_parent ON tasks (parent_number) WHERE parent_number IS NOT NULL;

CREATE TABLE task_steps (
    task_number BIGINT NOT NULL REFERENCES tasks (number),
    iteration   INTEGER NOT NULL,
    thought     TEXT NOT NULL DEFAULT '',
    action      TEXT NOT NULL,
    params      JSONB NOT NULL DEFAULT '{}',
    result      TEXT NOT NULL DEFAULT '',
    success     BOOLEAN NOT NULL,
    error       TEXT NOT NULL DEFAULT '',
    progress    INTEGER NOT NULL,
    time        TIMESTAMPTZ,
    PRIMARY KEY (task_number, iteration)
);

CREATE TABLE task_events (
    -- Global order of every event, what Server-Sent Events resume from.
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_number BIGINT NOT NULL REFERENCES tasks (number),
    sequence    BIGINT NOT NULL CHECK (sequence > 0),
    type        TEXT NOT NULL,
    payload     JSONB NOT NULL,
    actor       TEXT NOT NULL DEFAULT '',
    fence       BIGINT NOT NULL DEFAULT 0,
    time        TIMESTAMPTZ,
    UNIQUE (task_number, sequence)
);

CREATE TABLE memories (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    platform     TEXT NOT NULL DEFAULT '',
    message_id   TEXT NOT NULL DEFAULT '',
    room         TEXT NOT NULL,
    workspace_id TEXT NOT NULL DEFAULT '',
    author_id    TEXT NOT NULL DEFAULT '',
    author_name  TEXT NOT NULL DEFAULT '',
    text         TEXT NOT NULL DEFAULT '',
    from_bot     BOOLEAN NOT NULL DEFAULT FALSE,
    created_at   TIMESTAMPTZ
);
-- A redelivered message is stored once.
CREATE UNIQUE INDEX memories_message ON memories (platform, message_id) WHERE message_id <> '';
CREATE INDEX memories_room ON memories (room, created_at, id);

-- The outbox: notifications wait here until the platform accepted them.
CREATE TABLE notifications (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    room             TEXT NOT NULL,
    task_number      BIGINT NOT NULL DEFAULT 0,
    category         TEXT NOT NULL,
    payload          JSONB NOT NULL DEFAULT '{}',
    created_at       TIMESTAMPTZ,
    attempts         INTEGER NOT NULL DEFAULT 0,
    -- NULL: due at once.
    next_attempt_at  TIMESTAMPTZ,
    last_error       TEXT NOT NULL DEFAULT '',
    claimed_by       TEXT NOT NULL DEFAULT '',
    claim_expires_at TIMESTAMPTZ
);
CREATE INDEX notifications_room ON notifications (room, created_at, id);
CREATE INDEX notifications_due ON notifications (next_attempt_at, created_at, id);

-- The progress of each task as last shown in each room.
CREATE TABLE room_progress (
    room        TEXT NOT NULL,
    task_number BIGINT NOT NULL,
    progress    INTEGER NOT NULL,
    PRIMARY KEY (room, task_number)
);
