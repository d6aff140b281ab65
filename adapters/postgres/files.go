package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

// The SQL of task_files (docs/deploy.md); the schema is in
// migrations/0007_task_files.sql.
const (
	fileCols = sqlstore.FileColumns

	sqlTaskFiles = `SELECT ` + fileCols + ` FROM task_files WHERE task_number = $1`

	sqlReadFile = `SELECT ` + fileCols + `, data FROM task_files WHERE task_number = $1 AND path = $2`

	sqlPutFile = `
INSERT INTO task_files (task_number, ` + fileCols + `, data) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (task_number, path) DO UPDATE
SET size = EXCLUDED.size, sha256 = EXCLUDED.sha256, updated_at = EXCLUDED.updated_at, data = EXCLUDED.data`

	sqlDeleteFile = `DELETE FROM task_files WHERE task_number = $1 AND path = $2`

	// sqlCopyFiles copies the files of task $1 into task $2, keeping
	// their times: the files did not change.
	sqlCopyFiles = `
INSERT INTO task_files (task_number, ` + fileCols + `, data)
SELECT $2, ` + fileCols + `, data FROM task_files WHERE task_number = $1
ON CONFLICT (task_number, path) DO NOTHING`
)

func (t *txn) TaskFiles(ctx context.Context, task int64) ([]domain.TaskFile, error) {
	rows, err := t.query(ctx, sqlTaskFiles, task)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scanFile)
}

// sqlCheckFiles is migration 0021's check of a task's files: $1 the task,
// $2 the paths written, $3 and $4 the limits of files and bytes.
const sqlCheckFiles = `SELECT taskloom_check_files($1, $2, $3, $4)`

// sqlPutFileChecked is sqlPutFile and then, in the same statement, the
// check of the task's files ($7 the paths written, $8 and $9 the limits):
// the function is VOLATILE, so it sees the row the statement wrote, and
// it runs on the row the write returns, after it.
const sqlPutFileChecked = `WITH put AS (` + sqlPutFile + `
RETURNING 1)
SELECT taskloom_check_files($1, $7, $8, $9) FROM put`

var _ sqlstore.FileChecker = (*txn)(nil)

// CheckFiles queues the check after the writes, to run in the same
// pipeline: a breach fails the transaction, and Store.Write reports it as
// the FileError it is (fileRefusal). When the last statement queued is a
// write of one of the task's files, the check is folded into it
// (sqlPutFileChecked): one statement less to parse, bind and run.
func (t *txn) CheckFiles(_ context.Context, task int64, written []string) error {
	n := len(t.batch.QueuedQueries)
	if q := t.lastPut; q != nil && t.lastPutTask == task && n > 0 && t.batch.QueuedQueries[n-1] == q {
		t.lastPut = nil
		q.SQL = sqlPutFileChecked
		q.Arguments = append(q.Arguments, written, domain.MaxTaskFiles, int64(domain.MaxTaskFileBytes))
		return nil
	}
	t.batch.Queue(sqlCheckFiles, task, written, domain.MaxTaskFiles, int64(domain.MaxTaskFileBytes))
	return nil
}

// The SQLSTATEs taskloom_check_files raises: a limit, a misplaced file.
const (
	sqlstateFileLimit = "TL001"
	sqlstateFilePlace = "TL002"
)

// fileRefusal turns taskloom_check_files' refusal in err into a
// domain.FileError; any other err is returned as it is.
func fileRefusal(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case sqlstateFileLimit:
		return fmt.Errorf("files: %w", &domain.FileError{Reason: pe.Message, Err: domain.ErrLimit})
	case sqlstateFilePlace:
		return fmt.Errorf("files: %w", &domain.FileError{Reason: pe.Message, Err: domain.ErrInvalid})
	}
	return err
}

func (t *txn) PutFile(_ context.Context, task int64, f domain.TaskFile, data []byte) error {
	t.lastPut, t.lastPutTask = t.batch.Queue(sqlPutFile, sqlstore.FileArgs(task, f, data, timeArg)...), task
	return nil
}

func (t *txn) DeleteFile(_ context.Context, task int64, path string) error {
	t.batch.Queue(sqlDeleteFile, task, path)
	return nil
}

func (t *txn) CopyFiles(_ context.Context, from, to int64) error {
	t.batch.Queue(sqlCopyFiles, from, to)
	return nil
}

func scanFile(r sqlstore.Row) (domain.TaskFile, error) { return sqlstore.ScanFile(r) }
