package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

var _ domain.Dumper = (*Store)(nil)

// dumpDialect is SQLite's part of export and import: times are unix
// microseconds, booleans 0 and 1, JSON text.
type dumpDialect struct{ s *Store }

func (dumpDialect) Name() string { return "sqlite" }

func (d dumpDialect) Snapshot(ctx context.Context, fn func(sqlstore.ReadDB) error) error {
	tx, err := d.s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin snapshot: %w", err)
	}
	defer tx.Rollback()
	if err := fn(txDB{tx}); err != nil {
		return err
	}
	return tx.Commit()
}

func (d dumpDialect) InTx(ctx context.Context, fn func(sqlstore.DB) error) error {
	return handles{d.s.read, d.s.write}.InTx(ctx, fn)
}

// Tables leaves out SQLite's own tables and the full-text indexes, which
// triggers fill from the tables they index.
func (dumpDialect) Tables(ctx context.Context, db sqlstore.ReadDB) ([]string, error) {
	return sqlstore.QueryAll(ctx, db, `SELECT name FROM sqlite_master
WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name NOT LIKE '%\_fts' ESCAPE '\' AND name NOT LIKE '%\_fts\_%' ESCAPE '\'
ORDER BY name`, nil, scanString)
}

func (dumpDialect) Columns(ctx context.Context, db sqlstore.ReadDB, table string) ([]string, error) {
	return sqlstore.QueryAll(ctx, db, `SELECT name FROM pragma_table_xinfo(?) WHERE hidden = 0 ORDER BY cid`, []any{table}, scanString)
}

func scanString(r sqlstore.Row) (string, error) {
	var s string
	err := r.Scan(&s)
	return s, err
}

func (dumpDialect) Select(column string, _ sqlstore.ColumnKind) string { return sqlstore.Quote(column) }

// OrderText: SQLite compares text by its bytes unless told otherwise.
func (dumpDialect) OrderText(column string) string { return sqlstore.Quote(column) }

func (dumpDialect) Out(k sqlstore.ColumnKind, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch k {
	case sqlstore.KindTime:
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("a time stored as %T", v)
		}
		return time.UnixMicro(n).UTC(), nil
	case sqlstore.KindBool:
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("a boolean stored as %T", v)
		}
		return n != 0, nil
	case sqlstore.KindJSON:
		switch v := v.(type) {
		case string:
			return v, nil
		case []byte:
			return string(v), nil
		}
		return nil, fmt.Errorf("JSON stored as %T", v)
	case sqlstore.KindBytes:
		switch v := v.(type) {
		case []byte:
			return v, nil
		case string:
			return []byte(v), nil
		}
		return nil, fmt.Errorf("bytes stored as %T", v)
	}
	return v, nil
}

func (dumpDialect) In(k sqlstore.ColumnKind, v any) any {
	switch k {
	case sqlstore.KindTime:
		return v.(time.Time).UnixMicro()
	case sqlstore.KindBool:
		if v.(bool) {
			return int64(1)
		}
		return int64(0)
	}
	return v
}

func (dumpDialect) Insert(table string, columns []string, _ string) string {
	quoted := make([]string, len(columns))
	for i, c := range columns {
		quoted[i] = sqlstore.Quote(c)
	}
	return "INSERT INTO " + sqlstore.Quote(table) + " (" + strings.Join(quoted, ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
}

func (dumpDialect) Sequence(ctx context.Context, db sqlstore.ReadDB, table, _ string) (int64, error) {
	var n int64
	err := db.QueryRow(ctx, `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0)`, table).Scan(&n)
	return n, err
}

// Resume sets the table's entry of sqlite_sequence, which an
// AUTOINCREMENT table goes on after (another table ignores it).
func (dumpDialect) Resume(ctx context.Context, db sqlstore.DB, table, _ string, last int64) error {
	n, err := db.Exec(ctx, `UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?`, last, table)
	if err == nil && n == 0 {
		_, err = db.Exec(ctx, `INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)`, table, last)
	}
	return err
}
