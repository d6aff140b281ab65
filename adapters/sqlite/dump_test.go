package sqlite

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
	tables, err := dumpDialect{s}.Tables(t.Context(), handles{s.read, s.write})
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
