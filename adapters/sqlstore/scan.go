package sqlstore

import (
	"github.com/taskloom/taskloom/domain"
)

// StepColumns, EventColumns and MemoryColumns are the columns the scanners
// below read, in order.
const (
	StepColumns   = `task_number, iteration, thought, action, params, result, success, error, progress, time, role, call`
	EventColumns  = `id, task_number, sequence, type, payload, actor, fence, time`
	MemoryColumns = `id, platform, message_id, room, workspace_id, author_id, author_name, text, from_bot, created_at, in_reply_to`
)

// StepArgs lists the values of StepColumns for s.
func StepArgs(s domain.Step, timeArg TimeArg) []any {
	return []any{s.TaskNumber, s.Iteration, s.Thought, s.Action, string(s.Params), s.Result,
		s.Success, s.Error, s.Progress, timeArg(s.Time), s.Role, s.Call}
}

// ScanStep reads the columns of StepColumns.
func ScanStep(row Row) (domain.Step, error) {
	var st domain.Step
	var params []byte
	var at Time
	err := row.Scan(&st.TaskNumber, &st.Iteration, &st.Thought, &st.Action, &params,
		&st.Result, &st.Success, &st.Error, &st.Progress, &at, &st.Role, &st.Call)
	st.Params = params
	st.Time = at.T
	return st, err
}

// ClippedStepColumns are StepColumns with the result clipped to the
// number of characters of parameter param, then the size of the whole
// result in bytes: what scanClippedStep reads. Both dialects have substr
// and octet_length, which reads the stored size, not the value.
func ClippedStepColumns(param string) string {
	return `task_number, iteration, thought, action, params, substr(result, 1, ` + param +
		`), success, error, progress, time, role, call, octet_length(result)`
}

// scanClippedStep reads the columns of ClippedStepColumns.
func scanClippedStep(row Row) (domain.Step, error) {
	var st domain.Step
	var params []byte
	var at Time
	err := row.Scan(&st.TaskNumber, &st.Iteration, &st.Thought, &st.Action, &params,
		&st.Result, &st.Success, &st.Error, &st.Progress, &at, &st.Role, &st.Call, &st.ResultBytes)
	st.Params = params
	st.Time = at.T
	return st, err
}

// EventArgs lists the values of EventColumns for e, but its id.
func EventArgs(e domain.TaskEvent, timeArg TimeArg) []any {
	return []any{e.TaskNumber, e.Sequence, e.Type, string(e.Payload), e.Actor, e.Fence, timeArg(e.Time)}
}

// ScanEvent reads the columns of EventColumns.
func ScanEvent(row Row) (domain.TaskEvent, error) {
	var e domain.TaskEvent
	var payload []byte
	var at Time
	err := row.Scan(&e.ID, &e.TaskNumber, &e.Sequence, &e.Type, &payload, &e.Actor, &e.Fence, &at)
	e.Payload = payload
	e.Time = at.T
	return e, err
}

// MemoryArgs lists the values of MemoryColumns for m, but its id, then
// the scope of its room (domain.RoomScope): where it may be recalled.
func MemoryArgs(m domain.Memory, timeArg TimeArg) []any {
	return []any{m.Platform, m.MessageID, m.Room, m.WorkspaceID, m.AuthorID, m.AuthorName,
		m.Text, m.FromBot, timeArg(m.CreatedAt), m.InReplyTo, domain.RoomScope(m.Room)}
}

// ScanMemory reads the columns of MemoryColumns.
func ScanMemory(row Row) (domain.Memory, error) {
	var m domain.Memory
	var at Time
	err := row.Scan(&m.ID, &m.Platform, &m.MessageID, &m.Room, &m.WorkspaceID, &m.AuthorID,
		&m.AuthorName, &m.Text, &m.FromBot, &at, &m.InReplyTo)
	m.CreatedAt = at.T
	return m, err
}

// Rows is a driver's row cursor.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Collect reads every row of rows with scan.
func Collect[T any](rows Rows, scan func(Row) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
