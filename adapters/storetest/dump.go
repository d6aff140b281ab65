package storetest

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// fillEveryTable writes at least one row into every table a store keeps,
// through the store, with the values that travel worst: non-ASCII text,
// JSON, bytes, times to the microsecond, NULLs, booleans both ways, a
// subtask, a task whose number was handed out and is gone.
func fillEveryTable(t *testing.T, s domain.Store) {
	t.Helper()
	ctx := t.Context()
	parent := create(t, s, newTask("Build the payroll export — ünïcödé, \"quotes\" and <tags>"))
	child := newTask("A subtask")
	child.ParentNumber = parent.Number
	create(t, s, child)
	third := create(t, s, newTask("Cancelled later"))
	claimed, err := s.ClaimTask(ctx, domain.Claim{Owner: "w", Now: at(time.Second + 123*time.Microsecond), Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateTask(ctx, claimed.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: cur.Fence, Now: at(2 * time.Second), Progress: 40,
			Step: domain.Step{Action: "write_file", Params: []byte(`{"path":"a.txt","content":"x > y && z"}`), Result: "wrote", Success: true}})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportTaskFiles(ctx, parent.Number, []domain.FileChange{
		{Path: "notes/plan.md", Data: []byte("# Plan\n")}, {Path: "bin/blob", Data: []byte{0, 1, 2, 0xff}},
	}, at(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateTask(ctx, third.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Canceled(cur, "u1", "not needed", at(4*time.Second))
	}); err != nil {
		t.Fatal(err)
	}
	createSchedule(t, s, newSchedule("@every 1h", "Check the nightly build"))
	m := remember(t, s, domain.Memory{Platform: "discord", MessageID: "m-1", Room: "room-1", AuthorID: "u1", Text: "the target is ZEPHYR-77 ✓", CreatedAt: at(time.Minute)})
	bot := remember(t, s, domain.Memory{Platform: "discord", MessageID: "m-2", Room: "room-1", AuthorID: "bot", FromBot: true, Text: "noted", CreatedAt: at(2 * time.Minute)})
	facts := learn(t, s, domain.Fact{Room: "room-1", About: "discord:u1", Text: "u1 likes tea", Sources: []int64{m.ID, bot.ID}})
	addDoc(t, s, "Handbook", "", "The deploy freeze starts on Friday.\n\nOffice plants are watered on Mondays.")
	if err := s.SaveEmbeddings(ctx, domain.RecallFact, map[int64][]float32{facts[0].ID: {0.25, -1.5, 3e-8}}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, "room-a", domain.NotifyProgress, at(5*time.Second))
	enqueue(t, s, "room-b", domain.NotifyProgress, at(6*time.Second))
	_, ids := claimRoom(t, s, domain.RoomClaim{Owner: "sender-1", Now: at(7 * time.Second), Lease: time.Minute})
	if err := s.MarkCardSent(ctx, "sender-1", ids, []domain.RoomProgress{{Room: "room-a", TaskNumber: 1, Progress: 30}},
		domain.TaskCard{Room: "room-a", TaskNumber: 1, MessageID: "m-9", UpdatedAt: at(8 * time.Second)}); err != nil {
		t.Fatal(err)
	}
}

func remember(t *testing.T, s domain.Store, m domain.Memory) domain.Memory {
	t.Helper()
	got, _, err := s.SaveMemory(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// testDumpRoundTrip: a store exported and imported into an empty one
// exports the same again, line for line but for the header's time; the
// next task number follows the highest handed out; an import into a store
// that holds anything, a dump cut short, one of a newer format and one
// with a column this Taskloom does not know each load nothing and say why.
func testDumpRoundTrip(t *testing.T, s domain.Store, newEmpty func(*testing.T) domain.Store) {
	empty := newEmpty(t)
	from, ok := s.(domain.Dumper)
	if !ok {
		t.Fatalf("%T is not a domain.Dumper", s)
	}
	to := empty.(domain.Dumper)
	fillEveryTable(t, s)
	var first bytes.Buffer
	h := domain.DumpHeader{Taskloom: "test", Time: at(time.Hour)}
	stats, err := from.Export(t.Context(), &first, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"tasks", "task_events", "task_steps", "task_files", "task_cards", "schedules",
		"notifications", "room_progress", "memories", "facts", "documents", "passages"} {
		if stats.Tables[table] == 0 {
			t.Errorf("the export holds no row of %s: %v", table, stats.Tables)
		}
	}
	if err := empty.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := to.Import(t.Context(), bytes.NewReader(first.Bytes()), nil); err != nil {
		t.Fatalf("Import: %v", err)
	}
	var second bytes.Buffer
	if _, err := to.Export(t.Context(), &second, h, nil); err != nil {
		t.Fatal(err)
	}
	a, b := strings.Split(first.String(), "\n"), strings.Split(second.String(), "\n")
	if len(a) != len(b) {
		t.Fatalf("the second export has %d lines, the first %d", len(b), len(a))
	}
	for i := 1; i < len(a); i++ { // the header says which store
		if a[i] != b[i] {
			t.Fatalf("line %d differs after a round trip:\n%s\n%s", i+1, a[i], b[i])
		}
	}
	next := create(t, empty, newTask("After the import"))
	if want := stats.Sequences["tasks"] + 1; next.Number != want {
		t.Errorf("the first task after the import is #%d, want #%d", next.Number, want)
	}

	// Each refusal loads nothing: the store imported into is not empty
	// (it was just filled), and a bad dump is refused before it could be.
	if _, _, err := to.Import(t.Context(), bytes.NewReader(first.Bytes()), nil); !errors.Is(err, domain.ErrNotEmpty) {
		t.Errorf("Import into a store that holds tasks = %v; want ErrNotEmpty", err)
	}
	lines := strings.SplitAfter(first.String(), "\n")
	for _, bad := range []struct{ name, dump, want string }{
		{"cut short", strings.Join(lines[:len(lines)-3], ""), "cut short"},
		{"cut mid-line", first.String()[:first.Len()-10], "cut short"},
		{"newer format", strings.Replace(first.String(), `"taskloom_dump":1`, `"taskloom_dump":99`, 1), "format 99"},
		{"unknown column", strings.Replace(first.String(), `"row":{`, `"row":{"from_the_future":1,`, 1), "from_the_future"},
		{"unknown table", strings.Replace(first.String(), `"table":"schedules"`, `"table":"galaxies"`, 1), "galaxies"},
		{"not a dump", "hello\n", "not the header"},
	} {
		fresh := newEmpty(t)
		if err := fresh.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, _, err := fresh.(domain.Dumper).Import(t.Context(), strings.NewReader(bad.dump), nil)
		if !errors.Is(err, domain.ErrBadDump) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Import of a dump %s = %v; want ErrBadDump saying %q", bad.name, err, bad.want)
		}
		if n, err := fresh.CountTasks(t.Context(), domain.TaskFilter{}); err != nil || n != 0 {
			t.Errorf("Import of a dump %s left %d tasks (%v); want none", bad.name, n, err)
		}
	}
}
