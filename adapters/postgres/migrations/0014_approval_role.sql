-- The role of the step that asked for a tool call's approval (docs/strategies.md,
-- docs/security.md), which the call's step keeps when it runs or is denied.
ALTER TABLE tasks ADD COLUMN approval_role TEXT NOT NULL DEFAULT '';
