-- A step per tool call (docs/strategies.md): a tools reply of several calls
-- writes one step for each, in the order they ran, under the claim's
-- iteration. call is a step's place among its iteration's steps, from 0;
-- every step written before is its iteration's only one, call 0.
ALTER TABLE task_steps ADD COLUMN call INTEGER NOT NULL DEFAULT 0 CHECK (call >= 0);
ALTER TABLE task_steps DROP CONSTRAINT task_steps_pkey;
ALTER TABLE task_steps ADD PRIMARY KEY (task_number, iteration, call);
