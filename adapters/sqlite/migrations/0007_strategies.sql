-- Strategies (docs/strategies.md), as adapters/postgres/migrations/0008.
ALTER TABLE tasks ADD COLUMN strategy TEXT NOT NULL DEFAULT 'loop' CHECK (strategy <> '');
ALTER TABLE tasks ADD COLUMN phase TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN strategy_state TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN ledger TEXT NOT NULL DEFAULT '';
ALTER TABLE task_steps ADD COLUMN role TEXT NOT NULL DEFAULT '';
