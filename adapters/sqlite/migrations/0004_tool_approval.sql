-- Tool approval (docs/security.md), as adapters/postgres/migrations/0005.
ALTER TABLE tasks ADD COLUMN approval_action TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN approval_params TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN approval_granted INTEGER NOT NULL DEFAULT 0 CHECK (approval_granted IN (0, 1));
