package domain

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// A task's files live in the store (docs/deploy.md), so any replica can run
// any iteration of any task. An iteration sees them through a Files view
// (Call.Files) that reads through to the store and keeps its writes in
// memory; the writes reach the store only with the iteration's fenced
// commit (Outcome.Files, Mutation.Files), so a worker that lost its lease
// writes nothing.

// Limits of a task's files (docs/deploy.md). The Files view refuses a write
// past one with a sentence for the model; the store refuses it too.
const (
	MaxFileBytes     = 1 << 20  // one file
	MaxTaskFileBytes = 20 << 20 // all of one task's files together
	MaxTaskFiles     = 1000     // files of one task
	// MaxFilePathBytes bounds a file's path.
	MaxFilePathBytes = 1024
)

// ErrNoFile is the error of a file that is not there.
var ErrNoFile = errors.New("no such file")

// TaskFile describes one stored file of a task, without its data. Its
// JSON is the shape of GET /api/tasks/{n}/files.
type TaskFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// UpdatedAt is when the commit that wrote it was made; zero for a
	// write still pending in a Files view.
	UpdatedAt time.Time `json:"updated_at"`
}

// FileChange is one change to a task's file, committed with an
// iteration: Data replaces the file at Path (creating it), or, with
// Delete, the file is removed.
type FileChange struct {
	Path   string
	Data   []byte
	Delete bool
}

// FileSum is the hex SHA-256 of data, as TaskFile.SHA256 holds it.
func FileSum(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// FileError is a file operation refused for what it asked: a path outside
// the task's files, a file that is not there, a limit of docs/deploy.md.
// Reason is a phrase for the model ("notes/a.md would be 2000000 bytes;
// a file may hold at most 1048576"); Err is ErrInvalid, ErrNoFile or
// ErrLimit, for errors.Is.
type FileError struct {
	Reason string
	Err    error
}

func (e *FileError) Error() string { return e.Reason }
func (e *FileError) Unwrap() error { return e.Err }

func fileErr(kind error, format string, args ...any) error {
	return &FileError{Reason: fmt.Sprintf(format, args...), Err: kind}
}

// CleanFilePath turns a path a tool or a person gave into the one the
// store keeps: relative to the task's files, cleaned, with "/" between
// its parts. It refuses an empty path, an absolute one, one that climbs
// out with "..", the top folder itself, control characters and text that
// is not UTF-8, with a FileError wrapping ErrInvalid.
func CleanFilePath(p string) (string, error) {
	p = strings.TrimSpace(p)
	switch {
	case p == "":
		return "", fileErr(ErrInvalid, "the path is empty")
	case !utf8.ValidString(p) || strings.ContainsFunc(p, unicode.IsControl):
		return "", fileErr(ErrInvalid, "%q is not a usable file name", p)
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~"):
		return "", fileErr(ErrInvalid, "%q is outside the task's workspace: use a relative path", p)
	}
	c := path.Clean(filepath.ToSlash(p))
	switch {
	case c == "..", strings.HasPrefix(c, "../"):
		return "", fileErr(ErrInvalid, "%q is outside the task's workspace", p)
	case c == ".":
		return "", fileErr(ErrInvalid, "%q is the workspace itself, not a file in it", p)
	case len(c) > MaxFilePathBytes:
		return "", fileErr(ErrInvalid, "the path is %d bytes long; a path may have at most %d", len(c), MaxFilePathBytes)
	}
	return c, nil
}

// ComparePaths orders file paths as a walk of their folders would: the
// parts of a path are compared one by one, so "a/b" comes before "a.txt"
// and a folder's files stay together.
func ComparePaths(a, b string) int {
	return strings.Compare(strings.ReplaceAll(a, "/", "\x00"), strings.ReplaceAll(b, "/", "\x00"))
}

// CheckFileLimits says, with a FileError wrapping ErrLimit, which limit
// of docs/deploy.md the files of one task would pass, or nil. files are all
// of the task's files after a change; changed names the paths the change
// wrote, whose sizes are checked one by one.
func CheckFileLimits(files map[string]int64, changed []string) error {
	for _, p := range changed {
		if size, ok := files[p]; ok && size > MaxFileBytes {
			return fileErr(ErrLimit, "%s would be %d bytes; a file may hold at most %d (1 MiB)", p, size, MaxFileBytes)
		}
	}
	if len(files) > MaxTaskFiles {
		return fileErr(ErrLimit, "the task would have %d files; a task may keep at most %d", len(files), MaxTaskFiles)
	}
	var total int64
	for _, size := range files {
		total += size
	}
	if total > MaxTaskFileBytes {
		return fileErr(ErrLimit, "the task's files would come to %d bytes; a task may keep at most %d (20 MiB) in all", total, MaxTaskFileBytes)
	}
	return nil
}

// CheckFilePlace refuses, with a FileError wrapping ErrInvalid, a file at
// p when files (a task's files by path) has a file where one of p's
// folders would be, or files inside a folder p: a task's files must fit
// in a directory tree, as run_command lays them out.
func CheckFilePlace[V any](files map[string]V, p string) error {
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if _, ok := files[dir]; ok {
			return fileErr(ErrInvalid, "%s is a file, so %s cannot be written inside it", dir, p)
		}
	}
	for q := range files {
		if strings.HasPrefix(q, p+"/") {
			return fileErr(ErrInvalid, "%s is a folder", p)
		}
	}
	return nil
}

// Files is one task's files as one iteration sees them (Call.Files).
// Paths are those of CleanFilePath, which every method applies.
type Files interface {
	// List lists the files, by path in the order of ComparePaths.
	List(ctx context.Context) ([]TaskFile, error)
	// Read returns a file's bytes, which the caller must not change; a
	// FileError wrapping ErrNoFile when there is none.
	Read(ctx context.Context, path string) ([]byte, error)
	// Write creates or replaces a file. A FileError wrapping ErrLimit
	// refuses one past a limit, wrapping ErrInvalid one whose path is a
	// folder or lies inside a file.
	Write(ctx context.Context, path string, data []byte) error
	// Delete removes a file; a FileError wrapping ErrNoFile when there is
	// none.
	Delete(ctx context.Context, path string) error
}

// FileReader reads the stored files of tasks; every Store is one.
type FileReader interface {
	// TaskFiles lists a task's files, by path in the order of
	// ComparePaths, without their data: none for a task with no files or
	// no such task.
	TaskFiles(ctx context.Context, number int64) ([]TaskFile, error)
	// ReadTaskFile returns one file of a task and its bytes. The path is
	// cleaned with CleanFilePath first: ErrInvalid for a path no file can
	// have, ErrNoFile when the task has no file there.
	ReadTaskFile(ctx context.Context, number int64, path string) (TaskFile, []byte, error)
}

// FileView is the Files of one iteration of one task: reads go through to
// the store, writes and deletions are kept in memory, where later calls of
// the same iteration see them, until the iteration's outcome carries them
// (Changes) into its fenced commit. It is safe for concurrent use.
type FileView struct {
	store FileReader
	task  int64

	mu      sync.Mutex
	loaded  bool
	stored  map[string]TaskFile      // the store's files, listed once
	changes map[string]pendingChange // path → pending write or deletion
}

// pendingChange is a change not yet committed, with the file it makes
// (its sum taken once).
type pendingChange struct {
	change FileChange
	file   TaskFile
}

var _ Files = (*FileView)(nil)

// NewFileView opens task's files for one iteration. A nil store is a
// store with no files.
func NewFileView(st FileReader, task int64) *FileView {
	return &FileView{store: st, task: task, changes: map[string]pendingChange{}}
}

// NewListedFileView is NewFileView with the store's files of task
// already known, by path: a listing taken at the task's last commit and
// kept since (see FileView.Committed), which spares the iteration the
// round trip that lists them. The view only reads files; the caller must
// not change it while the view is in use. It must be the task's files as
// the store has them now: the caller keeps it only while nothing else can
// have changed them.
func NewListedFileView(st FileReader, task int64, files map[string]TaskFile) *FileView {
	if files == nil {
		files = map[string]TaskFile{}
	}
	return &FileView{store: st, task: task, changes: map[string]pendingChange{}, stored: files, loaded: true}
}

// Committed returns the task's files, by path, as the store has them
// once the iteration's changes are committed at now, and whether the view
// knows them: false when it never listed them (no tool looked at the
// files and it was not opened with a listing). The map may be the one the
// view was opened with; it must not be changed.
func (v *FileView) Committed(now time.Time) (map[string]TaskFile, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.loaded {
		return nil, false
	}
	if len(v.changes) == 0 {
		return v.stored, true
	}
	out := v.current()
	for p, c := range v.changes {
		if !c.change.Delete {
			f := c.file
			f.UpdatedAt = UTC(now)
			out[p] = f
		}
	}
	return out, true
}

// load lists the stored files once. The task is leased to the iteration,
// and only its commit writes the task's files, so the listing holds for
// the whole iteration.
func (v *FileView) load(ctx context.Context) error {
	if v.loaded {
		return nil
	}
	v.stored = map[string]TaskFile{}
	if v.store != nil {
		files, err := v.store.TaskFiles(ctx, v.task)
		if err != nil {
			return fmt.Errorf("files of task #%d: %w", v.task, err)
		}
		for _, f := range files {
			v.stored[f.Path] = f
		}
	}
	v.loaded = true
	return nil
}

// current lists the files as the iteration sees them, by path; v.mu is
// held and the store listed.
func (v *FileView) current() map[string]TaskFile {
	out := maps.Clone(v.stored)
	for p, c := range v.changes {
		if c.change.Delete {
			delete(out, p)
		} else {
			out[p] = c.file
		}
	}
	return out
}

// List implements Files.
func (v *FileView) List(ctx context.Context) ([]TaskFile, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.load(ctx); err != nil {
		return nil, err
	}
	files := slices.Collect(maps.Values(v.current()))
	slices.SortFunc(files, func(a, b TaskFile) int { return ComparePaths(a.Path, b.Path) })
	return files, nil
}

// Read implements Files.
func (v *FileView) Read(ctx context.Context, p string) ([]byte, error) {
	clean, err := CleanFilePath(p)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if err := v.load(ctx); err != nil {
		v.mu.Unlock()
		return nil, err
	}
	c, pending := v.changes[clean]
	_, stored := v.stored[clean]
	v.mu.Unlock()
	switch {
	case pending && c.change.Delete, !pending && !stored:
		return nil, fileErr(ErrNoFile, "there is no file %s", clean)
	case pending:
		return c.change.Data, nil
	}
	_, data, err := v.store.ReadTaskFile(ctx, v.task, clean)
	if errors.Is(err, ErrNoFile) {
		return nil, fileErr(ErrNoFile, "there is no file %s", clean)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s of task #%d: %w", clean, v.task, err)
	}
	return data, nil
}

// Write implements Files.
func (v *FileView) Write(ctx context.Context, p string, data []byte) error {
	clean, err := CleanFilePath(p)
	if err != nil {
		return err
	}
	if len(data) > MaxFileBytes {
		return fileErr(ErrLimit, "%s would be %d bytes; a file may hold at most %d (1 MiB)", clean, len(data), MaxFileBytes)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.load(ctx); err != nil {
		return err
	}
	cur := v.current()
	if err := CheckFilePlace(cur, clean); err != nil {
		return err
	}
	sizes := make(map[string]int64, len(cur)+1)
	for q, f := range cur {
		sizes[q] = f.Size
	}
	sizes[clean] = int64(len(data))
	if err := CheckFileLimits(sizes, []string{clean}); err != nil {
		return err
	}
	sum := FileSum(data)
	if f, ok := v.stored[clean]; ok && f.Size == int64(len(data)) && f.SHA256 == sum {
		delete(v.changes, clean) // back to what the store has
		return nil
	}
	v.changes[clean] = pendingChange{
		change: FileChange{Path: clean, Data: bytes.Clone(data)},
		file:   TaskFile{Path: clean, Size: int64(len(data)), SHA256: sum},
	}
	return nil
}

// Delete implements Files.
func (v *FileView) Delete(ctx context.Context, p string) error {
	clean, err := CleanFilePath(p)
	if err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.load(ctx); err != nil {
		return err
	}
	if _, ok := v.current()[clean]; !ok {
		return fileErr(ErrNoFile, "there is no file %s", clean)
	}
	if _, ok := v.stored[clean]; ok {
		v.changes[clean] = pendingChange{change: FileChange{Path: clean, Delete: true}}
	} else {
		delete(v.changes, clean)
	}
	return nil
}

// Changes returns the writes and deletions the iteration made, by path;
// a write that put back what the store has is none.
func (v *FileView) Changes() []FileChange {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]FileChange, 0, len(v.changes))
	for _, c := range v.changes {
		out = append(out, c.change)
	}
	slices.SortFunc(out, func(a, b FileChange) int { return ComparePaths(a.Path, b.Path) })
	return out
}
