package httpapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestTaskShowsEachCall: a tools reply of two calls, the write succeeded
// and the read failed, shows as two steps of one iteration, each with its
// own action and success, in order; a page may end between them and
// steps_next_call reads on from there; one call reads whole with ?call=.
func TestTaskShowsEachCall(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		n := f.create("Write then read").Number
		f.clk.Advance(time.Second)
		c, err := f.store.ClaimTask(f.ctx, domain.Claim{Owner: "w", Now: f.clk.Now(), Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		o := domain.Outcome{Owner: "w", Fence: c.Fence, Now: f.clk.Now(), Progress: 20,
			Step:  domain.Step{Action: "write_file", Params: []byte(`{"path":"a.md","content":"alpha"}`), Result: "wrote a.md", Success: true, Role: "agent"},
			Steps: []domain.Step{{Action: "read_file", Params: []byte(`{"path":"b.md"}`), Error: "no file b.md", Role: "agent"}}}
		if _, err := f.store.UpdateTask(f.ctx, n, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); err != nil {
			t.Fatal(err)
		}
		f.addSteps(n, 1, 10)

		key := func(r response) string {
			var s string
			for _, st := range r.body["steps"].([]any) {
				m := st.(map[string]any)
				s += fmt.Sprintf("[%v.%v %v %v]", m["iteration"], m["call"], m["action"], m["success"])
			}
			return s
		}
		r := f.do("GET", fmt.Sprintf("/api/tasks/%d", n), nil)
		if want := "[1.0 write_file true][1.1 read_file false][2.0 read_file true]"; r.code != 200 || key(r) != want || r.body["steps_total"] != 3.0 {
			t.Fatalf("task's steps: %d %s, want %s", r.code, key(r), want)
		}
		r = f.do("GET", fmt.Sprintf("/api/tasks/%d?steps=2", n), nil)
		if r.code != 200 || key(r) != "[1.1 read_file false][2.0 read_file true]" || r.body["steps_next"] != 1.0 || r.body["steps_next_call"] != 1.0 {
			t.Fatalf("page of 2: %d %s next %v call %v", r.code, key(r), r.body["steps_next"], r.body["steps_next_call"])
		}
		r = f.do("GET", fmt.Sprintf("/api/tasks/%d?steps=2&before=1&before_call=1", n), nil)
		if r.code != 200 || key(r) != "[1.0 write_file true]" || r.body["steps_next"] != nil {
			t.Fatalf("page before 1.1: %d %s next %v", r.code, key(r), r.body["steps_next"])
		}
		r = f.do("GET", fmt.Sprintf("/api/tasks/%d/steps/1?call=1", n), nil)
		if r.code != 200 || r.body["action"] != "read_file" || r.body["success"] != false || r.body["error"] != "no file b.md" || r.body["call"] != 1.0 {
			t.Fatalf("call 1 of step 1: %d %s", r.code, r.raw)
		}
		r = f.do("GET", fmt.Sprintf("/api/tasks/%d/steps/1", n), nil)
		if r.code != 200 || r.body["action"] != "write_file" || r.body["success"] != true || r.body["call"] != 0.0 {
			t.Fatalf("step 1: %d %s", r.code, r.raw)
		}
		for _, c := range []struct {
			path string
			code int
		}{
			{"/api/tasks/%d/steps/1?call=2", 404},
			{"/api/tasks/%d/steps/1?call=-1", 400},
			{"/api/tasks/%d/steps/1?call=x", 400},
			{"/api/tasks/%d?before_call=1", 400},
			{"/api/tasks/%d?before=1&before_call=-1", 400},
		} {
			if r := f.do("GET", fmt.Sprintf(c.path, n), nil); r.code != c.code || r.body["error"] == nil {
				t.Errorf("GET %s: %d %s, want %d with an error", c.path, r.code, r.raw, c.code)
			}
		}
	})
}
