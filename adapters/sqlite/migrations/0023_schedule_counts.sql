-- What a schedule counts to pause itself, as
-- adapters/postgres/migrations/0023 (docs/schedules.md). Times are unix
-- microseconds.
ALTER TABLE schedules ADD COLUMN skips INTEGER NOT NULL DEFAULT 0;
ALTER TABLE schedules ADD COLUMN resumed_at INTEGER;
