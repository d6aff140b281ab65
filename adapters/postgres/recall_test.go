package postgres

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/adapters/storetest"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
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

// TestRecallFromAnotherReplica: a replica that found a room with nothing
// to recall does not look again for a while (absentFor), so a message
// stored there through another replica is recalled by it that much later
// at most — and then found.
func TestRecallFromAnotherReplica(t *testing.T) {
	ctx := t.Context()
	url := testkit.PostgresURL(t)
	a, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a.SetClock(clk.Now)
	q := domain.RecallQuery{Text: "where is the walrus", Room: "discord:9", Limit: 10}
	recall := func() []domain.Recollection {
		t.Helper()
		got, err := a.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := recall(); len(got) != 0 {
		t.Fatalf("in an empty room: %v", got)
	}
	if _, _, err := b.SaveMemory(ctx, domain.Memory{Platform: "discord", MessageID: "m1", Room: "discord:9",
		AuthorID: "u1", AuthorName: "Ann", Text: "the walrus is in the shed", CreatedAt: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if got := recall(); len(got) != 0 {
		t.Logf("found within the time the room is taken to be empty (allowed): %v", got)
	}
	clk.Advance(time.Second)
	if got := recall(); len(got) != 1 || got[0].Kind != domain.RecallMessage {
		t.Fatalf("2 s after another replica stored it: %v; want the message", got)
	}
}

// TestRecallInAnEmptyRoomSendsNothing: a task's prompt recalls every
// iteration; in a room with nothing to recall — no message, fact or
// document of its own or of every room, though another room's hold its
// words — recall reads once and then sends nothing for a while.
func TestRecallInAnEmptyRoomSendsNothing(t *testing.T) {
	ctx := t.Context()
	s, rec := tracedStore(t)
	if _, _, err := s.SaveMemory(ctx, domain.Memory{Platform: "discord", MessageID: "m1", Room: "discord:9",
		AuthorID: "u1", AuthorName: "Ann", Text: "keep the notes of entry 7", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveFacts(ctx, []domain.Fact{{Room: "discord:9", Text: "Ann keeps notes", CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddDocument(ctx, domain.Document{Title: "notes", Room: "discord:9", CreatedAt: time.Now()}, "Keep notes of every entry."); err != nil {
		t.Fatal(err)
	}
	q := domain.RecallQuery{Text: "keep notes 12 entry 7 still going", Room: "console", Limit: 30}
	for i := range 3 {
		rec.take()
		got, err := s.Recall(ctx, q)
		if err != nil || len(got) != 0 {
			t.Fatalf("recall %d = %v, %v; want nothing", i+1, got, err)
		}
		if stmts, _ := rec.take(); i > 0 && len(stmts) != 0 {
			t.Errorf("recall %d in an empty room sent %q; want nothing", i+1, stmts)
		}
	}
}
