-- Forgetting leaves no copy (docs/memory.md, "Forgetting").

-- A reply of the bot names the message it answers (its memory ID, 0 for
-- none), so that forgetting a person deletes the bot's replies to them,
-- which may quote them.
ALTER TABLE memories ADD COLUMN in_reply_to BIGINT NOT NULL DEFAULT 0;
CREATE INDEX memories_reply ON memories (in_reply_to) WHERE in_reply_to <> 0;

-- Which messages each fact was drawn from, one row a message, so that
-- forgetting a person deletes the facts drawn from their words. No
-- foreign key to memories: a fact is found by its sources after they are
-- deleted, in the transaction that deletes them.
CREATE TABLE fact_sources (
    fact_id   BIGINT NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
    memory_id BIGINT NOT NULL,
    PRIMARY KEY (memory_id, fact_id)
);
CREATE INDEX fact_sources_fact ON fact_sources (fact_id);
INSERT INTO fact_sources (fact_id, memory_id)
SELECT DISTINCT f.id, s.value::bigint
FROM facts f, jsonb_array_elements_text(f.sources) s
WHERE jsonb_typeof(f.sources) = 'array';

-- The messages forgotten, by platform and message ID: a platform's retry
-- or redelivery of one of them is not stored again.
CREATE TABLE forgotten_messages (
    platform     TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    forgotten_at TIMESTAMPTZ,
    PRIMARY KEY (platform, message_id)
);
CREATE INDEX forgotten_messages_at ON forgotten_messages (forgotten_at);

-- The people forgotten, with the highest memory ID when they last were: a
-- fact about them drawn from messages up to it (a facts extraction that
-- raced the forgetting) is not stored.
CREATE TABLE forgotten_people (
    person       TEXT PRIMARY KEY,
    through_id   BIGINT NOT NULL,
    forgotten_at TIMESTAMPTZ
);
CREATE INDEX forgotten_people_at ON forgotten_people (forgotten_at);
