package domain_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

func TestCleanFilePath(t *testing.T) {
	t.Parallel()
	ok := map[string]string{
		"notes/plan.md":      "notes/plan.md",
		" notes/plan.md ":    "notes/plan.md",
		"./a//b/./c.txt":     "a/b/c.txt",
		"src/../a.txt":       "a.txt",
		"日本/ファイル.txt":        "日本/ファイル.txt",
		"with space/x y.txt": "with space/x y.txt",
		"dir/":               "dir",
		".hidden":            ".hidden",
		"a/..b":              "a/..b",
		"..a":                "..a",
		strings.Repeat("a", domain.MaxFilePathBytes): strings.Repeat("a", domain.MaxFilePathBytes),
	}
	for in, want := range ok {
		if got, err := domain.CleanFilePath(in); err != nil || got != want {
			t.Errorf("CleanFilePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	refused := map[string]string{
		"":            "the path is empty",
		"   ":         "the path is empty",
		"/etc/passwd": "use a relative path",
		"~/x":         "use a relative path",
		"..":          "outside the task's workspace",
		"../x":        "outside the task's workspace",
		"src/../../x": "outside the task's workspace",
		".":           "the workspace itself",
		"a/..":        "the workspace itself",
		"a\x00b":      "not a usable file name",
		"a\nb":        "not a usable file name",
		"bad\xffname": "not a usable file name",
		strings.Repeat("a", domain.MaxFilePathBytes+1): "at most 1024",
	}
	for in, want := range refused {
		got, err := domain.CleanFilePath(in)
		var fe *domain.FileError
		if err == nil || !errors.As(err, &fe) || !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("CleanFilePath(%q) = %q, %v; want an ErrInvalid FileError saying %q", clip(in), got, err, want)
		}
	}
}

func clip(s string) string {
	if len(s) > 30 {
		return s[:30] + "…"
	}
	return s
}

func TestComparePaths(t *testing.T) {
	t.Parallel()
	paths := []string{"b.txt", "a.txt", "a/z.txt", "a/b/c.txt", "a-b", "A"}
	slices.SortFunc(paths, domain.ComparePaths)
	want := []string{"A", "a/b/c.txt", "a/z.txt", "a-b", "a.txt", "b.txt"}
	if !slices.Equal(paths, want) {
		t.Errorf("sorted %v, want %v: a folder's files together, before names that extend it", paths, want)
	}
}

// viewKit is a task whose stored files are those of commit, and a view of
// them for one iteration.
type viewKit struct {
	t     *testing.T
	store domain.Store
	task  domain.Task
	now   time.Time
}

func newViewKit(t *testing.T) *viewKit {
	t.Helper()
	st := teststore.SQLite(t)
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	task, err := st.CreateTask(t.Context(), domain.NewTask{Goal: "files", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return &viewKit{t: t, store: st, task: task, now: now}
}

// commit runs an iteration that commits changes, as the task service does.
func (k *viewKit) commit(changes []domain.FileChange) error {
	k.t.Helper()
	k.now = k.now.Add(time.Minute)
	c, err := k.store.ClaimTask(k.t.Context(), domain.Claim{Owner: "w", Now: k.now, Lease: time.Minute})
	if err != nil {
		k.t.Fatal(err)
	}
	o := domain.Outcome{Owner: "w", Fence: c.Fence, Now: k.now, Step: domain.Step{Action: "write_file", Success: true},
		Progress: c.Progress + 1, Verdict: domain.VerdictContinue, Files: changes}
	_, err = k.store.UpdateTask(k.t.Context(), k.task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
	return err
}

func (k *viewKit) read(v domain.Files, path string) (string, error) {
	k.t.Helper()
	data, err := v.Read(context.Background(), path)
	return string(data), err
}

func TestFileViewBuffersWritesUntilTheCommit(t *testing.T) {
	t.Parallel()
	k := newViewKit(t)
	ctx := context.Background()
	if err := k.commit([]domain.FileChange{{Path: "notes/plan.md", Data: []byte("plan v1")}, {Path: "old.txt", Data: []byte("old")}}); err != nil {
		t.Fatal(err)
	}

	v := domain.NewFileView(k.store, k.task.Number)
	if got, err := k.read(v, "notes/plan.md"); err != nil || got != "plan v1" {
		t.Fatalf("a stored file reads %q, %v", got, err)
	}
	if err := v.Write(ctx, "notes/plan.md", []byte("plan v2")); err != nil {
		t.Fatal(err)
	}
	if err := v.Write(ctx, "./src/main.go", []byte("package main")); err != nil {
		t.Fatal(err)
	}
	if err := v.Delete(ctx, "old.txt"); err != nil {
		t.Fatal(err)
	}
	// Later calls of the same iteration see the writes…
	if got, err := k.read(v, "notes/plan.md"); err != nil || got != "plan v2" {
		t.Errorf("a rewritten file reads %q, %v; want the pending write", got, err)
	}
	if got, err := k.read(v, "src/main.go"); err != nil || got != "package main" {
		t.Errorf("a new file reads %q, %v", got, err)
	}
	if _, err := k.read(v, "old.txt"); !errors.Is(err, domain.ErrNoFile) {
		t.Errorf("a deleted file reads: %v; want ErrNoFile", err)
	}
	list, err := v.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range list {
		paths = append(paths, fmt.Sprintf("%s:%d", f.Path, f.Size))
	}
	if want := []string{"notes/plan.md:7", "src/main.go:12"}; !slices.Equal(paths, want) {
		t.Errorf("List = %v, want %v", paths, want)
	}
	// …and the store none of them.
	stored, err := k.store.TaskFiles(ctx, k.task.Number)
	if err != nil || len(stored) != 2 || stored[0].Path != "notes/plan.md" || stored[1].Path != "old.txt" {
		t.Fatalf("the store has %+v, %v before the commit", stored, err)
	}

	changes := v.Changes()
	var desc []string
	for _, c := range changes {
		desc = append(desc, fmt.Sprintf("%s delete=%v %q", c.Path, c.Delete, c.Data))
	}
	want := []string{`notes/plan.md delete=false "plan v2"`, `old.txt delete=true ""`, `src/main.go delete=false "package main"`}
	if !slices.Equal(desc, want) {
		t.Fatalf("Changes = %q, want %q", desc, want)
	}
	if err := k.commit(changes); err != nil {
		t.Fatal(err)
	}
	next := domain.NewFileView(k.store, k.task.Number)
	if got, err := k.read(next, "notes/plan.md"); err != nil || got != "plan v2" {
		t.Errorf("the next iteration reads %q, %v", got, err)
	}
	if _, err := k.read(next, "old.txt"); !errors.Is(err, domain.ErrNoFile) {
		t.Errorf("the next iteration reads the deleted file: %v", err)
	}
}

func TestFileViewChangesAreNet(t *testing.T) {
	t.Parallel()
	k := newViewKit(t)
	ctx := context.Background()
	if err := k.commit([]domain.FileChange{{Path: "kept.txt", Data: []byte("same")}}); err != nil {
		t.Fatal(err)
	}
	v := domain.NewFileView(k.store, k.task.Number)
	steps := []func() error{
		func() error { return v.Write(ctx, "scratch.txt", []byte("tmp")) },
		func() error { return v.Delete(ctx, "scratch.txt") }, // never stored: no change
		func() error { return v.Delete(ctx, "kept.txt") },
		func() error { return v.Write(ctx, "kept.txt", []byte("same")) }, // back as stored: no change
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if c := v.Changes(); len(c) != 0 {
		t.Errorf("Changes = %+v; want none", c)
	}
	if err := v.Delete(ctx, "never.txt"); !errors.Is(err, domain.ErrNoFile) {
		t.Errorf("deleting a file that is not there: %v; want ErrNoFile", err)
	}
	// The view keeps its own copy of what was written.
	buf := []byte("original")
	if err := v.Write(ctx, "copy.txt", buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "CHANGED!")
	if got, _ := k.read(v, "copy.txt"); got != "original" {
		t.Errorf("the view shares the caller's buffer: %q", got)
	}
}

func TestFileViewRefusesPastTheLimits(t *testing.T) {
	t.Parallel()
	k := newViewKit(t)
	ctx := context.Background()
	mib := bytes.Repeat([]byte("x"), domain.MaxFileBytes)
	// 19 MiB stored, in 19 files.
	var stored []domain.FileChange
	for i := range 19 {
		stored = append(stored, domain.FileChange{Path: fmt.Sprintf("big/%02d.bin", i), Data: mib})
	}
	if err := k.commit(stored); err != nil {
		t.Fatal(err)
	}
	v := domain.NewFileView(k.store, k.task.Number)
	refused := []struct {
		path string
		data []byte
		kind error
		want string
	}{
		{"huge.bin", append(mib, 'x'), domain.ErrLimit, "huge.bin would be 1048577 bytes; a file may hold at most 1048576 (1 MiB)"},
		{"big/00.bin/x", []byte("x"), domain.ErrInvalid, "big/00.bin is a file, so big/00.bin/x cannot be written inside it"},
		{"big", []byte("x"), domain.ErrInvalid, "big is a folder"},
		{"../x", []byte("x"), domain.ErrInvalid, "outside the task's workspace"},
	}
	for _, r := range refused {
		err := v.Write(ctx, r.path, r.data)
		var fe *domain.FileError
		if !errors.As(err, &fe) || !errors.Is(err, r.kind) || !strings.Contains(err.Error(), r.want) {
			t.Errorf("Write(%s) = %v; want a FileError (%v) saying %q", r.path, err, r.kind, r.want)
		}
	}
	// One more MiB fits exactly; then even one byte does not, until a file
	// is deleted.
	if err := v.Write(ctx, "big/19.bin", mib); err != nil {
		t.Fatalf("the 20th MiB: %v", err)
	}
	err := v.Write(ctx, "one-byte.txt", []byte("x"))
	if !errors.Is(err, domain.ErrLimit) || !strings.Contains(err.Error(), "a task may keep at most 20971520 (20 MiB) in all") {
		t.Errorf("one byte over 20 MiB: %v", err)
	}
	if err := v.Delete(ctx, "big/00.bin"); err != nil {
		t.Fatal(err)
	}
	if err := v.Write(ctx, "one-byte.txt", []byte("x")); err != nil {
		t.Errorf("after a delete: %v", err)
	}

	// 1,000 files fit; the 1,001st does not.
	k2 := newViewKit(t)
	v2 := domain.NewFileView(k2.store, k2.task.Number)
	for i := range domain.MaxTaskFiles {
		if err := v2.Write(ctx, fmt.Sprintf("f/%04d", i), nil); err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
	}
	err = v2.Write(ctx, "f/one-more", nil)
	if !errors.Is(err, domain.ErrLimit) || !strings.Contains(err.Error(), "the task would have 1001 files; a task may keep at most 1000") {
		t.Errorf("the 1,001st file: %v", err)
	}
	if err := k2.commit(v2.Changes()); err != nil {
		t.Errorf("committing 1,000 empty files: %v", err)
	}
}
