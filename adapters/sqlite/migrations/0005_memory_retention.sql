-- Retention (docs/security.md), as adapters/postgres/migrations/0006.
CREATE INDEX memories_created ON memories (created_at);
