package sqlstore

import (
	"strings"

	"github.com/taskloom/taskloom/domain"
)

// QueryDialect is what the query of ListTasks and CountTasks needs of a
// dialect beyond the SQL both stores share.
type QueryDialect struct {
	// Param is the placeholder of the n-th argument, from 1; it may appear
	// more than once in a query.
	Param func(n int) string
	// AnyOf is "column col holds one of the list in parameter p".
	AnyOf func(col, p string) string
	// List is the list argument of AnyOf.
	List func([]string) any
	// Lower is the function a search lowers both sides with.
	Lower string
	// QueueOrder is the ORDER BY of domain.OrderQueue: never-processed
	// first, then by last_processed_at, then number.
	QueueOrder string
}

// TaskQuery builds the SELECT of ListTasks or, with count, the SELECT
// count(*) of CountTasks, and its arguments.
func TaskQuery(d QueryDialect, f domain.TaskFilter, count bool) (string, []any) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return d.Param(len(args))
	}
	if len(f.Statuses) > 0 {
		s := make([]string, len(f.Statuses))
		for i, st := range f.Statuses {
			s[i] = string(st)
		}
		where = append(where, d.AnyOf("status", arg(d.List(s))))
	}
	for _, eq := range []struct {
		col string
		v   string
	}{{"workspace_id", f.WorkspaceID}, {"requestor_id", f.RequestorID}, {"room_id", f.RoomID}, {"lease_owner", f.LeaseOwner}} {
		if eq.v != "" {
			where = append(where, eq.col+" = "+arg(eq.v))
		}
	}
	if f.ParentNumber != 0 {
		where = append(where, "parent_number = "+arg(f.ParentNumber))
	}
	if f.Query != "" {
		// Cleaned as stored text is: PostgreSQL refuses a NUL or invalid
		// UTF-8 in a parameter, and stored text has neither.
		p := d.Lower + "(" + arg("%"+EscapeLike(domain.CleanText(f.Query))+"%") + ")"
		where = append(where, "("+d.Lower+"(name) LIKE "+p+` ESCAPE '\' OR `+d.Lower+"(goal) LIKE "+p+` ESCAPE '\')`)
	}
	order := "number"
	switch f.Order {
	case domain.OrderNumber:
		if f.AfterNumber != 0 {
			where = append(where, "number > "+arg(f.AfterNumber))
		}
	case domain.OrderRecent:
		order = "number DESC"
		if f.AfterNumber != 0 {
			where = append(where, "number < "+arg(f.AfterNumber))
		}
	case domain.OrderQueue:
		// AfterNumber pages by number, which is not this order: ignored.
		order = d.QueueOrder
	}

	var b strings.Builder
	if count {
		b.WriteString("SELECT count(*) FROM tasks")
	} else {
		b.WriteString("SELECT " + strings.Join(TaskColumns, ", ") + " FROM tasks")
	}
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	if !count {
		b.WriteString(" ORDER BY " + order)
		if f.Limit > 0 {
			b.WriteString(" LIMIT " + arg(f.Limit))
		}
	}
	return b.String(), args
}

// EscapeLike makes s match itself in a LIKE pattern with ESCAPE '\'.
func EscapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
