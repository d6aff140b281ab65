-- Recall (docs/memory.md), as adapters/postgres/migrations/0019: chat
-- messages, facts and knowledge passages searched by full text, each kind
-- in a scope (domain.RoomScope: the room up to its second colon). The
-- text indexes are FTS5 tables over the rows (external content), kept by
-- triggers; porter stemming stands for PostgreSQL's 'english'.

ALTER TABLE memories ADD COLUMN scope TEXT NOT NULL DEFAULT '';
-- The room up to its second colon, when it has two.
UPDATE memories SET scope = CASE
    WHEN instr(substr(room, instr(room, ':') + 1), ':') > 0
    THEN substr(room, 1, instr(room, ':') + instr(substr(room, instr(room, ':') + 1), ':') - 1)
    ELSE room END;
CREATE INDEX memories_scope ON memories (scope, id);
-- Forgetting a person finds what they wrote.
CREATE INDEX memories_author ON memories (platform, author_id);
-- A room's messages by ID: those after one (the facts evaluator), the newest
-- (the API's list).
CREATE INDEX memories_room_id ON memories (room, id);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    text, content = 'memories', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF text ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text);
END;
-- The messages stored before this migration become searchable.
INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');

CREATE TABLE facts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    room       TEXT NOT NULL,
    scope      TEXT NOT NULL,
    about      TEXT NOT NULL DEFAULT '',
    text       TEXT NOT NULL,
    sources    TEXT NOT NULL DEFAULT '[]',
    embedding  BLOB,
    created_at INTEGER
) STRICT;
CREATE UNIQUE INDEX facts_once ON facts (scope, about, text);
CREATE INDEX facts_about ON facts (about);
CREATE INDEX facts_scope ON facts (scope, id);
CREATE INDEX facts_created ON facts (created_at);
CREATE VIRTUAL TABLE facts_fts USING fts5(
    text, content = 'facts', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER facts_fts_update AFTER UPDATE OF text ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO facts_fts (rowid, text) VALUES (new.id, new.text);
END;

CREATE TABLE documents (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    title      TEXT NOT NULL,
    room       TEXT NOT NULL DEFAULT '',
    scope      TEXT NOT NULL DEFAULT '',
    bytes      INTEGER NOT NULL,
    passages   INTEGER NOT NULL,
    created_at INTEGER
) STRICT;
CREATE INDEX documents_room ON documents (room, id);

CREATE TABLE passages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id INTEGER NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    scope       TEXT NOT NULL,
    text        TEXT NOT NULL,
    embedding   BLOB
) STRICT;
CREATE INDEX passages_document ON passages (document_id, position);
CREATE INDEX passages_scope ON passages (scope);
CREATE VIRTUAL TABLE passages_fts USING fts5(
    text, content = 'passages', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TRIGGER passages_fts_insert AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER passages_fts_delete AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts (passages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
