package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/adapters/storetest"
)

// TestRecallBackfill: messages stored before migration 0019 become
// searchable, each in the scope of its room.
func TestRecallBackfill(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	files, err := sqlstore.MigrationFiles(migrations)
	if err != nil {
		t.Fatal(err)
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlCreateMigrations); err != nil {
			return err
		}
		for _, m := range files {
			if m.Version >= 19 {
				break
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, sqlRecordMigration, m.Version); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO memories (platform, message_id, room, author_id, text, created_at)
VALUES ('slack', '1', 'slack:C1:171.1', 'U1', 'the heron nests by the lake', now())`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.Backfilled(t, s)
}
