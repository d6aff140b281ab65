package sqlite

import (
	"context"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

// The SQL of task_files (docs/deploy.md); the schema is in
// migrations/0006_task_files.sql.
const (
	fileCols = sqlstore.FileColumns

	sqlTaskFiles = `SELECT ` + fileCols + ` FROM task_files WHERE task_number = ?`

	sqlReadFile = `SELECT ` + fileCols + `, data FROM task_files WHERE task_number = ? AND path = ?`

	sqlPutFile = `
INSERT INTO task_files (task_number, ` + fileCols + `, data) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (task_number, path) DO UPDATE
SET size = excluded.size, sha256 = excluded.sha256, updated_at = excluded.updated_at, data = excluded.data`

	sqlDeleteFile = `DELETE FROM task_files WHERE task_number = ? AND path = ?`

	// sqlCopyFiles copies the files of task ?1 into task ?2, keeping
	// their times: the files did not change.
	sqlCopyFiles = `
INSERT INTO task_files (task_number, ` + fileCols + `, data)
SELECT ?2, ` + fileCols + `, data FROM task_files WHERE task_number = ?1
ON CONFLICT (task_number, path) DO NOTHING`
)

func init() {
	// The writer prepares these with the rest of its statements.
	writeStatements = append(writeStatements, sqlTaskFiles, sqlPutFile, sqlDeleteFile, sqlCopyFiles)
}

func (t dialectTx) TaskFiles(ctx context.Context, task int64) ([]domain.TaskFile, error) {
	rows, err := t.tx.QueryContext(ctx, sqlTaskFiles, task)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scanFile)
}

func (t dialectTx) PutFile(ctx context.Context, task int64, f domain.TaskFile, data []byte) error {
	_, err := t.tx.ExecContext(ctx, sqlPutFile, sqlstore.FileArgs(task, f, data, timeArg)...)
	return err
}

func (t dialectTx) DeleteFile(ctx context.Context, task int64, path string) error {
	_, err := t.tx.ExecContext(ctx, sqlDeleteFile, task, path)
	return err
}

func (t dialectTx) CopyFiles(ctx context.Context, from, to int64) error {
	_, err := t.tx.ExecContext(ctx, sqlCopyFiles, from, to)
	return err
}

func scanFile(r sqlstore.Row) (domain.TaskFile, error) { return sqlstore.ScanFile(r) }
