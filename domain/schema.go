package domain

import "fmt"

// NewerSchemaError refuses a database that a newer Taskloom migrated: its
// schema has versions this binary does not know, and writing to it with
// an older idea of the tables (after a rollback, or beside a replica that
// was upgraded) could lose or corrupt what the newer one keeps.
type NewerSchemaError struct {
	Database int // the newest schema version applied to the database
	Known    int // the newest this binary has
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("the database's schema is at version %d, from a newer Taskloom; this one knows versions up to %d: run the newer Taskloom, or restore the backup taken before it migrated (docs/deploy.md)",
		e.Database, e.Known)
}
