package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

var _ domain.Dumper = (*Store)(nil)

// dumpDialect is PostgreSQL's part of export and import.
type dumpDialect struct{ s *Store }

func (dumpDialect) Name() string { return "postgres" }

func (d dumpDialect) Snapshot(ctx context.Context, fn func(sqlstore.ReadDB) error) error {
	tx, err := d.s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("begin snapshot: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(txDB{tx}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (d dumpDialect) InTx(ctx context.Context, fn func(sqlstore.DB) error) error {
	return poolDB{d.s.pool}.InTx(ctx, fn)
}

func (dumpDialect) Tables(ctx context.Context, db sqlstore.ReadDB) ([]string, error) {
	return sqlstore.QueryAll(ctx, db, `SELECT table_name FROM information_schema.tables
WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`, nil, scanString)
}

func (dumpDialect) Columns(ctx context.Context, db sqlstore.ReadDB, table string) ([]string, error) {
	return sqlstore.QueryAll(ctx, db, `SELECT column_name FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER' ORDER BY ordinal_position`, []any{table}, scanString)
}

func scanString(r sqlstore.Row) (string, error) {
	var s string
	err := r.Scan(&s)
	return s, err
}

// Select reads JSON as its text: pgx would decode jsonb into maps, and
// lose the numbers' exact form.
func (dumpDialect) Select(column string, k sqlstore.ColumnKind) string {
	if k == sqlstore.KindJSON {
		return sqlstore.Quote(column) + "::text"
	}
	return sqlstore.Quote(column)
}

func (dumpDialect) OrderText(column string) string { return sqlstore.Quote(column) + ` COLLATE "C"` }

func (dumpDialect) Out(k sqlstore.ColumnKind, v any) (any, error) {
	switch v := v.(type) {
	case nil, time.Time, bool, string, []byte, int64, float64:
		return v, nil
	case int32:
		return int64(v), nil
	case int16:
		return int64(v), nil
	case float32:
		return float64(v), nil
	}
	return nil, fmt.Errorf("unexpected %T", v)
}

// In passes every kind as pgx encodes it for its column: a time.Time for
// timestamptz, a bool, JSON text for jsonb, bytes for bytea.
func (dumpDialect) In(_ sqlstore.ColumnKind, v any) any { return v }

func (dumpDialect) Insert(table string, columns []string, identity string) string {
	quoted := make([]string, len(columns))
	params := make([]string, len(columns))
	for i, c := range columns {
		quoted[i], params[i] = sqlstore.Quote(c), fmt.Sprintf("$%d", i+1)
	}
	q := "INSERT INTO " + sqlstore.Quote(table) + " (" + strings.Join(quoted, ", ") + ")"
	if identity != "" {
		q += " OVERRIDING SYSTEM VALUE"
	}
	return q + " VALUES (" + strings.Join(params, ", ") + ")"
}

func (dumpDialect) Sequence(ctx context.Context, db sqlstore.ReadDB, table, identity string) (int64, error) {
	var n int64
	err := db.QueryRow(ctx, `SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence($1, $2)::regclass), 0)`, table, identity).Scan(&n)
	return n, err
}

func (dumpDialect) Resume(ctx context.Context, db sqlstore.DB, table, identity string, last int64) error {
	var n int64
	return db.QueryRow(ctx, `SELECT setval(pg_get_serial_sequence($1, $2), $3)`, table, identity, last).Scan(&n)
}
