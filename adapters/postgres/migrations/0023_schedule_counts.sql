-- What a schedule counts to pause itself (docs/schedules.md): resumed_at
-- is when it was last resumed, so the runs that failed before it are not
-- counted again; skips counts its due times in a row that made no run,
-- so one whose runs keep waiting on a person pauses instead of writing a
-- skipped event every period.
ALTER TABLE schedules ADD COLUMN skips INTEGER NOT NULL DEFAULT 0;
ALTER TABLE schedules ADD COLUMN resumed_at TIMESTAMPTZ;
