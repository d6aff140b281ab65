-- Steps and events without a foreign key to tasks (docs/PERFORMANCE.md). Every
-- step and event is written in the transaction that updates its task's
-- row, in the same statement or after it (the store checks that the
-- update found the row, or undoes the transaction), and no task is ever
-- deleted: the key check on each insert, a query of tasks per row, only
-- repeated what the writer already holds. At 16 workers it was about a
-- tenth of the database's work per iteration (BenchmarkQueue).
ALTER TABLE task_steps DROP CONSTRAINT task_steps_task_number_fkey;
ALTER TABLE task_events DROP CONSTRAINT task_events_task_number_fkey;
