-- The role of the step that asked for a tool call's approval, as
-- adapters/postgres/migrations/0014.
ALTER TABLE tasks ADD COLUMN approval_role TEXT NOT NULL DEFAULT '';
