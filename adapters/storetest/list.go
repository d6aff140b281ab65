package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// listFixture creates five tasks in different workspaces, rooms, statuses
// and families:
//
//	#1 guild-a u1 room-1 queued
//	#2 guild-a u2 room-2 paused
//	#3 guild-b u1 room-1 completed, child of #1
//	#4 guild-b u2 room-2 running,   child of #1
//	#5 guild-a u1 room-2 canceled
func listFixture(t *testing.T, s domain.Store) {
	t.Helper()
	rows := []struct {
		ws, user, room string
		parent         int64
	}{
		{"guild-a", "u1", "room-1", 0},
		{"guild-a", "u2", "room-2", 0},
		{"guild-b", "u1", "room-1", 1},
		{"guild-b", "u2", "room-2", 1},
		{"guild-a", "u1", "room-2", 0},
	}
	for i, r := range rows {
		in := newTask(fmt.Sprintf("Listed task %d", i+1))
		in.WorkspaceID, in.RequestorID, in.RoomID, in.ParentNumber = r.ws, r.user, r.room, r.parent
		create(t, s, in)
	}
	update(t, s, 2, func(cur domain.Task) (domain.Mutation, error) { return domain.Paused(cur, "u2", t0) })
	update(t, s, 5, func(cur domain.Task) (domain.Mutation, error) { return domain.Canceled(cur, "u1", "", t0) })
	// The queue serves #1 first; make #3 and #4 the ones claimed.
	update(t, s, 1, func(cur domain.Task) (domain.Mutation, error) { return domain.Paused(cur, "u1", t0) })
	c3 := claim(t, s, "w", t0, time.Hour)
	iterate(t, s, c3, at(time.Second), 100, domain.VerdictDone)
	claim(t, s, "w", at(time.Second), time.Hour)
	update(t, s, 1, func(cur domain.Task) (domain.Mutation, error) { return domain.Resumed(cur, "u1", at(time.Second)) })
	if c3.Number != 3 {
		t.Fatalf("fixture claimed #%d first, want #3", c3.Number)
	}
}

func testListFilters(t *testing.T, s domain.Store) {
	listFixture(t, s)
	cases := []struct {
		name string
		f    domain.TaskFilter
		want []int64
	}{
		{"all", domain.TaskFilter{}, []int64{1, 2, 3, 4, 5}},
		{"one status", domain.TaskFilter{Statuses: []domain.Status{domain.StatusQueued}}, []int64{1}},
		{"active", domain.TaskFilter{Statuses: []domain.Status{domain.StatusQueued, domain.StatusRunning, domain.StatusPaused}}, []int64{1, 2, 4}},
		{"ended", domain.TaskFilter{Statuses: []domain.Status{domain.StatusCompleted, domain.StatusCanceled, domain.StatusFailed}}, []int64{3, 5}},
		{"workspace", domain.TaskFilter{WorkspaceID: "guild-a"}, []int64{1, 2, 5}},
		{"workspace and status", domain.TaskFilter{WorkspaceID: "guild-b", Statuses: []domain.Status{domain.StatusRunning}}, []int64{4}},
		{"requestor", domain.TaskFilter{RequestorID: "u2"}, []int64{2, 4}},
		{"room", domain.TaskFilter{RoomID: "room-1"}, []int64{1, 3}},
		{"parent", domain.TaskFilter{ParentNumber: 1}, []int64{3, 4}},
		// #3 was w's too, until its commit gave the lease back.
		{"lease owner", domain.TaskFilter{LeaseOwner: "w"}, []int64{4}},
		{"another lease owner", domain.TaskFilter{LeaseOwner: "v"}, nil},
		{"everything", domain.TaskFilter{WorkspaceID: "guild-a", RequestorID: "u1", RoomID: "room-2"}, []int64{5}},
		{"query and room", domain.TaskFilter{Query: "task 4", RoomID: "room-2"}, []int64{4}},
		{"nothing", domain.TaskFilter{WorkspaceID: "guild-z"}, nil},
		{"unknown status", domain.TaskFilter{Statuses: []domain.Status{domain.StatusStalemate}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListTasks(t.Context(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(numbers(got), tc.want) {
				t.Errorf("ListTasks = %v, want %v", numbers(got), tc.want)
			}
			n, err := s.CountTasks(t.Context(), tc.f)
			if err != nil || n != len(tc.want) {
				t.Errorf("CountTasks = %d, %v; want %d", n, err, len(tc.want))
			}
		})
	}
	for _, task := range must(s.ListTasks(t.Context(), domain.TaskFilter{}))(t) {
		sameTask(t, "listed task", task, get(t, s, task.Number))
	}
}

func testListPaging(t *testing.T, s domain.Store) {
	listFixture(t, s)
	cases := []struct {
		name string
		f    domain.TaskFilter
		want []int64
	}{
		{"first page", domain.TaskFilter{Limit: 2}, []int64{1, 2}},
		{"second page", domain.TaskFilter{Limit: 2, AfterNumber: 2}, []int64{3, 4}},
		{"last page", domain.TaskFilter{Limit: 2, AfterNumber: 4}, []int64{5}},
		{"past the end", domain.TaskFilter{Limit: 2, AfterNumber: 5}, nil},
		{"recent", domain.TaskFilter{Order: domain.OrderRecent, Limit: 2}, []int64{5, 4}},
		{"recent next page", domain.TaskFilter{Order: domain.OrderRecent, Limit: 2, AfterNumber: 4}, []int64{3, 2}},
		{"recent last page", domain.TaskFilter{Order: domain.OrderRecent, Limit: 2, AfterNumber: 2}, []int64{1}},
		{"page with a filter", domain.TaskFilter{WorkspaceID: "guild-a", Limit: 1, AfterNumber: 1}, []int64{2}},
		// Queue order: the never-processed tasks by number, then #3, the
		// one processed.
		{"queue", domain.TaskFilter{Order: domain.OrderQueue}, []int64{1, 2, 4, 5, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListTasks(t.Context(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(numbers(got), tc.want) {
				t.Errorf("ListTasks = %v, want %v", numbers(got), tc.want)
			}
		})
	}
	if n, err := s.CountTasks(t.Context(), domain.TaskFilter{Limit: 2}); err != nil || n != 5 {
		t.Errorf("CountTasks ignores the limit: got %d, %v; want 5", n, err)
	}
}

func testSearch(t *testing.T, s domain.Store) {
	tasks := []struct{ name, goal string }{
		{"Deploy the API", "Ship v2 to production"},
		{"", "Fix 100% of the flaky tests"},
		{"", "Rename snake_case helpers"},
		{"", "Rename snakeXcase helpers"},
		{"", `Clean C:\temp\new`},
		{"", "Écrire la documentation"},
		{"", "Reach 100 percent coverage"},
	}
	for _, tk := range tasks {
		in := newTask(tk.goal)
		in.Name = tk.name
		create(t, s, in)
	}
	cases := []struct {
		query string
		want  []int64
	}{
		{"deploy", []int64{1}},     // name, other case
		{"api", []int64{1}},        // name
		{"PRODUCTION", []int64{1}}, // goal
		{"100%", []int64{2}},       // % is literal
		{"%", []int64{2}},
		{"snake_case", []int64{3}}, // _ is literal
		{"_", []int64{3}},
		{`\t`, []int64{5}}, // so is the backslash
		{`\`, []int64{5}},
		{"écrire", []int64{6}}, // beyond ASCII
		{"DOCUMENTATION", []int64{6}},
		{"rename", []int64{3, 4}},
		{"100", []int64{2, 7}},
		{"zebra", nil},
		// A NUL, which PostgreSQL refuses in text, finds nothing rather
		// than failing the search (a crafted query got a 500 once);
		// invalid UTF-8 likewise.
		{"deploy\x00", nil},
		{"\x00", nil},
		{"\xff", nil},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			got, err := s.ListTasks(t.Context(), domain.TaskFilter{Query: tc.query})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(numbers(got), tc.want) {
				t.Errorf("search %q = %v, want %v", tc.query, numbers(got), tc.want)
			}
			if n, err := s.CountTasks(t.Context(), domain.TaskFilter{Query: tc.query}); err != nil || n != len(tc.want) {
				t.Errorf("CountTasks(%q) = %d, %v; want %d", tc.query, n, err, len(tc.want))
			}
		})
	}
}

// must turns a (value, error) pair into a function of t that fails the test
// on the error.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
