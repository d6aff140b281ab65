package actions

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// ImportedSuffix is added to a workspace directory's name once its files
// are in the store, so the next start leaves it alone.
const ImportedSuffix = ".imported"

// Import moves the workspaces an earlier version kept on disk into the
// store (docs/deploy.md): each regular file of Root/task-N goes into task N's
// files, unless task N already has a file at that path (what the task
// wrote since wins). A directory done is renamed task-N.imported, and one
// line is logged for it. The directory of a task the store does not have
// is left where it is, with a warning; symbolic links and special files
// are left behind, as are files past the limits of a task's files (the
// log line counts them).
//
// It is meant for start-up, after the migrations and before the task
// service runs, but is safe at any time and when run again: a directory
// renamed is not looked at, and a file the store has is not written. (Run
// while another replica serves the task, the files it imports may stay
// unseen by that replica's iterations of the task until something else
// happens to the task: a replica keeps a task's file listing from one of
// its commits to its next claim, and the import writes no event.) An
// error (the store could not be reached, a directory not read or renamed)
// leaves that directory for the next start; the other directories are
// imported all the same.
func (w Workspaces) Import(ctx context.Context, st domain.FileStore, now time.Time, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	if w.Root == "" {
		return nil
	}
	entries, err := os.ReadDir(w.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("import workspaces: %w", err)
	}
	var errs []error
	for _, e := range entries {
		n, ok := workspaceTask(e)
		if !ok {
			continue
		}
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if err := w.importOne(ctx, st, n, now, log); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("import workspaces: %w", errors.Join(errs...))
	}
	return nil
}

// workspaceTask is the task number of a workspace directory task-N.
func workspaceTask(e fs.DirEntry) (int64, bool) {
	digits, ok := strings.CutPrefix(e.Name(), "task-")
	if !ok || !e.IsDir() {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != digits {
		return 0, false
	}
	return n, true
}

func (w Workspaces) importOne(ctx context.Context, st domain.FileStore, n int64, now time.Time, log *slog.Logger) error {
	dir := w.Dir(n)
	files, left, err := readWorkspace(dir)
	if err != nil {
		return fmt.Errorf("workspace of task #%d: %w", n, err)
	}
	written, err := st.ImportTaskFiles(ctx, n, files, now)
	if errors.Is(err, domain.ErrNotFound) {
		log.Warn("a workspace of an earlier version belongs to no task: left in place", "task", n, "dir", dir)
		return nil
	}
	if err != nil {
		return fmt.Errorf("workspace of task #%d: %w", n, err)
	}
	done, err := renameImported(dir)
	if err != nil {
		return fmt.Errorf("workspace of task #%d: imported, but %w", n, err)
	}
	// Files the store had already, or that did not fit, are left out.
	left += len(files) - len(written)
	log.Info("imported the workspace of an earlier version", "task", n, "files", len(written), "left_out", left, "dir", done)
	return nil
}

// readWorkspace reads the regular files of dir, by path, up to what one
// task may keep, and counts the files it leaves out: links and special
// files, files over the size of one file, names no task file can have,
// files past the count or the total.
func readWorkspace(dir string) ([]domain.FileChange, int, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	var files []domain.FileChange
	var total int64
	left := 0
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			left++
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		clean, err := domain.CleanFilePath(filepath.ToSlash(p))
		if err != nil || clean != p || info.Size() > domain.MaxFileBytes ||
			len(files) >= domain.MaxTaskFiles || total+info.Size() > domain.MaxTaskFileBytes {
			left++
			return nil
		}
		data, err := root.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, domain.FileChange{Path: clean, Data: data})
		total += int64(len(data))
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return files, left, nil
}

// renameImported renames dir to dir.imported (or, when that is taken by
// an earlier import, dir.imported.2, …) and returns the new name.
func renameImported(dir string) (string, error) {
	for i := 1; i <= 100; i++ {
		to := dir + ImportedSuffix
		if i > 1 {
			to += "." + strconv.Itoa(i)
		}
		if _, err := os.Lstat(to); err == nil {
			continue
		}
		if err := os.Rename(dir, to); err != nil {
			return "", fmt.Errorf("rename it: %w", err)
		}
		return to, nil
	}
	return "", fmt.Errorf("rename it: %s%s to .100 are all taken", dir, ImportedSuffix)
}
