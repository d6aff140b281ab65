package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// writeFiles applies the file changes of a mutation of task, a row the
// transaction has locked, at now: it checks every path and the limits of
// docs/deploy.md against the task's files as they will be, then writes. The
// Files view refused anything past a limit already; this is the backstop
// that keeps the table within them whatever the caller.
func writeFiles(ctx context.Context, tx Tx, task int64, changes []domain.FileChange, now time.Time) error {
	if len(changes) == 0 {
		return nil
	}
	if fc, ok := tx.(FileChecker); ok {
		return writeFilesChecked(ctx, fc, tx, task, changes, now)
	}
	files, err := tx.TaskFiles(ctx, task)
	if err != nil {
		return fmt.Errorf("files: %w", err)
	}
	sizes := make(map[string]int64, len(files)+len(changes))
	for _, f := range files {
		sizes[f.Path] = f.Size
	}
	written, err := applyChanges(sizes, changes)
	if err != nil {
		return err
	}
	if err := domain.CheckFileLimits(sizes, written); err != nil {
		return fmt.Errorf("files: %w", err)
	}
	for _, p := range written {
		if err := domain.CheckFilePlace(sizes, p); err != nil {
			return fmt.Errorf("files: %w", err)
		}
	}
	for _, c := range changes {
		if c.Delete {
			err = tx.DeleteFile(ctx, task, c.Path)
		} else {
			err = tx.PutFile(ctx, task, fileOf(c, now), nonNil(c.Data))
		}
		if err != nil {
			return fmt.Errorf("file %s: %w", c.Path, err)
		}
	}
	return nil
}

// FileChecker is a Tx that checks a task's files against the limits of
// docs/deploy.md in the database, after the writes, failing the
// transaction on a breach: a commit then writes without reading the
// task's files first, which on PostgreSQL is a round trip in the middle of
// the transaction and keeps the worker's next claim out of it.
type FileChecker interface {
	// CheckFiles fails the transaction, with a FileError wrapping
	// ErrLimit or ErrInvalid when it is refused, if task's files, once
	// written, are more than a task may keep, or written (the paths
	// written) puts a file where a folder is or inside a file. It may
	// report the breach only when the transaction commits.
	CheckFiles(ctx context.Context, task int64, written []string) error
}

// writeFilesChecked is writeFiles on a FileChecker: the paths and each
// file's size are checked here, the rest in the database after the
// writes.
func writeFilesChecked(ctx context.Context, fc FileChecker, tx Tx, task int64, changes []domain.FileChange, now time.Time) error {
	sizes := map[string]int64{}
	written, err := applyChanges(sizes, changes)
	if err != nil {
		return err
	}
	// Only each file's own size: the changes alone are no task's files.
	for _, p := range written {
		if err := domain.CheckFileLimits(map[string]int64{p: sizes[p]}, []string{p}); err != nil {
			return fmt.Errorf("files: %w", err)
		}
	}
	for _, c := range changes {
		if c.Delete {
			err = tx.DeleteFile(ctx, task, c.Path)
		} else {
			err = tx.PutFile(ctx, task, fileOf(c, now), nonNil(c.Data))
		}
		if err != nil {
			return fmt.Errorf("file %s: %w", c.Path, err)
		}
	}
	if len(written) == 0 {
		return nil // deletions make no file too many nor misplaced
	}
	if err := fc.CheckFiles(ctx, task, written); err != nil {
		return fmt.Errorf("files: %w", err)
	}
	return nil
}

// fileOf describes the file a write makes.
func fileOf(c domain.FileChange, now time.Time) domain.TaskFile {
	return domain.TaskFile{Path: c.Path, Size: int64(len(c.Data)), SHA256: domain.FileSum(c.Data), UpdatedAt: domain.UTC(now)}
}

// nonNil is data, or no bytes for nil: drivers write a nil slice as NULL.
func nonNil(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}

// ImportTaskFiles adds to task number each of files at whose path it has
// no file yet, in order, while the limits allow, and returns the paths it
// wrote. Deletions, paths that are not clean and files that do not fit the
// task's tree are skipped.
func (c Core) ImportTaskFiles(ctx context.Context, number int64, files []domain.FileChange, now time.Time) ([]string, error) {
	var written []string
	err := c.D.Write(ctx, func(tx Tx) error {
		written = nil
		if _, err := tx.LockTask(ctx, number); errors.Is(err, ErrNoRows) {
			return &domain.TaskError{Op: "import files of", Number: number, Err: domain.ErrNotFound}
		} else if err != nil {
			return fmt.Errorf("import files of task #%d: %w", number, err)
		}
		have, err := tx.TaskFiles(ctx, number)
		if err != nil {
			return fmt.Errorf("import files of task #%d: %w", number, err)
		}
		sizes := make(map[string]int64, len(have)+len(files))
		for _, f := range have {
			sizes[f.Path] = f.Size
		}
		for _, f := range files {
			if _, ok := sizes[f.Path]; ok || f.Delete {
				continue
			}
			if clean, err := domain.CleanFilePath(f.Path); err != nil || clean != f.Path || domain.CheckFilePlace(sizes, f.Path) != nil {
				continue
			}
			sizes[f.Path] = int64(len(f.Data))
			if domain.CheckFileLimits(sizes, []string{f.Path}) != nil {
				delete(sizes, f.Path)
				continue
			}
			if err := tx.PutFile(ctx, number, fileOf(f, now), nonNil(f.Data)); err != nil {
				return fmt.Errorf("import %s into task #%d: %w", f.Path, number, err)
			}
			written = append(written, f.Path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return written, nil
}

// FileColumns are the columns of task_files ScanFile reads, in order: all
// but task_number and data.
const FileColumns = `path, size, sha256, updated_at`

// FileArgs lists task, the values of FileColumns for f, then data: the
// parameters of a dialect's insert.
func FileArgs(task int64, f domain.TaskFile, data []byte, timeArg TimeArg) []any {
	return []any{task, f.Path, f.Size, f.SHA256, timeArg(f.UpdatedAt), data}
}

// ScanFile reads the columns of FileColumns, then any extra ones into
// extra.
func ScanFile(row Row, extra ...any) (domain.TaskFile, error) {
	var f domain.TaskFile
	var at Time
	err := row.Scan(append([]any{&f.Path, &f.Size, &f.SHA256, &at}, extra...)...)
	f.UpdatedAt = at.T
	return f, err
}

// SortFiles orders a listing of files by path, as domain.ComparePaths
// does (SQL collations differ).
func SortFiles(files []domain.TaskFile) {
	slices.SortFunc(files, func(a, b domain.TaskFile) int { return domain.ComparePaths(a.Path, b.Path) })
}

// applyChanges applies changes to sizes, the size of each file by path,
// and returns the paths written, in order; a path that is not clean is
// refused.
func applyChanges(sizes map[string]int64, changes []domain.FileChange) ([]string, error) {
	var written []string
	for _, c := range changes {
		if clean, err := domain.CleanFilePath(c.Path); err != nil || clean != c.Path {
			return nil, fmt.Errorf("file %q: %w: not a clean relative path", c.Path, domain.ErrInvalid)
		}
		if c.Delete {
			delete(sizes, c.Path)
			continue
		}
		sizes[c.Path] = int64(len(c.Data))
		written = append(written, c.Path)
	}
	return written, nil
}
