package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// iterateFiles claims task n as owner and commits an iteration that makes
// changes to its files, returning the error of the commit.
func iterateFiles(t *testing.T, s domain.Store, n int64, owner string, now time.Time, changes ...domain.FileChange) error {
	t.Helper()
	c := claim(t, s, owner, now, 5*time.Minute)
	if c.Number != n {
		t.Fatalf("claimed #%d, want #%d", c.Number, n)
	}
	o := outcome(c, now.Add(time.Second), c.Progress+10, domain.VerdictContinue)
	o.Files = changes
	_, err := s.UpdateTask(t.Context(), n, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
	return err
}

// release gives back the lease a refused commit left on task n.
func release(t *testing.T, s domain.Store, n int64, now time.Time) {
	t.Helper()
	update(t, s, n, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Released(cur, cur.LeaseOwner, cur.Fence, now)
	})
}

func write(path string, data string) domain.FileChange {
	return domain.FileChange{Path: path, Data: []byte(data)}
}

func remove(path string) domain.FileChange { return domain.FileChange{Path: path, Delete: true} }

// files lists task n's files as path → content, reading each back.
func files(t *testing.T, s domain.Store, n int64) map[string]string {
	t.Helper()
	list, err := s.TaskFiles(t.Context(), n)
	if err != nil {
		t.Fatalf("TaskFiles(#%d): %v", n, err)
	}
	out := map[string]string{}
	for _, f := range list {
		got, data, err := s.ReadTaskFile(t.Context(), n, f.Path)
		if err != nil {
			t.Fatalf("ReadTaskFile(#%d, %s): %v", n, f.Path, err)
		}
		if got != f {
			t.Errorf("ReadTaskFile(#%d, %s) describes %+v; the listing says %+v", n, f.Path, got, f)
		}
		if f.Size != int64(len(data)) || f.SHA256 != domain.FileSum(data) {
			t.Errorf("%s of #%d: size %d, sha256 %s; its %d bytes have %s", f.Path, n, f.Size, f.SHA256, len(data), domain.FileSum(data))
		}
		out[f.Path] = string(data)
	}
	return out
}

func sameFiles(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: files %v, want %v", what, keys(got), keys(want))
		return
	}
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			t.Errorf("%s: %s = %q (there: %v), want %q", what, p, clipText(g), ok, clipText(w))
		}
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("… %d in all", len(out)))
	}
	return out
}

func clipText(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s… (%d bytes)", s[:40], len(s))
	}
	return s
}

// testFilesWithMutation: an iteration's file changes are written with its
// commit, read back whole, listed without their data in path order, and
// recorded in its event; a later iteration replaces and deletes.
func testFilesWithMutation(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Write the plan"))
	other := create(t, s, newTask("Someone else's task"))
	update(t, s, other.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Canceled(cur, "u1", "", t0) })
	binary := "\x00\xff\xfe binary \x00"
	if err := iterateFiles(t, s, task.Number, "w1", at(time.Minute),
		write("notes/plan.md", "# Plan\n"), write("a.txt", "a"), write("notes/z/deep.txt", "deep"),
		write("bin.dat", binary), write("empty", "")); err != nil {
		t.Fatalf("commit with files: %v", err)
	}
	sameFiles(t, "after the first iteration", files(t, s, task.Number), map[string]string{
		"notes/plan.md": "# Plan\n", "a.txt": "a", "notes/z/deep.txt": "deep", "bin.dat": binary, "empty": ""})
	list, err := s.TaskFiles(t.Context(), task.Number)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range list {
		paths = append(paths, f.Path)
		if !f.UpdatedAt.Equal(at(time.Minute + time.Second)) {
			t.Errorf("%s updated at %v, want the commit's time %v", f.Path, f.UpdatedAt, at(time.Minute+time.Second))
		}
	}
	if want := []string{"a.txt", "bin.dat", "empty", "notes/plan.md", "notes/z/deep.txt"}; !slices.Equal(paths, want) {
		t.Errorf("listed %v, want %v (by path, a folder's files together)", paths, want)
	}
	if got := files(t, s, other.Number); len(got) != 0 {
		t.Errorf("another task has files %v", keys(got))
	}
	evs := events(t, s, task.Number)
	detail := payload(t, evs[len(evs)-1]).Detail
	if fs, _ := detail["files"].([]any); len(fs) != 5 {
		t.Errorf("the iterated event's detail lists files %v, want the 5 written", detail["files"])
	}

	if err := iterateFiles(t, s, task.Number, "w1", at(2*time.Minute),
		write("notes/plan.md", "# Plan\n\n1. Ship it\n"), remove("a.txt"), remove("never-there")); err != nil {
		t.Fatalf("commit that replaces and deletes: %v", err)
	}
	sameFiles(t, "after the second iteration", files(t, s, task.Number), map[string]string{
		"notes/plan.md": "# Plan\n\n1. Ship it\n", "notes/z/deep.txt": "deep", "bin.dat": binary, "empty": ""})
	plan, _, err := s.ReadTaskFile(t.Context(), task.Number, "./notes//plan.md")
	if err != nil || !plan.UpdatedAt.Equal(at(2*time.Minute+time.Second)) {
		t.Errorf("the replaced file: %+v, %v; want it updated at the second commit", plan, err)
	}
	check(t, s, task.Number)
}

// testFileReads: a file not there is ErrNoFile, a path no file can have
// ErrInvalid.
func testFileReads(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Read files"))
	if err := iterateFiles(t, s, task.Number, "w1", at(time.Minute), write("a.txt", "a")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"b.txt", "a.txt/b", "A.TXT"} {
		if _, _, err := s.ReadTaskFile(t.Context(), task.Number, p); !errors.Is(err, domain.ErrNoFile) {
			t.Errorf("ReadTaskFile(%q) = %v; want ErrNoFile", p, err)
		}
	}
	if _, _, err := s.ReadTaskFile(t.Context(), task.Number+1, "a.txt"); !errors.Is(err, domain.ErrNoFile) {
		t.Errorf("ReadTaskFile of a task that does not exist = %v; want ErrNoFile", err)
	}
	for _, p := range []string{"", "../a.txt", "/etc/passwd", "."} {
		if _, _, err := s.ReadTaskFile(t.Context(), task.Number, p); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("ReadTaskFile(%q) = %v; want ErrInvalid", p, err)
		}
	}
	if list, err := s.TaskFiles(t.Context(), task.Number+1); err != nil || len(list) != 0 {
		t.Errorf("TaskFiles of a task that does not exist = %v, %v; want none", list, err)
	}
}

// testFileLimits: a change past a limit of docs/deploy.md, or with a path
// that is not clean, is refused with the whole mutation; the limits
// themselves are allowed.
func testFileLimits(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Fill the disk"))
	mib := string(bytes.Repeat([]byte("x"), domain.MaxFileBytes))
	many := func(n int, prefix string) []domain.FileChange {
		out := make([]domain.FileChange, n)
		for i := range out {
			out[i] = write(fmt.Sprintf("%s/%04d.txt", prefix, i), "x")
		}
		return out
	}
	refused := []struct {
		name    string
		changes []domain.FileChange
		want    error
	}{
		{"a file over 1 MiB", []domain.FileChange{write("big.bin", mib+"x")}, domain.ErrLimit},
		{"more than 1,000 files", many(domain.MaxTaskFiles+1, "many"), domain.ErrLimit},
		{"a path outside", []domain.FileChange{write("../escape.txt", "x")}, domain.ErrInvalid},
		{"a path not clean", []domain.FileChange{write("notes/../a.txt", "x")}, domain.ErrInvalid},
		{"a file inside a file", []domain.FileChange{write("a", "x"), write("a/b", "x")}, domain.ErrInvalid},
	}
	for i, r := range refused {
		before := get(t, s, task.Number)
		err := iterateFiles(t, s, task.Number, "w1", at(time.Duration(i+1)*time.Minute), r.changes...)
		if !errors.Is(err, r.want) {
			t.Errorf("%s: commit = %v; want %v", r.name, err, r.want)
		}
		if got := files(t, s, task.Number); len(got) != 0 {
			t.Errorf("%s: files %v were written", r.name, keys(got))
		}
		after := get(t, s, task.Number)
		if after.Iteration != before.Iteration || after.EventSeq != before.EventSeq+1 { // +1: the claim
			t.Errorf("%s: the refused commit changed the task: iteration %d → %d, event %d → %d", r.name, before.Iteration, after.Iteration, before.EventSeq, after.EventSeq)
		}
		release(t, s, task.Number, at(time.Duration(i+1)*time.Minute+time.Second))
	}

	// At the limits: 1,000 files, then 20 files of 1 MiB each (20 MiB in
	// all) in place of 20 of them; one byte more is refused.
	now := at(time.Hour)
	if err := iterateFiles(t, s, task.Number, "w1", now, many(domain.MaxTaskFiles, "many")...); err != nil {
		t.Fatalf("1,000 files: %v", err)
	}
	var full []domain.FileChange
	for i := range domain.MaxTaskFileBytes / domain.MaxFileBytes {
		full = append(full, write(fmt.Sprintf("many/%04d.txt", i), mib))
	}
	// The other 980 files hold a byte each: make room for them.
	full[len(full)-1].Data = full[len(full)-1].Data[:domain.MaxFileBytes-(domain.MaxTaskFiles-len(full))]
	if err := iterateFiles(t, s, task.Number, "w1", now.Add(time.Minute), full...); err != nil {
		t.Fatalf("exactly 20 MiB: %v", err)
	}
	if err := iterateFiles(t, s, task.Number, "w1", now.Add(2*time.Minute), write("many/0999.txt", "xx")); !errors.Is(err, domain.ErrLimit) {
		t.Errorf("one byte over 20 MiB: %v; want ErrLimit", err)
	}
	release(t, s, task.Number, now.Add(2*time.Minute+time.Second))
	if err := iterateFiles(t, s, task.Number, "w1", now.Add(3*time.Minute), remove("many/0999.txt"), write("one-more.txt", "x")); err != nil {
		t.Errorf("a file deleted makes room for another: %v", err)
	}
	list, err := s.TaskFiles(t.Context(), task.Number)
	if err != nil || len(list) != domain.MaxTaskFiles {
		t.Errorf("the task has %d files, %v; want %d", len(list), err, domain.MaxTaskFiles)
	}
	check(t, s, task.Number)
}

// testFilesNotWrittenWithoutTheLease: a worker whose lease was lost
// writes no file; a mutation refused for any reason writes none.
func testFilesNotWrittenWithoutTheLease(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Race for the lease"))
	first := claim(t, s, "w1", at(time.Minute), time.Minute)
	late := outcome(first, at(3*time.Minute), 30, domain.VerdictContinue)
	late.Files = []domain.FileChange{write("notes/plan.md", "the late worker's plan")}
	// The lease expired; w2 takes the task and commits.
	second := claim(t, s, "w2", at(2*time.Minute+time.Second), time.Minute)
	if second.Number != task.Number {
		t.Fatalf("w2 claimed #%d", second.Number)
	}
	_, err := s.UpdateTask(t.Context(), task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, late) })
	if !errors.Is(err, domain.ErrStaleFence) {
		t.Fatalf("the late commit = %v; want ErrStaleFence", err)
	}
	if got := files(t, s, task.Number); len(got) != 0 {
		t.Fatalf("the worker that lost its lease wrote %v", keys(got))
	}
	o := outcome(second, at(2*time.Minute+2*time.Second), 20, domain.VerdictDone)
	o.Files = []domain.FileChange{write("notes/plan.md", "w2's plan")}
	update(t, s, task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
	sameFiles(t, "after the lease holder's commit", files(t, s, task.Number), map[string]string{"notes/plan.md": "w2's plan"})

	// An ended task takes no more files, and a MutateFunc that fails
	// writes none of what it built.
	ended := get(t, s, task.Number)
	_, err = s.UpdateTask(t.Context(), task.Number, func(cur domain.Task) (domain.Mutation, error) {
		m, err := domain.Change(cur, cur, domain.EventReleased, "w3", at(time.Hour), nil)
		m.Files = []domain.FileChange{write("after-the-end.txt", "x")}
		return m, err
	})
	if !errors.Is(err, domain.ErrTerminal) {
		t.Errorf("files for an ended task: %v; want ErrTerminal", err)
	}
	boom := errors.New("boom")
	other := create(t, s, newTask("Fails"))
	c := claim(t, s, "w4", at(time.Hour), time.Minute)
	if c.Number != other.Number {
		t.Fatalf("claimed #%d", c.Number)
	}
	_, err = s.UpdateTask(t.Context(), other.Number, func(cur domain.Task) (domain.Mutation, error) {
		o := outcome(c, at(time.Hour+time.Second), 10, domain.VerdictContinue)
		o.Files = []domain.FileChange{write("x.txt", "x")}
		if _, err := domain.Iterated(cur, o); err != nil {
			return domain.Mutation{}, err
		}
		return domain.Mutation{}, boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("UpdateTask = %v; want the MutateFunc's error", err)
	}
	sameFiles(t, "the ended task", files(t, s, task.Number), map[string]string{"notes/plan.md": "w2's plan"})
	if got := files(t, s, other.Number); len(got) != 0 {
		t.Errorf("a failed MutateFunc wrote %v", keys(got))
	}
	if got := get(t, s, task.Number); got.EventSeq != ended.EventSeq {
		t.Errorf("the refused change wrote an event")
	}
	check(t, s, task.Number, other.Number)
}

// testFilesCopiedToRetry: a task that continues another starts with a
// copy of its files, made as it is created; the original keeps them.
func testFilesCopiedToRetry(t *testing.T, s domain.Store) {
	old := create(t, s, newTask("Build auth"))
	if err := iterateFiles(t, s, old.Number, "w1", at(time.Minute), write("notes/plan.md", "plan"), write("src/auth.go", "package auth")); err != nil {
		t.Fatal(err)
	}
	update(t, s, old.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Canceled(cur, "u1", "", at(2*time.Minute))
	})
	want := files(t, s, old.Number)
	in := newTask(old.Goal)
	in.ContinuesNumber = old.Number
	in.Now = at(time.Hour)
	retry := create(t, s, in)
	sameFiles(t, "the retry", files(t, s, retry.Number), want)
	sameFiles(t, "the original", files(t, s, old.Number), want)
	a, _ := s.TaskFiles(t.Context(), old.Number)
	b, _ := s.TaskFiles(t.Context(), retry.Number)
	if !slices.Equal(a, b) {
		t.Errorf("the copies are described as %+v; the originals as %+v", b, a)
	}
	// Each has its own from now on.
	if err := iterateFiles(t, s, retry.Number, "w2", at(2*time.Hour), write("notes/plan.md", "a new plan")); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "the original after the retry changed its copy", files(t, s, old.Number), want)

	fresh := newTask("Nothing to copy")
	fresh.ContinuesNumber = create(t, s, newTask("No files")).Number
	if got := files(t, s, create(t, s, fresh).Number); len(got) != 0 {
		t.Errorf("a retry of a task without files has %v", keys(got))
	}
	check(t, s, old.Number, retry.Number)
}

// testImportFiles: an import adds the files a task does not have yet,
// within the limits, and adds nothing when run again.
func testImportFiles(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Imported"))
	if err := iterateFiles(t, s, task.Number, "w1", at(time.Minute), write("notes/plan.md", "newer plan")); err != nil {
		t.Fatal(err)
	}
	in := []domain.FileChange{
		write("notes/plan.md", "old plan"),
		write("src/main.go", "package main"),
		write("too-big.bin", string(bytes.Repeat([]byte("x"), domain.MaxFileBytes+1))),
		write("notes/plan.md/inside", "x"),
		write("../escape", "x"),
		write("empty", ""),
	}
	got, err := s.ImportTaskFiles(t.Context(), task.Number, in, at(time.Hour))
	if err != nil {
		t.Fatalf("ImportTaskFiles: %v", err)
	}
	if want := []string{"src/main.go", "empty"}; !slices.Equal(got, want) {
		t.Errorf("imported %v, want %v", got, want)
	}
	sameFiles(t, "after the import", files(t, s, task.Number), map[string]string{
		"notes/plan.md": "newer plan", "src/main.go": "package main", "empty": ""})
	if f, _, err := s.ReadTaskFile(t.Context(), task.Number, "src/main.go"); err != nil || !f.UpdatedAt.Equal(at(time.Hour)) {
		t.Errorf("the imported file: %+v, %v; want it updated at the import", f, err)
	}
	if again, err := s.ImportTaskFiles(t.Context(), task.Number, in, at(2*time.Hour)); err != nil || len(again) != 0 {
		t.Errorf("the import run again wrote %v, %v; want nothing", again, err)
	}
	if _, err := s.ImportTaskFiles(t.Context(), task.Number+100, in, at(time.Hour)); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("an import into a task that does not exist: %v; want ErrNotFound", err)
	}
	check(t, s, task.Number)
}
