-- Retention (docs/security.md): memories older than TASKLOOM_RETENTION are
-- deleted, oldest first.
CREATE INDEX memories_created ON memories (created_at);
