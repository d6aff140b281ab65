-- Forgetting leaves no copy (docs/memory.md, "Forgetting"); see
-- adapters/postgres/migrations/0022_forget.sql.

ALTER TABLE memories ADD COLUMN in_reply_to INTEGER NOT NULL DEFAULT 0;
CREATE INDEX memories_reply ON memories (in_reply_to) WHERE in_reply_to <> 0;

CREATE TABLE fact_sources (
    fact_id   INTEGER NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
    memory_id INTEGER NOT NULL,
    PRIMARY KEY (memory_id, fact_id)
) STRICT;
CREATE INDEX fact_sources_fact ON fact_sources (fact_id);
INSERT OR IGNORE INTO fact_sources (fact_id, memory_id)
SELECT f.id, CAST(s.value AS INTEGER)
FROM facts f, json_each(f.sources) s
WHERE json_valid(f.sources) AND json_type(f.sources) = 'array';

CREATE TABLE forgotten_messages (
    platform     TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    forgotten_at INTEGER,
    PRIMARY KEY (platform, message_id)
) STRICT;
CREATE INDEX forgotten_messages_at ON forgotten_messages (forgotten_at);

CREATE TABLE forgotten_people (
    person       TEXT PRIMARY KEY,
    through_id   INTEGER NOT NULL,
    forgotten_at INTEGER
) STRICT;
CREATE INDEX forgotten_people_at ON forgotten_people (forgotten_at);
