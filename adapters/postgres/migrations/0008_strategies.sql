-- Strategies (docs/strategies.md): how a task's claims are made, the phase a
-- strategy is in, its own state between claims and magentic's ledger
-- (JSON text, '' for none); each step records whose turn it was.
ALTER TABLE tasks
    ADD COLUMN strategy TEXT NOT NULL DEFAULT 'loop' CHECK (strategy <> ''),
    ADD COLUMN phase TEXT NOT NULL DEFAULT '',
    ADD COLUMN strategy_state TEXT NOT NULL DEFAULT '',
    ADD COLUMN ledger TEXT NOT NULL DEFAULT '';

ALTER TABLE task_steps ADD COLUMN role TEXT NOT NULL DEFAULT '';
