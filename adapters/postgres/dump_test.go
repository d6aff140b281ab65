package postgres

import (
	"testing"

	"github.com/taskloom/taskloom/adapters/sqlstore"
)

// TestDumpHoldsEveryTable: a table added to the schema without a place in
// the dump would be lost by a move to another store.
func TestDumpHoldsEveryTable(t *testing.T) {
	s := open(t)
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	tables, err := dumpDialect{s}.Tables(t.Context(), poolDB{s.pool})
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < len(sqlstore.DumpedTables()) {
		t.Fatalf("Tables = %v: fewer than the dump holds", tables)
	}
	if missing := sqlstore.UndumpedTables(tables); len(missing) > 0 {
		t.Errorf("tables no dump holds: %v (add them to sqlstore's dumpTables, or NotDumped)", missing)
	}
}

// TestDumpKindsAreTheCatalogs: sqlstore.KindOf, which SQLite's export
// relies on to tell a time or a boolean from a number, says of every
// column what PostgreSQL's catalog says of it.
func TestDumpKindsAreTheCatalogs(t *testing.T) {
	s := open(t)
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows, err := s.pool.Query(t.Context(), `SELECT table_name, column_name, data_type FROM information_schema.columns
WHERE table_schema = current_schema() AND is_generated = 'NEVER'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := map[string]sqlstore.ColumnKind{"timestamp with time zone": sqlstore.KindTime, "boolean": sqlstore.KindBool,
		"jsonb": sqlstore.KindJSON, "bytea": sqlstore.KindBytes}
	n := 0
	for rows.Next() {
		var table, column, typ string
		if err := rows.Scan(&table, &column, &typ); err != nil {
			t.Fatal(err)
		}
		n++
		if got := sqlstore.KindOf(table, column); got != want[typ] {
			t.Errorf("%s.%s is %s, but KindOf says kind %d", table, column, typ, got)
		}
	}
	if n < 100 {
		t.Fatalf("read %d columns: fewer than the schema has", n)
	}
}
