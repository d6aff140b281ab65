package domain

import (
	"context"
	"errors"
	"io"
	"time"
)

// DumpFormat is the version of the format taskloom export writes: JSON
// Lines, a header, one line per row, and a last line that says the dump is
// whole (docs/deploy.md). A dump of a higher version is refused; one of a
// lower version is read as this one reads it, the columns it lacks taking
// their defaults.
const DumpFormat = 1

// DumpHeader is a dump's first line.
type DumpHeader struct {
	// Format is DumpFormat when written.
	Format int `json:"taskloom_dump"`
	// Taskloom and Revision are the version and VCS revision of the
	// binary that wrote it.
	Taskloom string `json:"taskloom"`
	Revision string `json:"revision,omitempty"`
	// Dialect is the store it was read from: "sqlite" or "postgres".
	Dialect string `json:"dialect"`
	// Schema is the newest migration the store had applied.
	Schema int `json:"schema"`
	// Time is when its snapshot was taken.
	Time time.Time `json:"time"`
}

// DumpStats counts what a dump holds, by table.
type DumpStats struct {
	Rows   int64            `json:"rows"`
	Tables map[string]int64 `json:"tables"`
	// Sequences are the highest number or id each table has handed out,
	// so an import goes on after them even when the rows that had them are
	// gone.
	Sequences map[string]int64 `json:"sequences"`
}

// Dumper is a store that writes all it keeps as a dump, from one
// consistent snapshot, and loads a dump into itself when it is empty.
// Both stream: a store larger than memory moves in bounded memory.
// progress, when set, is told the rows done so far now and then.
type Dumper interface {
	Export(ctx context.Context, w io.Writer, h DumpHeader, progress func(rows int64)) (DumpStats, error)
	// Import loads r into the store in one transaction, keeping numbers,
	// ids and times; the store must be migrated and hold no rows
	// (ErrNotEmpty). A dump that is cut short, of a newer format, or with
	// a column the store does not know loads nothing (ErrBadDump).
	Import(ctx context.Context, r io.Reader, progress func(rows int64)) (DumpHeader, DumpStats, error)
}

var (
	// ErrNotEmpty refuses an import into a store that holds data.
	ErrNotEmpty = errors.New("the store is not empty")
	// ErrBadDump refuses a dump that cannot be loaded as it is.
	ErrBadDump = errors.New("not a dump this Taskloom can load")
)
