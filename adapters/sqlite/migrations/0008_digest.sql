-- A task's digest, as adapters/postgres/migrations/0009.
ALTER TABLE tasks ADD COLUMN digest TEXT NOT NULL DEFAULT '';
