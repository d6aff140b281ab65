-- A task's digest (domain.Digest, JSON text): its steps counted by action
-- and where its latest answers are, so an iteration reads its last few
-- steps instead of all of them (docs/PERFORMANCE.md). '' for the tasks created
-- before it, which keep folding their events.
ALTER TABLE tasks ADD COLUMN digest TEXT NOT NULL DEFAULT '';
