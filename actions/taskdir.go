package actions

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/taskloom/taskloom/domain"
)

// maxNotKept is how many files a command made that were not kept are named
// one by one in its result; the rest are counted.
const maxNotKept = 10

// taskDir is a task's files laid out in a temporary directory, where a
// command runs: what the command changes there is written back to the
// task's files in the iteration's commit.
type taskDir struct {
	dir    string
	before map[string]domain.TaskFile // what was laid out, by path
}

// layOut writes the task's files, as the iteration sees them, into a new
// temporary directory that the sandbox makes (a size-limited one where it
// can).
func layOut(ctx context.Context, s *Sandbox, files domain.Files, task int64) (*taskDir, error) {
	list, err := files.List(ctx)
	if err != nil {
		return nil, err
	}
	dir, _, err := s.WorkDir("taskloom-task-" + strconv.FormatInt(task, 10) + "-")
	if err != nil {
		return nil, err
	}
	d := &taskDir{dir: dir, before: make(map[string]domain.TaskFile, len(list))}
	if err := d.fill(ctx, files, list); err != nil {
		d.remove()
		return nil, err
	}
	return d, nil
}

func (d *taskDir) fill(ctx context.Context, files domain.Files, list []domain.TaskFile) error {
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return fmt.Errorf("open the command's directory: %w", err)
	}
	defer root.Close()
	for _, f := range list {
		data, err := files.Read(ctx, f.Path)
		if err != nil {
			return err
		}
		if dir := path.Dir(f.Path); dir != "." {
			if err := root.MkdirAll(dir, 0o750); err != nil {
				return fmt.Errorf("lay out %s: %w", f.Path, err)
			}
		}
		if err := root.WriteFile(f.Path, data, 0o640); err != nil {
			return fmt.Errorf("lay out %s: %w", f.Path, err)
		}
		d.before[f.Path] = f
	}
	return nil
}

// writeBack puts into files what the command changed: regular files it
// made or modified are written, files it removed deleted. Symbolic links,
// pipes, devices and sockets are not files of the task and are left out
// (a file replaced by one is gone). A file the limits or the path rules
// refuse is not kept, and the lines returned say so; the error is for a
// store that could not be reached.
func (d *taskDir) writeBack(ctx context.Context, files domain.Files) ([]string, error) {
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return nil, fmt.Errorf("open the command's directory: %w", err)
	}
	defer root.Close()
	type found struct {
		path string
		size int64
	}
	var after []found
	seen := map[string]bool{}
	if err := walkRegular(root, ".", func(p string, size int64) {
		after = append(after, found{p, size})
		seen[p] = true
	}); err != nil {
		return nil, fmt.Errorf("read the command's directory: %w", err)
	}

	// Deletions first: the room they free counts for what was written.
	count, total := 0, int64(0)
	for p, f := range d.before {
		if seen[p] {
			count++
			total += f.Size
			continue
		}
		if err := files.Delete(ctx, p); err != nil && !errors.Is(err, domain.ErrNoFile) {
			return nil, fmt.Errorf("delete %s: %w", p, err)
		}
	}
	var notes []string
	notKept := 0
	refuse := func(why string) {
		notKept++
		if notKept <= maxNotKept {
			notes = append(notes, "[not kept: "+why+"]")
		}
	}
	for _, f := range after {
		clean, err := domain.CleanFilePath(f.path)
		if err != nil || clean != f.path {
			refuse(fmt.Sprintf("%q: not a usable file name", f.path))
			continue
		}
		old, existed := d.before[f.path]
		// The limits are checked on the sizes first, so that a command
		// that made more than a task may keep costs no more than reading
		// what may be kept.
		switch {
		case f.size > domain.MaxFileBytes:
			refuse(fmt.Sprintf("%s is %d bytes; a file may hold at most %d (1 MiB)", f.path, f.size, domain.MaxFileBytes))
			continue
		case !existed && count >= domain.MaxTaskFiles:
			refuse(fmt.Sprintf("%s would be file %d; a task may keep at most %d", f.path, count+1, domain.MaxTaskFiles))
			continue
		case total-old.Size+f.size > domain.MaxTaskFileBytes:
			refuse(fmt.Sprintf("%s (%d bytes) would bring the task's files past %d bytes (20 MiB) in all", f.path, f.size, domain.MaxTaskFileBytes))
			continue
		}
		if err := root.Chmod(f.path, 0o640); err != nil {
			refuse(fmt.Sprintf("%s cannot be read: %v", f.path, err))
			continue
		}
		data, err := root.ReadFile(f.path)
		if err != nil {
			refuse(fmt.Sprintf("%s cannot be read: %v", f.path, err))
			continue
		}
		if existed && old.Size == int64(len(data)) && old.SHA256 == domain.FileSum(data) {
			continue // unchanged
		}
		if err := files.Write(ctx, f.path, data); err != nil {
			if why, ok := fileRefusal(err); ok {
				refuse(why)
				continue
			}
			return nil, fmt.Errorf("write %s: %w", f.path, err)
		}
		if !existed {
			count++
		}
		total += int64(len(data)) - old.Size
	}
	if notKept > maxNotKept {
		notes = append(notes, fmt.Sprintf("[and %d more files not kept]", notKept-maxNotKept))
	}
	return notes, nil
}

// walkRegular calls fn with the slash path and size of each regular file
// under dir of root, in lexical order. It makes each directory readable,
// writable and searchable first: the command may have taken that away,
// and its files must still be read and the directory removed.
func walkRegular(root *os.Root, dir string, fn func(p string, size int64)) error {
	if err := root.Chmod(dir, 0o750); err != nil {
		return err
	}
	f, err := root.Open(dir)
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		switch {
		case e.IsDir():
			if err := walkRegular(root, p, fn); err != nil {
				return err
			}
		case e.Type().IsRegular():
			info, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			fn(p, info.Size())
		}
	}
	return nil
}

// remove deletes the directory and everything in it, whatever modes the
// command left on its folders.
func (d *taskDir) remove() error {
	if err := RemoveWorkDir(d.dir); err != nil {
		return err
	}
	if root, err := os.OpenRoot(d.dir); err == nil {
		_ = walkRegular(root, ".", func(string, int64) {})
		root.Close()
	}
	if err := os.RemoveAll(d.dir); err != nil {
		return fmt.Errorf("remove the command's directory %s: %w", d.dir, err)
	}
	return nil
}
