package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

// InTx runs fn in one transaction on the pool (sqlstore.TxDB).
func (r poolDB) InTx(ctx context.Context, fn func(sqlstore.DB) error) error {
	return pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error { return fn(txDB{tx}) })
}

// txDB is one transaction as a sqlstore.DB.
type txDB struct{ tx pgx.Tx }

func (t txDB) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return t.tx.QueryRow(ctx, q, args...)
}

func (t txDB) Query(ctx context.Context, q string, args []any, read func(sqlstore.Rows) error) error {
	rows, err := t.tx.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return read(rows)
}

func (txDB) IsNoRows(err error) bool { return isNoRows(err) }

func (t txDB) WriteRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return t.tx.QueryRow(ctx, q, args...)
}

func (t txDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

// tsQuery ORs the terms, each a quoted lexeme, for to_tsquery('english',
// …): the query's words need not all be in a match, and ts_rank ranks
// those with more of them, and rarer ones, higher. (websearch_to_tsquery
// would AND them and find almost nothing.)
func tsQuery(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = "'" + strings.ReplaceAll(t, "'", "''") + "'"
	}
	return strings.Join(quoted, " | ")
}

// recallSQL is this dialect's text of the facts', knowledge's and recall's
// statements.
var recallSQL = sqlstore.RecallSQL{
	Match: tsQuery,
	InsertFact: `INSERT INTO facts (room, scope, about, text, sources, created_at)
VALUES ($1, $2, $3, $4, $5::jsonb, $6)
ON CONFLICT (scope, about, md5(text)) DO NOTHING RETURNING id`,
	InsertDocument: `INSERT INTO documents (title, room, scope, bytes, passages, created_at)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
	InsertPassage:  `INSERT INTO passages (document_id, position, scope, text) VALUES ($1, $2, $3, $4)`,
	Documents:      `SELECT ` + sqlstore.DocumentColumns + ` FROM documents WHERE $1 = '' OR room = $1 ORDER BY id DESC`,
	DeletePassages: `DELETE FROM passages WHERE document_id = $1`,
	DeleteDocument: `DELETE FROM documents WHERE id = $1`,

	Holding: `SELECT EXISTS (SELECT 1 FROM memories WHERE scope = $1), EXISTS (SELECT 1 FROM facts WHERE scope = $1),
       EXISTS (SELECT 1 FROM documents WHERE scope IN ('', $1))`,
	Frequencies: map[string]string{
		domain.RecallMessage: frequencies("memories"),
		domain.RecallFact:    frequencies("facts"),
		domain.RecallPassage: frequencies("passages"),
	},
	Terms: func(terms []string) any { return terms },

	RecallMessages: recallStatements(`SELECT m.id, m.room, m.text, m.author_name, m.platform || ':' || m.author_id,
       ts_rank(m.search, q)::float8 AS rank, m.created_at
FROM (SELECT id FROM memories, to_tsquery('english', $1) q
      WHERE scope = $2 AND %[1]s AND ($3::bigint = 0 OR id < $3)
      ORDER BY %[2]s LIMIT $5) c
JOIN memories m ON m.id = c.id, to_tsquery('english', $1) q
ORDER BY rank DESC, m.id DESC LIMIT $4`),
	RecallFacts: recallStatements(`SELECT f.id, f.room, f.text, f.about, f.sources::text, ts_rank(f.search, q)::float8 AS rank, f.created_at
FROM (SELECT id FROM facts, to_tsquery('english', $1) q WHERE scope = $2 AND %[1]s ORDER BY %[2]s LIMIT $4) c
JOIN facts f ON f.id = c.id, to_tsquery('english', $1) q
ORDER BY rank DESC, f.id DESC LIMIT $3`),
	RecallPassages: recallStatements(`SELECT p.id, d.room, p.text, d.title, p.position::text, ts_rank(p.search, q)::float8 AS rank, d.created_at
FROM (SELECT id FROM passages, to_tsquery('english', $1) q WHERE scope IN ('', $2) AND %[1]s ORDER BY %[2]s LIMIT $4) c
JOIN passages p ON p.id = c.id JOIN documents d ON d.id = p.document_id, to_tsquery('english', $1) q
ORDER BY rank DESC, p.id LIMIT $3`),

	MemoriesAfter: `SELECT ` + memoryCols + ` FROM memories WHERE room = $1 AND id > $2 ORDER BY id LIMIT $3`,
	ListMemories: `SELECT ` + memoryCols + ` FROM memories
WHERE ($1 = '' OR room = $1) AND ($2::bigint = 0 OR id < $2) ORDER BY id DESC LIMIT $3`,
	SearchMemories: `SELECT ` + memoryCols + ` FROM memories, to_tsquery('english', $1) q
WHERE search @@ q AND ($2 = '' OR room = $2) AND ($3::bigint = 0 OR id < $3)
ORDER BY ts_rank(search, q) DESC, id DESC LIMIT $4`,

	LockPerson:       `SELECT pg_advisory_xact_lock(hashtextextended('taskloom.person:' || $1, 0))`,
	ForgetThrough:    `SELECT COALESCE(MAX(id), 0)::bigint FROM memories`,
	ForgottenThrough: `SELECT through_id FROM forgotten_people WHERE person = $1`,
	MarkForgotten: `INSERT INTO forgotten_people (person, through_id, forgotten_at) VALUES ($1, $2, now())
ON CONFLICT (person) DO UPDATE
SET through_id = GREATEST(forgotten_people.through_id, excluded.through_id), forgotten_at = excluded.forgotten_at`,
	ForgetMessageIDs: `INSERT INTO forgotten_messages (platform, message_id, forgotten_at)
SELECT platform, message_id, now() FROM memories WHERE platform = $1 AND author_id = $2 AND message_id <> ''
ON CONFLICT DO NOTHING`,
	ForgetMessages:   `DELETE FROM memories WHERE platform = $1 AND author_id = $2 RETURNING id, scope, text`,
	BotMessagesAfter: `SELECT id, scope, text FROM memories WHERE scope = $1 AND id > $2 AND from_bot`,
	DeleteMemories:   `DELETE FROM memories WHERE id = ANY($1) RETURNING id`,
	ForgetReplies:    `DELETE FROM memories WHERE in_reply_to <> 0 AND in_reply_to = ANY($1) RETURNING id`,
	ForgetFacts: `DELETE FROM facts
WHERE about = $1 OR id IN (SELECT fact_id FROM fact_sources WHERE memory_id = ANY($2))`,
	// A key share lock: a Forget's delete of the message waits for the
	// fact's transaction, whose fact it then finds.
	LiveSources:      `SELECT id FROM memories WHERE id = ANY($1) FOR KEY SHARE`,
	InsertFactSource: `INSERT INTO fact_sources (fact_id, memory_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,

	MoveMessages: `UPDATE memories SET room = $2, scope = $3 WHERE room = $1`,
	DropKnownFacts: `DELETE FROM facts WHERE room = $1 AND EXISTS (
    SELECT 1 FROM facts known WHERE known.scope = $2 AND known.about = facts.about AND known.text = facts.text AND known.id <> facts.id)`,
	MoveFacts:     `UPDATE facts SET room = $2, scope = $3 WHERE room = $1`,
	MovePassages:  `UPDATE passages SET scope = $2 WHERE document_id IN (SELECT id FROM documents WHERE room = $1)`,
	MoveDocuments: `UPDATE documents SET room = $2, scope = $3 WHERE room = $1`,

	SaveEmbedding: map[string]string{
		domain.RecallFact:    `UPDATE facts SET embedding = $2 WHERE id = $1 AND embedding IS NULL`,
		domain.RecallPassage: `UPDATE passages SET embedding = $2 WHERE id = $1 AND embedding IS NULL`,
	},
	Embeddings: map[string]string{
		domain.RecallFact:    `SELECT id, embedding FROM facts WHERE id = ANY($1) AND embedding IS NOT NULL`,
		domain.RecallPassage: `SELECT id, embedding FROM passages WHERE id = ANY($1) AND embedding IS NOT NULL`,
	},
	Limit: recordSQL.Limit,
	List:  func(ids []int64) any { return ids },
	Time:  timeArg,
}

// frequencies counts, for each term of $1, the rows of table matching it,
// up to $2.
func frequencies(table string) string {
	return `SELECT t, (SELECT count(*) FROM (SELECT 1 FROM ` + table + `
WHERE search @@ to_tsquery('english', quote_literal(t)) LIMIT $2) AS x)
FROM unnest($1::text[]) AS t`
}

// recallStatements makes a Recall statement's two forms from q, whose
// %[1]s is the match and %[2]s the order of its candidates: newest first,
// and ts_rank computed for them only, in the outer query. (Its plan is
// generic, made once whatever the words, so each form says how to read;
// and the query is parsed once, in FROM, not once a row.)
// With uncommon words, few rows match: the GIN index finds them all and
// the newest are sorted out ("id + 0" keeps the planner off the primary
// key's order, which would test row after row). With common words only,
// most rows match: the primary key read newest first finds the candidates
// at once ("IS TRUE" keeps the planner off the GIN index, which would
// read every row that matches).
func recallStatements(q string) sqlstore.RecallStatements {
	const match = "search @@ q"
	return sqlstore.RecallStatements{
		Selective: fmt.Sprintf(q, match, "id + 0 DESC"),
		Common:    fmt.Sprintf(q, "("+match+") IS TRUE", "id DESC"),
	}
}
