package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

// InTx runs fn in one IMMEDIATE transaction on the writer
// (sqlstore.TxDB).
func (h handles) InTx(ctx context.Context, fn func(sqlstore.DB) error) error {
	tx, err := h.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer tx.Rollback()
	if err := fn(txDB{tx}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// txDB is one transaction as a sqlstore.DB.
type txDB struct{ tx *sql.Tx }

func (t txDB) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return t.tx.QueryRowContext(ctx, q, args...)
}

func (t txDB) Query(ctx context.Context, q string, args []any, read func(sqlstore.Rows) error) error {
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return read(rows)
}

func (txDB) IsNoRows(err error) bool { return isNoRows(err) }

func (t txDB) WriteRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return t.tx.QueryRowContext(ctx, q, args...)
}

func (t txDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// ftsQuery ORs the terms for an FTS5 MATCH, each a string in double
// quotes (a quote inside doubled), so that no word of a user — NEAR, AND,
// a '*', a column filter — is read as FTS5 syntax.
func ftsQuery(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(quoted, " OR ")
}

// recallSQL is this dialect's text of the facts', knowledge's and recall's
// statements. bm25 is lower for a better match; Rank is its negation.
var recallSQL = sqlstore.RecallSQL{
	Match: ftsQuery,
	InsertFact: `INSERT INTO facts (room, scope, about, text, sources, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (scope, about, text) DO NOTHING RETURNING id`,
	InsertDocument: `INSERT INTO documents (title, room, scope, bytes, passages, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id`,
	InsertPassage:  `INSERT INTO passages (document_id, position, scope, text) VALUES (?1, ?2, ?3, ?4)`,
	Documents:      `SELECT ` + sqlstore.DocumentColumns + ` FROM documents WHERE ?1 = '' OR room = ?1 ORDER BY id DESC`,
	DeletePassages: `DELETE FROM passages WHERE document_id = ?1`,
	DeleteDocument: `DELETE FROM documents WHERE id = ?1`,

	Holding: `SELECT EXISTS (SELECT 1 FROM memories WHERE scope = ?1), EXISTS (SELECT 1 FROM facts WHERE scope = ?1),
       EXISTS (SELECT 1 FROM documents WHERE scope IN ('', ?1))`,
	Frequencies: map[string]string{
		domain.RecallMessage: frequencies("memories_fts"),
		domain.RecallFact:    frequencies("facts_fts"),
		domain.RecallPassage: frequencies("passages_fts"),
	},
	Terms: func(terms []string) any { return jsonList(terms) },

	// The candidates are the newest rows matching (FTS5 reads its rows by
	// rowid, either way, and computes bm25 for the rows it returns only).
	RecallMessages: same(`SELECT m.id, m.room, m.text, m.author_name, m.platform || ':' || m.author_id, c.rank, m.created_at
FROM (SELECT m.id AS id, -bm25(memories_fts) AS rank
      FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
      WHERE memories_fts MATCH ?1 AND m.scope = ?2 AND (?3 = 0 OR m.id < ?3)
      ORDER BY memories_fts.rowid DESC LIMIT ?5) c
JOIN memories m ON m.id = c.id
ORDER BY c.rank DESC, m.id DESC LIMIT ?4`),
	RecallFacts: same(`SELECT f.id, f.room, f.text, f.about, f.sources, c.rank, f.created_at
FROM (SELECT f.id AS id, -bm25(facts_fts) AS rank
      FROM facts_fts JOIN facts f ON f.id = facts_fts.rowid
      WHERE facts_fts MATCH ?1 AND f.scope = ?2
      ORDER BY facts_fts.rowid DESC LIMIT ?4) c
JOIN facts f ON f.id = c.id
ORDER BY c.rank DESC, f.id DESC LIMIT ?3`),
	RecallPassages: same(`SELECT p.id, d.room, p.text, d.title, CAST(p.position AS TEXT), c.rank, d.created_at
FROM (SELECT p.id AS id, -bm25(passages_fts) AS rank
      FROM passages_fts JOIN passages p ON p.id = passages_fts.rowid
      WHERE passages_fts MATCH ?1 AND p.scope IN ('', ?2)
      ORDER BY passages_fts.rowid DESC LIMIT ?4) c
JOIN passages p ON p.id = c.id JOIN documents d ON d.id = p.document_id
ORDER BY c.rank DESC, p.id LIMIT ?3`),

	MemoriesAfter: `SELECT ` + memoryCols + ` FROM memories WHERE room = ?1 AND id > ?2 ORDER BY id LIMIT ?3`,
	ListMemories: `SELECT ` + memoryCols + ` FROM memories
WHERE (?1 = '' OR room = ?1) AND (?2 = 0 OR id < ?2) ORDER BY id DESC LIMIT ?3`,
	SearchMemories: `SELECT ` + memoryColsOf("m") + `
FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
WHERE memories_fts MATCH ?1 AND (?2 = '' OR m.room = ?2) AND (?3 = 0 OR m.id < ?3)
ORDER BY bm25(memories_fts), m.id DESC LIMIT ?4`,

	// No LockPerson: write transactions are serial (one connection,
	// BEGIN IMMEDIATE).
	ForgetThrough:    `SELECT COALESCE(MAX(id), 0) FROM memories`,
	ForgottenThrough: `SELECT through_id FROM forgotten_people WHERE person = ?1`,
	MarkForgotten: `INSERT INTO forgotten_people (person, through_id, forgotten_at)
VALUES (?1, ?2, CAST(strftime('%s', 'now') AS INTEGER) * 1000000)
ON CONFLICT (person) DO UPDATE
SET through_id = max(through_id, excluded.through_id), forgotten_at = excluded.forgotten_at`,
	ForgetMessageIDs: `INSERT INTO forgotten_messages (platform, message_id, forgotten_at)
SELECT platform, message_id, CAST(strftime('%s', 'now') AS INTEGER) * 1000000
FROM memories WHERE platform = ?1 AND author_id = ?2 AND message_id <> ''
ON CONFLICT DO NOTHING`,
	ForgetMessages:   `DELETE FROM memories WHERE platform = ?1 AND author_id = ?2 RETURNING id, scope, text`,
	BotMessagesAfter: `SELECT id, scope, text FROM memories WHERE scope = ?1 AND id > ?2 AND from_bot`,
	DeleteMemories:   `DELETE FROM memories WHERE id IN (SELECT value FROM json_each(?1)) RETURNING id`,
	ForgetReplies: `DELETE FROM memories
WHERE in_reply_to <> 0 AND in_reply_to IN (SELECT value FROM json_each(?1)) RETURNING id`,
	ForgetFacts: `DELETE FROM facts
WHERE about = ?1 OR id IN (SELECT fact_id FROM fact_sources WHERE memory_id IN (SELECT value FROM json_each(?2)))`,
	LiveSources:      `SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?1))`,
	InsertFactSource: `INSERT INTO fact_sources (fact_id, memory_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING`,

	MoveMessages: `UPDATE memories SET room = ?2, scope = ?3 WHERE room = ?1`,
	DropKnownFacts: `DELETE FROM facts WHERE room = ?1 AND EXISTS (
    SELECT 1 FROM facts known WHERE known.scope = ?2 AND known.about = facts.about AND known.text = facts.text AND known.id <> facts.id)`,
	MoveFacts:     `UPDATE facts SET room = ?2, scope = ?3 WHERE room = ?1`,
	MovePassages:  `UPDATE passages SET scope = ?2 WHERE document_id IN (SELECT id FROM documents WHERE room = ?1)`,
	MoveDocuments: `UPDATE documents SET room = ?2, scope = ?3 WHERE room = ?1`,

	SaveEmbedding: map[string]string{
		domain.RecallFact:    `UPDATE facts SET embedding = ?2 WHERE id = ?1 AND embedding IS NULL`,
		domain.RecallPassage: `UPDATE passages SET embedding = ?2 WHERE id = ?1 AND embedding IS NULL`,
	},
	Embeddings: map[string]string{
		domain.RecallFact: `SELECT id, embedding FROM facts
WHERE id IN (SELECT value FROM json_each(?1)) AND embedding IS NOT NULL`,
		domain.RecallPassage: `SELECT id, embedding FROM passages
WHERE id IN (SELECT value FROM json_each(?1)) AND embedding IS NOT NULL`,
	},
	Limit: recordSQL.Limit,
	List:  func(ids []int64) any { return jsonList(ids) },
	Time:  timeArg,
}

// memoryColsOf is MemoryColumns of the table named alias.
func memoryColsOf(alias string) string {
	return alias + "." + strings.ReplaceAll(sqlstore.MemoryColumns, ", ", ", "+alias+".")
}

// frequencies counts, for each term of ?1, the rows of the FTS5 table
// matching it, up to ?2. A term is letters and digits, quoted here as
// ftsQuery quotes it.
func frequencies(table string) string {
	return `SELECT j.value, (SELECT count(*) FROM (SELECT 1 FROM ` + table + `
WHERE ` + table + ` MATCH '"' || replace(j.value, '"', '""') || '"' LIMIT ?2))
FROM json_each(?1) AS j`
}

// same is one statement for a selective query and one of common words:
// FTS5 reads the rows matching by rowid either way.
func same(q string) sqlstore.RecallStatements {
	return sqlstore.RecallStatements{Selective: q, Common: q}
}
