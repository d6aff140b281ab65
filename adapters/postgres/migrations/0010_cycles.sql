-- A strategy whose claims come in cycles (react, docs/strategies.md: a thought, an
-- action and an observation) counts max_iterations in cycles, so its
-- iterations (claims) may reach three times it. The exact bound, in cycles
-- or in claims, is what taskloom check verifies from the events; this one
-- only stops a runaway.
ALTER TABLE tasks DROP CONSTRAINT tasks_iteration_within_limit;
ALTER TABLE tasks ADD CONSTRAINT tasks_iteration_within_limit CHECK (iteration <= 3 * max_iterations);
