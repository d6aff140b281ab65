package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is a domain.Store on PostgreSQL: the shared logic of
// adapters/sqlstore over this package's dialect.
type Store struct {
	sqlstore.Core
	sqlstore.Reads
	sqlstore.Records
	sqlstore.Schedules
	sqlstore.MemoryStore
	sqlstore.Dumps
	pool *pgxpool.Pool
	// claimed are the rows this store claimed, which a task's next
	// mutation starts from (sqlstore.RowCache).
	claimed rowCache
	// steps are the latest steps of the tasks it wrote, for the
	// iteration after its next claim of each (stepcache.go).
	steps stepCache
}

var (
	_ domain.Store       = (*Store)(nil)
	_ domain.NextClaimer = (*Store)(nil)
)

// DefaultMaxConns sizes the connection pool unless the URL sets
// pool_max_conns.
const DefaultMaxConns = 16

// Open connects to the database at url (a postgres:// URL or a keyword/value
// string) and checks that it answers. It does not migrate; call Migrate.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	// pgxpool's default (4 on a small machine) is too few once workers,
	// the notification sender, the API and the LISTEN connection share the
	// pool. An explicit pool_max_conns in the URL still wins.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !ok {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	s := &Store{pool: pool}
	s.Core = sqlstore.Core{D: s}
	s.Reads = sqlstore.Reads{DB: poolDB{pool}, SQL: readSQL}
	s.Records = sqlstore.Records{DB: poolDB{pool}, SQL: recordSQL}
	s.Schedules = sqlstore.Schedules{Core: s.Core, DB: poolDB{pool}, SQL: scheduleSQL, Time: timeArg}
	s.MemoryStore = sqlstore.NewMemoryStore(poolDB{pool}, recallSQL)
	s.Dumps = sqlstore.Dumps{Dialect: dumpDialect{s}}
	s.Records.Wrote = s.MemoryStore.Wrote
	if err := s.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	return s, nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}

// Now is the database server's clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, sqlNow).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %w", err)
	}
	return now.UTC(), nil
}

// Close closes every connection.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// SchemaVersion is the version of the latest migration the database has
// applied (0 when it was never migrated) and of the latest this binary
// brings, without changing anything: what `taskloom doctor` and
// `taskloom migrate` tell.
func (s *Store) SchemaVersion(ctx context.Context) (applied, latest int, err error) {
	files, err := sqlstore.MigrationFiles(migrations)
	if err != nil {
		return 0, 0, fmt.Errorf("schema version: %w", err)
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, sqlMigrationsExist).Scan(&exists); err != nil {
		return 0, 0, fmt.Errorf("schema version: %w", err)
	}
	if exists {
		if err := s.pool.QueryRow(ctx, sqlSchemaVersion).Scan(&applied); err != nil {
			return 0, 0, fmt.Errorf("schema version: %w", err)
		}
	}
	return applied, sqlstore.Latest(files), nil
}

// Migrate applies the embedded migrations not yet recorded in
// schema_migrations, each in the one transaction that holds the migration
// lock, so processes that start together apply each migration once.
func (s *Store) Migrate(ctx context.Context) error {
	files, err := sqlstore.MigrationFiles(migrations)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlMigrationLock, int64(migrationLockKey)); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, sqlCreateMigrations); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		rows, err := tx.Query(ctx, sqlAppliedMigrations)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		todo, err := sqlstore.ToApply(files, applied)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		for _, m := range todo {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migrate: apply %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, sqlRecordMigration, m.Version); err != nil {
				return fmt.Errorf("migrate: record %s: %w", m.Name, err)
			}
		}
		// Rooms with pending rows and no head get one (a head is derived
		// from the rows: sqlMendRoomHeads), at every start.
		if _, err := tx.Exec(ctx, sqlMendRoomHeads); err != nil {
			return fmt.Errorf("migrate: mend the outbox's room heads: %w", err)
		}
		return nil
	})
}

// inTx runs fn in a transaction and commits if it returns nil. fn's error
// is returned as it is, so the caller's errors.Is still works and an error
// a MutateFunc returned reaches the caller unchanged.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Times are timestamptz, NULL when zero, read back in UTC.

func timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
