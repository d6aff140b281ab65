-- Retention (PRODUCT §9): memories older than TASKLOOM_RETENTION are
-- deleted, oldest first.
CREATE INDEX memories_created ON memories (created_at);
