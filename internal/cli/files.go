package cli

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// taskFile is one entry of GET /api/tasks/{n}/files.
type taskFile struct {
	Path      string    `json:"path"`
	Size      int64     `json:"size"`
	SHA256    string    `json:"sha256"`
	UpdatedAt time.Time `json:"updated_at"`
}

// files lists a task's files, or with a path prints one file's bytes as
// they are: `taskloom tasks files 3`, `taskloom tasks files 3 notes/plan.md`.
func (r *runner) files(args []string) error {
	fs := r.flags("files")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || len(pos) > 2 {
		return usagef("files takes a task number and, if you like, a path, e.g. `taskloom tasks files 3 notes/plan.md`")
	}
	n, err := number(pos[:1], "files")
	if err != nil {
		return err
	}
	if err := r.connect(); err != nil {
		return err
	}
	if len(pos) == 2 {
		segs := strings.Split(pos[1], "/")
		for i, s := range segs {
			segs[i] = url.PathEscape(s)
		}
		raw, err := r.c.call(r.ctx, "GET", fmt.Sprintf("/api/tasks/%d/files/%s", n, strings.Join(segs, "/")), nil, nil)
		if err != nil {
			return err
		}
		_, err = r.out.Write(raw)
		return err
	}
	var body struct {
		Files []taskFile `json:"files"`
	}
	raw, err := r.c.call(r.ctx, "GET", fmt.Sprintf("/api/tasks/%d/files", n), nil, &body)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	if len(body.Files) == 0 {
		_, err := fmt.Fprintf(r.out, "Task #%d has no files.\n", n)
		return err
	}
	tw := tabwriter.NewWriter(r.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSIZE\tUPDATED")
	for _, f := range body.Files {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Path, strconv.FormatInt(f.Size, 10), f.UpdatedAt.Local().Format("2006-01-02 15:04:05"))
	}
	return tw.Flush()
}
