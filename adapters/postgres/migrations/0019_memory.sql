-- Recall (docs/memory.md): chat messages, facts and knowledge passages are
-- searched by full text in the store, each kind in a scope: the room up
-- to its second colon (domain.RoomScope), so a channel and its threads
-- share what was said there and a DM keeps its own.

-- Messages: their scope, and a tsvector of their text. The generated
-- column is computed for the rows already stored as it is added, so the
-- messages stored before this migration are searchable too.
ALTER TABLE memories ADD COLUMN scope TEXT NOT NULL DEFAULT '';
UPDATE memories SET scope = regexp_replace(room, '^([^:]*:[^:]*):.*$', '\1');
ALTER TABLE memories ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('english', text)) STORED;
CREATE INDEX memories_search ON memories USING GIN (search);
CREATE INDEX memories_scope ON memories (scope, id);
-- Forgetting a person finds what they wrote.
CREATE INDEX memories_author ON memories (platform, author_id);
-- A room's messages by ID: those after one (the facts evaluator), the newest
-- (the API's list).
CREATE INDEX memories_room_id ON memories (room, id);

CREATE TABLE facts (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    room       TEXT NOT NULL,
    scope      TEXT NOT NULL,
    -- The person it is about, "<platform>:<user id>", or ''.
    about      TEXT NOT NULL DEFAULT '',
    text       TEXT NOT NULL,
    -- The IDs of the memories it came from, a JSON array.
    sources    JSONB NOT NULL DEFAULT '[]',
    -- An embedding for re-ranking: float32s, little-endian.
    embedding  BYTEA,
    created_at TIMESTAMPTZ,
    search     tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
);
-- A fact learnt twice is stored once.
CREATE UNIQUE INDEX facts_once ON facts (scope, about, md5(text));
CREATE INDEX facts_search ON facts USING GIN (search);
CREATE INDEX facts_about ON facts (about);
-- Recall's candidates of a scope, newest first.
CREATE INDEX facts_scope ON facts (scope, id);
CREATE INDEX facts_created ON facts (created_at);

CREATE TABLE documents (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title      TEXT NOT NULL,
    -- '' for knowledge of every room.
    room       TEXT NOT NULL DEFAULT '',
    scope      TEXT NOT NULL DEFAULT '',
    bytes      INTEGER NOT NULL,
    passages   INTEGER NOT NULL,
    created_at TIMESTAMPTZ
);
CREATE INDEX documents_room ON documents (room, id);

CREATE TABLE passages (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id BIGINT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    -- The document's scope, copied so a search filters without a join.
    scope       TEXT NOT NULL,
    text        TEXT NOT NULL,
    embedding   BYTEA,
    search      tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
);
CREATE INDEX passages_search ON passages USING GIN (search);

CREATE INDEX passages_document ON passages (document_id, position);
