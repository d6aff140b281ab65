package sqlstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// Export and Import are taskloom export and import (docs/deploy.md), once
// for both stores: a dump is JSON Lines — a header (domain.DumpHeader), a
// line {"table", "row"} for every row of every table a store keeps, and a
// last line {"end"} with the counts and sequences, without which a dump
// is taken as cut short. A row is an object of its columns, each written
// the same from either dialect (ColumnKind), so a dump moves between
// them; rows go in a fixed order, so the same data makes the same dump.

// ColumnKind is how a column's value is written in a dump.
type ColumnKind int

const (
	// KindPlain values are written as the driver reads them: numbers and text.
	KindPlain ColumnKind = iota
	// KindTime is a point in time, RFC 3339 in UTC to the microsecond.
	KindTime
	// KindBool is true or false.
	KindBool
	// KindJSON is the value itself, its keys sorted.
	KindJSON
	// KindBytes are base64.
	KindBytes
)

// KindOf is the kind of column of table. Times are named *_at or time;
// the rest that are not plain are listed: the one place a new column that
// is neither a number nor text is added (a test holds this to
// PostgreSQL's catalog).
func KindOf(table, column string) ColumnKind {
	switch table + "." + column {
	case "memories.from_bot", "schedules.paused", "task_steps.success", "tasks.approval_granted":
		return KindBool
	case "facts.sources", "notifications.payload", "task_events.payload", "task_steps.params":
		return KindJSON
	case "facts.embedding", "passages.embedding", "task_files.data":
		return KindBytes
	}
	if column == "time" || strings.HasSuffix(column, "_at") {
		return KindTime
	}
	return KindPlain
}

// dumpTable is a table a dump holds: its key, the order its rows are
// written in, and its identity column (the number or id the database
// hands out), if any.
type dumpTable struct {
	name     string
	key      []dumpKey
	identity string
}

type dumpKey struct {
	column string
	text   bool // ordered by its bytes, whatever the database's collation
}

// DumpTables are the tables a dump holds, in the order an import loads
// them: every row after the rows it refers to.
var dumpTables = []dumpTable{
	{"schedules", []dumpKey{{"id", false}}, "id"},
	{"tasks", []dumpKey{{"number", false}}, "number"},
	{"task_origins", []dumpKey{{"origin", true}}, ""},
	{"task_events", []dumpKey{{"id", false}}, "id"},
	{"task_steps", []dumpKey{{"task_number", false}, {"iteration", false}, {"call", false}}, ""},
	{"task_files", []dumpKey{{"task_number", false}, {"path", true}}, ""},
	{"task_cards", []dumpKey{{"room", true}, {"task_number", false}}, ""},
	{"schedule_events", []dumpKey{{"id", false}}, "id"},
	{"notifications", []dumpKey{{"id", false}}, "id"},
	{"room_progress", []dumpKey{{"room", true}, {"task_number", false}}, ""},
	{"memories", []dumpKey{{"id", false}}, "id"},
	{"facts", []dumpKey{{"id", false}}, "id"},
	{"fact_sources", []dumpKey{{"memory_id", false}, {"fact_id", false}}, ""},
	{"forgotten_messages", []dumpKey{{"platform", true}, {"message_id", true}}, ""},
	{"forgotten_people", []dumpKey{{"person", true}}, ""},
	{"documents", []dumpKey{{"id", false}}, "id"},
	{"passages", []dumpKey{{"id", false}}, "id"},
}

// NotDumped are the tables a store has that a dump leaves out: the import
// migrates its store itself; the heads of the outbox's rooms
// (notification_rooms) are derived from the notifications, which the
// store's triggers rebuild them from as an import inserts them; and the
// pace the replicas share (PostgreSQL's pace_members and pace_rooms) is
// state of the last seconds.
var NotDumped = []string{"schema_migrations", "notification_rooms", "pace_members", "pace_rooms"}

// DumpedTables lists the names of the tables a dump holds, in order.
func DumpedTables() []string {
	names := make([]string, len(dumpTables))
	for i, t := range dumpTables {
		names[i] = t.name
	}
	return names
}

// DumpDialect is what a store supplies to Export and Import.
type DumpDialect interface {
	// Name is the dialect, as a dump's header says it.
	Name() string
	// Snapshot runs fn in a read-only transaction that sees one
	// consistent state of the database, whatever commits meanwhile.
	Snapshot(ctx context.Context, fn func(ReadDB) error) error
	// InTx runs fn in one write transaction and commits when it returns
	// nil.
	InTx(ctx context.Context, fn func(DB) error) error
	// Tables lists the tables the database keeps, its own internal ones
	// and derived search indexes aside.
	Tables(ctx context.Context, db ReadDB) ([]string, error)
	// Columns lists table's stored columns (generated ones aside), in
	// order.
	Columns(ctx context.Context, db ReadDB, table string) ([]string, error)
	// Select is the expression that reads column of kind k for Out.
	Select(column string, k ColumnKind) string
	// OrderText orders by text column by its bytes.
	OrderText(column string) string
	// Out turns a value Select read into its kind's Go value: time.Time,
	// bool, string (JSON), []byte, or int64, float64, string; nil for NULL.
	Out(k ColumnKind, v any) (any, error)
	// In turns a value of kind k (as Out returns it) into an argument.
	In(k ColumnKind, v any) any
	// Insert is the statement that inserts a row of table with columns,
	// keeping the value of its identity column when it has one.
	Insert(table string, columns []string, identity string) string
	// Sequence is the highest value table's identity column has handed
	// out, 0 when the database does not say.
	Sequence(ctx context.Context, db ReadDB, table, identity string) (int64, error)
	// Resume makes table's identity hand out values after last.
	Resume(ctx context.Context, db DB, table, identity string, last int64) error
}

// Dumps gives a store Export and Import (domain.Dumper) over its dialect:
// a store embeds it.
type Dumps struct{ Dialect DumpDialect }

// Export writes the store as a dump (see the package's Export).
func (d Dumps) Export(ctx context.Context, w io.Writer, h domain.DumpHeader, progress func(int64)) (domain.DumpStats, error) {
	return Export(ctx, d.Dialect, w, h, progress)
}

// Import loads a dump into the empty store (see the package's Import).
func (d Dumps) Import(ctx context.Context, r io.Reader, progress func(int64)) (domain.DumpHeader, domain.DumpStats, error) {
	return Import(ctx, d.Dialect, r, progress)
}

// dumpLine is every line of a dump after its header.
type dumpLine struct {
	Table string                     `json:"table,omitempty"`
	Row   map[string]json.RawMessage `json:"row,omitempty"`
	End   *domain.DumpStats          `json:"end,omitempty"`
}

// dumpTime is how a dump writes a time.
const dumpTime = "2006-01-02T15:04:05.000000Z07:00"

// Export writes every row of the store d reaches to w as a dump headed by
// h, from one snapshot.
func Export(ctx context.Context, d DumpDialect, w io.Writer, h domain.DumpHeader, progress func(int64)) (domain.DumpStats, error) {
	stats := domain.DumpStats{Tables: map[string]int64{}, Sequences: map[string]int64{}}
	bw := bufio.NewWriterSize(w, 1<<16)
	err := d.Snapshot(ctx, func(db ReadDB) error {
		if err := db.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&h.Schema); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		h.Format, h.Dialect, h.Time = domain.DumpFormat, d.Name(), h.Time.UTC()
		if err := writeLine(bw, h); err != nil {
			return err
		}
		for _, t := range dumpTables {
			if err := exportTable(ctx, d, db, bw, t, &stats, progress); err != nil {
				return err
			}
		}
		for _, t := range dumpTables {
			if t.identity == "" {
				continue
			}
			v, err := d.Sequence(ctx, db, t.name, t.identity)
			if err != nil {
				return fmt.Errorf("read the sequence of %s: %w", t.name, err)
			}
			stats.Sequences[t.name] = max(stats.Sequences[t.name], v)
		}
		return writeLine(bw, dumpLine{End: &stats})
	})
	if err != nil {
		return stats, fmt.Errorf("export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return stats, fmt.Errorf("export: %w", err)
	}
	return stats, nil
}

func exportTable(ctx context.Context, d DumpDialect, db ReadDB, w *bufio.Writer, t dumpTable, stats *domain.DumpStats, progress func(int64)) error {
	cols, err := d.Columns(ctx, db, t.name)
	if err != nil {
		return fmt.Errorf("columns of %s: %w", t.name, err)
	}
	sel := make([]string, len(cols))
	kinds := make([]ColumnKind, len(cols))
	for i, c := range cols {
		kinds[i] = KindOf(t.name, c)
		sel[i] = d.Select(c, kinds[i])
	}
	order := make([]string, len(t.key))
	for i, k := range t.key {
		order[i] = Quote(k.column)
		if k.text {
			order[i] = d.OrderText(k.column)
		}
	}
	if t.identity != "" {
		stats.Sequences[t.name] = 0
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + Quote(t.name) + " ORDER BY " + strings.Join(order, ", ")
	return db.Query(ctx, q, nil, func(rows Rows) error {
		vals := make([]any, len(cols))
		dest := make([]any, len(cols))
		for i := range vals {
			dest[i] = &vals[i]
		}
		line := dumpLine{Table: t.name, Row: make(map[string]json.RawMessage, len(cols))}
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return fmt.Errorf("read %s: %w", t.name, err)
			}
			for i, c := range cols {
				v, err := d.Out(kinds[i], vals[i])
				if err != nil {
					return fmt.Errorf("read %s.%s: %w", t.name, c, err)
				}
				raw, err := encodeValue(kinds[i], v)
				if err != nil {
					return fmt.Errorf("write %s.%s: %w", t.name, c, err)
				}
				line.Row[c] = raw
				if c == t.identity {
					if n, ok := v.(int64); ok {
						stats.Sequences[t.name] = max(stats.Sequences[t.name], n)
					}
				}
			}
			if err := writeLine(w, line); err != nil {
				return err
			}
			stats.Rows++
			stats.Tables[t.name]++
			if progress != nil && stats.Rows%10000 == 0 {
				progress(stats.Rows)
			}
		}
		return rows.Err()
	})
}

// encodeValue writes v, of kind k as Out returns it, as a dump does.
func encodeValue(k ColumnKind, v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("null"), nil
	}
	switch k {
	case KindTime:
		t, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("a time read as %T", v)
		}
		return marshal(t.UTC().Format(dumpTime))
	case KindJSON:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("JSON read as %T", v)
		}
		return canonicalJSON([]byte(s))
	case KindBytes:
		b, ok := v.([]byte)
		if !ok {
			return nil, fmt.Errorf("bytes read as %T", v)
		}
		return marshal(base64.StdEncoding.EncodeToString(b))
	}
	return marshal(v)
}

// canonicalJSON re-encodes raw with its keys sorted, no white space and
// its numbers as written, so both dialects' JSON reads the same.
func canonicalJSON(raw []byte) (json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return marshal(v)
}

func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func writeLine(w *bufio.Writer, v any) error {
	raw, err := marshal(v)
	if err != nil {
		return err
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	return w.WriteByte('\n')
}

// maxDumpLine bounds one line of a dump: a task's largest file, in
// base64, with room to spare.
const maxDumpLine = 64 << 20

// Import loads the dump r into the empty, migrated store d reaches, in one
// transaction: a dump that turns out bad halfway loads nothing.
func Import(ctx context.Context, d DumpDialect, r io.Reader, progress func(int64)) (domain.DumpHeader, domain.DumpStats, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var h domain.DumpHeader
	first, err := readLine(br)
	if err != nil {
		return h, domain.DumpStats{}, badDump("it is empty or unreadable: %v", err)
	}
	if err := json.Unmarshal(first, &h); err != nil || h.Format == 0 {
		return h, domain.DumpStats{}, badDump("its first line is not the header of a Taskloom dump")
	}
	if h.Format > domain.DumpFormat {
		return h, domain.DumpStats{}, badDump("it is of format %d, written by Taskloom %s; this Taskloom reads formats up to %d: import it with that version or newer",
			h.Format, h.Taskloom, domain.DumpFormat)
	}
	var stats domain.DumpStats
	err = d.InTx(ctx, func(db DB) error {
		var err error
		stats, err = load(ctx, d, db, br, h, progress)
		return err
	})
	return h, stats, err
}

func load(ctx context.Context, d DumpDialect, db DB, br *bufio.Reader, h domain.DumpHeader, progress func(int64)) (domain.DumpStats, error) {
	stats := domain.DumpStats{Tables: map[string]int64{}, Sequences: map[string]int64{}}
	l := loader{d: d, db: db, h: h, tables: map[string]dumpTable{}, columns: map[string]map[string]bool{}, inserts: map[string]string{}, stats: &stats}
	for _, t := range dumpTables {
		var n int64
		if err := db.QueryRow(ctx, "SELECT count(*) FROM "+Quote(t.name)).Scan(&n); err != nil {
			return stats, fmt.Errorf("count %s: %w", t.name, err)
		}
		if n > 0 {
			return stats, fmt.Errorf("%w: it holds %d rows of %s; import only into a new, empty store", domain.ErrNotEmpty, n, t.name)
		}
		cols, err := d.Columns(ctx, db, t.name)
		if err != nil {
			return stats, fmt.Errorf("columns of %s: %w", t.name, err)
		}
		l.tables[t.name], l.columns[t.name] = t, map[string]bool{}
		for _, c := range cols {
			l.columns[t.name][c] = true
		}
		if t.identity != "" {
			stats.Sequences[t.name] = 0
		}
	}
	var end *domain.DumpStats
	for n := 2; ; n++ {
		raw, err := readLine(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return stats, badDump("line %d: %v", n, err)
		}
		if end != nil {
			return stats, badDump("line %d follows the dump's last line", n)
		}
		var line dumpLine
		if err := json.Unmarshal(raw, &line); err != nil {
			return stats, badDump("line %d is not JSON: %v", n, err)
		}
		if line.End != nil {
			end = line.End
			continue
		}
		if err := l.row(ctx, line); err != nil {
			return stats, fmt.Errorf("line %d: %w", n, err)
		}
		if progress != nil && stats.Rows%10000 == 0 {
			progress(stats.Rows)
		}
	}
	if end == nil {
		return stats, badDump("it ends before its last line: the file was cut short (%d rows read)", stats.Rows)
	}
	if end.Rows != stats.Rows || !maps.Equal(end.Tables, stats.Tables) {
		return stats, badDump("its last line counts %d rows, but it holds %d", end.Rows, stats.Rows)
	}
	for _, name := range slices.Sorted(maps.Keys(stats.Sequences)) {
		last := max(stats.Sequences[name], end.Sequences[name])
		stats.Sequences[name] = last
		if last > 0 {
			if err := d.Resume(ctx, db, name, l.tables[name].identity, last); err != nil {
				return stats, fmt.Errorf("go on after %d in %s: %w", last, name, err)
			}
		}
	}
	return stats, nil
}

// loader inserts the rows of one import.
type loader struct {
	d       DumpDialect
	db      DB
	h       domain.DumpHeader
	tables  map[string]dumpTable
	columns map[string]map[string]bool
	inserts map[string]string // by table and columns
	stats   *domain.DumpStats
}

// row inserts one row of the dump.
func (l *loader) row(ctx context.Context, line dumpLine) error {
	t, ok := l.tables[line.Table]
	if !ok {
		return badDump("table %q is not one this Taskloom keeps: the dump was written by a newer one (schema %d)", line.Table, l.h.Schema)
	}
	cols := slices.Sorted(maps.Keys(line.Row))
	args := make([]any, len(cols))
	for i, c := range cols {
		if !l.columns[t.name][c] {
			return badDump("column %s of %s is not one this Taskloom keeps: the dump was written by a newer one (schema %d)", c, t.name, l.h.Schema)
		}
		k := KindOf(t.name, c)
		v, err := decodeValue(k, line.Row[c])
		if err != nil {
			return badDump("%s.%s: %v", t.name, c, err)
		}
		if c == t.identity {
			n, ok := v.(int64)
			if !ok {
				return badDump("%s.%s is not a whole number", t.name, c)
			}
			l.stats.Sequences[t.name] = max(l.stats.Sequences[t.name], n)
		}
		if v != nil {
			v = l.d.In(k, v)
		}
		args[i] = v
	}
	key := t.name + "(" + strings.Join(cols, ",") + ")"
	q, ok := l.inserts[key]
	if !ok {
		q = l.d.Insert(t.name, cols, t.identity)
		l.inserts[key] = q
	}
	if _, err := l.db.Exec(ctx, q, args...); err != nil {
		return fmt.Errorf("insert into %s: %w", t.name, err)
	}
	l.stats.Rows++
	l.stats.Tables[t.name]++
	return nil
}

// decodeValue reads a value of kind k as a dump writes it, into the Go
// value Out returns for it.
func decodeValue(k ColumnKind, raw json.RawMessage) (any, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	switch k {
	case KindTime:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return time.Parse(time.RFC3339Nano, s)
	case KindBool:
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, err
	case KindJSON:
		c, err := canonicalJSON(raw)
		return string(c), err
	case KindBytes:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return base64.StdEncoding.DecodeString(s)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n, nil
		}
		return v.Float64()
	case string:
		return v, nil
	}
	return nil, fmt.Errorf("a %T where a number or text belongs", v)
}

// readLine reads one line of at most maxDumpLine bytes, without its
// newline; io.EOF at the end.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxDumpLine {
			return nil, fmt.Errorf("a line is over %d bytes", maxDumpLine)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, errors.New("the last line has no newline: the file was cut short")
		case err != nil:
			return nil, err
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}

// Quote is an identifier as both dialects quote it.
func Quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

func badDump(format string, args ...any) error {
	return fmt.Errorf("%w: %s", domain.ErrBadDump, fmt.Sprintf(format, args...))
}

// UndumpedTables returns those of tables (as a dialect's Tables lists
// them) that a dump neither holds nor leaves out on purpose: a table
// added without its place in dumpTables would be lost in a move.
func UndumpedTables(tables []string) []string {
	var out []string
	for _, name := range tables {
		if !slices.Contains(DumpedTables(), name) && !slices.Contains(NotDumped, name) {
			out = append(out, name)
		}
	}
	return out
}
