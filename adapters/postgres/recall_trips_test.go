package postgres

import (
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
)

// TestRecallOfAbsentWords: recalling words that are in no row counts them
// and reads nothing more — whether there is knowledge to recall at all,
// then the count, as a task's prompt recalls knowledge every iteration,
// mostly words none has — and recalling them again soon after reads
// nothing at all (sqlstore's absentFor), while a word that is in a
// passage this store added is found the first time it is asked for.
func TestRecallOfAbsentWords(t *testing.T) {
	ctx := t.Context()
	s, rec := tracedStore(t)
	if _, err := s.AddDocument(ctx, domain.Document{Title: "Tea"}, "Green tea is brewed cool."); err != nil {
		t.Fatal(err)
	}
	q := domain.RecallQuery{Text: "zebra quartz lantern", Kinds: []string{domain.RecallPassage}}
	for i, want := range []int{2, 0} {
		rec.take()
		got, err := s.Recall(ctx, q)
		if err != nil || len(got) != 0 {
			t.Fatalf("recall %d = %v, %v; want nothing", i+1, got, err)
		}
		stmts, trips := rec.take()
		if len(stmts) != want || trips != want || (want == 2 && !strings.Contains(stmts[1], "count(*)")) {
			t.Errorf("recall %d of absent words: %d statements in %d round trips, want %d (whether any document, the count): %.300q", i+1, len(stmts), trips, want, stmts)
		}
	}
	if _, err := s.AddDocument(ctx, domain.Document{Title: "Lamps"}, "The brass lantern hangs by the door."); err != nil {
		t.Fatal(err)
	}
	got, err := s.Recall(ctx, q)
	if err != nil || len(got) != 1 || !strings.Contains(got[0].Text, "lantern") {
		t.Fatalf("recall after the document = %v, %v; want its passage", got, err)
	}
}
