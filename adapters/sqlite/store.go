package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

//go:embed migrations/*.sql
var migrations embed.FS

func init() {
	// Search lowers text with Go's Unicode case mapping, as PostgreSQL's
	// lower() does; SQLite's own lower() knows only ASCII.
	sqlite.MustRegisterDeterministicScalarFunction("taskloom_lower", 1,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			switch v := args[0].(type) {
			case string:
				return strings.ToLower(v), nil
			case []byte:
				return strings.ToLower(string(v)), nil
			}
			return args[0], nil
		})
}

// Store is a domain.Store on one SQLite file.
type Store struct {
	sqlstore.Core
	sqlstore.Reads
	sqlstore.Records
	sqlstore.Schedules
	sqlstore.MemoryStore
	sqlstore.Dumps
	// write has one connection, and its transactions BEGIN IMMEDIATE:
	// writers queue here rather than fail with SQLITE_BUSY.
	write *sql.DB
	// read serves reads in parallel with the writer (WAL mode).
	read *sql.DB
	// stmts are the writer's statements, prepared once by Migrate: with
	// modernc.org/sqlite, parsing SQL costs more than running it.
	stmts atomic.Pointer[map[string]*sql.Stmt]
}

var (
	_ domain.Store       = (*Store)(nil)
	_ domain.NextClaimer = (*Store)(nil)
)

// Open opens (creating it and its directory if needed) the database file at
// path. It does not migrate; call Migrate.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') || strings.HasPrefix(path, ":memory:") || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("open sqlite store: %q: need the path of a file", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open sqlite store: %w", err)
		}
	}
	const common = "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"
	write, err := sql.Open("sqlite", path+"?"+common+
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	// The writer connects first: it puts the file in WAL mode.
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	read, err := sql.Open("sqlite", path+"?"+common+"&_pragma=query_only(1)")
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	s := &Store{write: write, read: read}
	s.Core = sqlstore.Core{D: s}
	s.Reads = sqlstore.Reads{DB: handles{read, write}, SQL: readSQL}
	s.Records = sqlstore.Records{DB: handles{read, write}, SQL: recordSQL}
	s.Schedules = sqlstore.Schedules{Core: s.Core, DB: handles{read, write}, SQL: scheduleSQL, Time: timeArg}
	s.MemoryStore = sqlstore.NewMemoryStore(handles{read, write}, recallSQL)
	s.Dumps = sqlstore.Dumps{Dialect: dumpDialect{s}}
	s.Records.Wrote = s.MemoryStore.Wrote
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	return s, nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.read.PingContext(ctx); err != nil {
		return fmt.Errorf("ping sqlite: %w", err)
	}
	return nil
}

// Now is this machine's clock: one process serves an SQLite file.
func (s *Store) Now(context.Context) (time.Time, error) { return time.Now().UTC(), nil }

// Close closes the database.
func (s *Store) Close() error {
	var errs []error
	if m := s.stmts.Load(); m != nil {
		for _, st := range *m {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(append(errs, s.read.Close(), s.write.Close())...)
}

// SchemaVersion is the version of the latest migration the file has
// applied (0 when it was never migrated) and of the latest this binary
// brings, without changing anything: what `taskloom doctor` and
// `taskloom migrate` tell.
func (s *Store) SchemaVersion(ctx context.Context) (applied, latest int, err error) {
	files, err := sqlstore.MigrationFiles(migrations)
	if err != nil {
		return 0, 0, fmt.Errorf("schema version: %w", err)
	}
	var exists bool
	if err := s.read.QueryRowContext(ctx, sqlMigrationsExist).Scan(&exists); err != nil {
		return 0, 0, fmt.Errorf("schema version: %w", err)
	}
	if exists {
		if err := s.read.QueryRowContext(ctx, sqlSchemaVersion).Scan(&applied); err != nil {
			return 0, 0, fmt.Errorf("schema version: %w", err)
		}
	}
	return applied, sqlstore.Latest(files), nil
}

// Migrate applies the embedded migrations not yet recorded in
// schema_migrations, in one IMMEDIATE transaction: another process
// migrating the same file waits for it, then finds nothing to do. It then
// prepares the statements of the write path; a store used without Migrate
// works, parsing each statement as it runs.
func (s *Store) Migrate(ctx context.Context) error {
	files, err := sqlstore.MigrationFiles(migrations)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	err = s.inTx(ctx, func(tx txn) error {
		if _, err := tx.ExecContext(ctx, sqlCreateMigrations); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		rows, err := tx.QueryContext(ctx, sqlAppliedMigrations)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		var applied []int
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return fmt.Errorf("migrate: %w", err)
			}
			applied = append(applied, v)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		todo, err := sqlstore.ToApply(files, applied)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		for _, m := range todo {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migrate: apply %s: %w", m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, sqlRecordMigration, m.Version); err != nil {
				return fmt.Errorf("migrate: record %s: %w", m.Name, err)
			}
		}
		// Rooms with pending rows and no head get one (a head is derived
		// from the rows: sqlMendRoomHeads), at every start.
		if _, err := tx.ExecContext(ctx, sqlMendRoomHeads); err != nil {
			return fmt.Errorf("migrate: mend the outbox's room heads: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.prepare(ctx)
}

// prepare prepares the statements of the write transactions, once the
// schema they name exists.
func (s *Store) prepare(ctx context.Context) error {
	if s.stmts.Load() != nil {
		return nil
	}
	m := map[string]*sql.Stmt{}
	for _, q := range writeStatements {
		st, err := s.write.PrepareContext(ctx, q)
		if err != nil {
			for _, st := range m {
				st.Close()
			}
			return fmt.Errorf("migrate: prepare statements: %w", err)
		}
		m[q] = st
	}
	if !s.stmts.CompareAndSwap(nil, &m) {
		for _, st := range m {
			st.Close()
		}
	}
	return nil
}

// txn is a write transaction that runs the store's prepared statements
// where it has them.
type txn struct {
	*sql.Tx
	stmts map[string]*sql.Stmt
}

func (t txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := t.stmts[q]; st != nil {
		return t.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, q, args...)
}

func (t txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := t.stmts[q]; st != nil {
		return t.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, q, args...)
}

func (t txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := t.stmts[q]; st != nil {
		return t.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, q, args...)
}

// inTx runs fn in an IMMEDIATE transaction on the writer and commits if it
// returns nil. fn's error is returned as it is, so an error a MutateFunc
// returned reaches the caller unchanged.
func (s *Store) inTx(ctx context.Context, fn func(txn) error) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer tx.Rollback()
	t := txn{Tx: tx}
	if m := s.stmts.Load(); m != nil {
		t.stmts = *m
	}
	if err := fn(t); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Times are INTEGER unix microseconds, NULL when zero, read back in UTC.

func timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
