package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/term"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/config"
)

// runExport writes the configured store as a dump to out ("" is standard
// output). The store is not migrated: an export reads it as it is.
func runExport(ctx context.Context, cfg config.Config, log *slog.Logger, o Options, out string) int {
	st, err := openUnmigrated(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(o.Stderr, "taskloom export: %v\n", err)
		return exitCode(err)
	}
	defer st.Close()
	d, ok := st.(domain.Dumper)
	if !ok {
		fmt.Fprintf(o.Stderr, "taskloom export: the %T store cannot be exported\n", st)
		return ExitFailed
	}
	w, path := o.Stdout, "standard output"
	var f *os.File
	if out != "" {
		// Written beside its final name and renamed when whole, so a
		// failed export never leaves a file that looks like a dump.
		f, err = os.CreateTemp(filepath.Dir(out), ".taskloom-export-*")
		if err != nil {
			fmt.Fprintf(o.Stderr, "taskloom export: %v\n", err)
			return ExitUsage
		}
		defer os.Remove(f.Name())
		defer f.Close()
		w, path = f, out
	}
	progress := progressLine(o.Stderr, "exported")
	stats, err := d.Export(ctx, w, domain.DumpHeader{Taskloom: version(), Time: time.Now()}, progress)
	if progress != nil {
		fmt.Fprint(o.Stderr, "\r")
	}
	if err == nil && f != nil {
		if err = f.Chmod(0o600); err == nil { // a dump holds everything people said
			if err = f.Sync(); err == nil {
				if err = f.Close(); err == nil {
					err = os.Rename(f.Name(), out)
				}
			}
		}
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "taskloom export: %v\n", err)
		return ExitFailed
	}
	fmt.Fprintf(o.Stderr, "taskloom export: %d rows (%d tasks) to %s\n", stats.Rows, stats.Tables["tasks"], path)
	return ExitOK
}

// runImport migrates the configured store, loads the dump in ("" is
// standard input) into it, and checks every task's events after.
func runImport(ctx context.Context, cfg config.Config, log *slog.Logger, o Options, in string) int {
	var r io.Reader = o.Stdin
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			fmt.Fprintf(o.Stderr, "taskloom import: %v\n", err)
			return ExitUsage
		}
		defer f.Close()
		r = f
	}
	if r == nil {
		fmt.Fprintln(o.Stderr, "taskloom import: no dump to read: give --in FILE, or pipe one in")
		return ExitUsage
	}
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(o.Stderr, "taskloom import: %v\n", err)
		return exitCode(err)
	}
	defer st.Close()
	d, ok := st.(domain.Dumper)
	if !ok {
		fmt.Fprintf(o.Stderr, "taskloom import: the %T store cannot be imported into\n", st)
		return ExitFailed
	}
	progress := progressLine(o.Stderr, "imported")
	h, stats, err := d.Import(ctx, r, progress)
	if progress != nil {
		fmt.Fprint(o.Stderr, "\r")
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "taskloom import: %v\n", err)
		if errors.Is(err, domain.ErrNotEmpty) || errors.Is(err, domain.ErrBadDump) {
			return ExitFailed
		}
		return exitCode(err)
	}
	fmt.Fprintf(o.Stderr, "taskloom import: %d rows (%d tasks) from a %s dump of %s by Taskloom %s\n",
		stats.Rows, stats.Tables["tasks"], h.Dialect, h.Time.Format(time.RFC3339), h.Taskloom)
	return checkStore(ctx, st, o, "taskloom import")
}

// progressLine reports rows done on w, over itself, when w is a terminal:
// a large store takes a while. Elsewhere it says nothing.
func progressLine(w io.Writer, verb string) func(int64) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return func(rows int64) { fmt.Fprintf(w, "\r%s %d rows…", verb, rows) }
}
