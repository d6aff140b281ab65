package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// addSteps writes n steps to task number, each result long characters
// of which the first say which step it is.
func (f *fixture) addSteps(number int64, n, long int) {
	f.t.Helper()
	for i := 1; i <= n; i++ {
		f.clk.Advance(time.Second)
		c, err := f.store.ClaimTask(f.ctx, domain.Claim{Owner: "w", Now: f.clk.Now(), Lease: time.Minute})
		if err != nil || c.Number != number {
			f.t.Fatalf("claim: #%d %v", c.Number, err)
		}
		res := fmt.Sprintf("result %d ", c.Iteration+1)
		res += strings.Repeat("é", max(long-len([]rune(res)), 0))
		o := domain.Outcome{Owner: "w", Fence: c.Fence, Now: f.clk.Now(), Progress: i % 100,
			Step: domain.Step{Action: "read_file", Params: []byte(`{"path":"a.txt"}`), Result: res, Success: true}}
		if _, err := f.store.UpdateTask(f.ctx, number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); err != nil {
			f.t.Fatal(err)
		}
	}
}

// stepIterations lists the iterations of a page's steps.
func stepIterations(r response) []int {
	var out []int
	for _, s := range r.body["steps"].([]any) {
		out = append(out, int(s.(map[string]any)["iteration"].(float64)))
	}
	return out
}

func span(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestTaskShowsAPageOfSteps: GET /api/tasks/{n} shows the latest steps,
// their results clipped, the count of all and where the older ones start;
// following steps_next reads every step once; one step reads whole.
func TestTaskShowsAPageOfSteps(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		n := f.create("Read a lot").Number
		f.addSteps(n, 45, 9000)

		r := f.do("GET", "/api/tasks/1", nil)
		if r.code != 200 || r.body["steps_total"] != 45.0 || r.body["steps_next"] != 26.0 || !slices.Equal(stepIterations(r), span(26, 45)) {
			t.Fatalf("first page: %d total %v next %v steps %v", r.code, r.body["steps_total"], r.body["steps_next"], stepIterations(r))
		}
		last := r.body["steps"].([]any)[19].(map[string]any)
		res := last["result"].(string)
		if !strings.HasPrefix(res, "result 45 ") || len([]rune(res)) != 8000 || last["result_clipped"] != true || last["result_bytes"] != float64(len("result 45 ")+2*(9000-10)) {
			t.Errorf("step 45: %d characters of result, clipped %v, %v bytes", len([]rune(res)), last["result_clipped"], last["result_bytes"])
		}

		// Paging back reads every step, once.
		var seen []int
		next := r.body["steps_next"]
		seen = append(seen, stepIterations(r)...)
		for next != nil {
			r = f.do("GET", fmt.Sprintf("/api/tasks/1?steps=7&before=%d", int(next.(float64))), nil)
			if r.code != 200 || r.body["steps_total"] != 45.0 {
				t.Fatalf("page before %v: %d %v", next, r.code, r.raw)
			}
			seen = append(stepIterations(r), seen...)
			next = r.body["steps_next"]
		}
		if !slices.Equal(seen, span(1, 45)) {
			t.Errorf("the pages hold %v", seen)
		}

		r = f.do("GET", "/api/tasks/1?steps=0", nil)
		if r.code != 200 || len(r.body["steps"].([]any)) != 0 || r.body["steps_total"] != 45.0 || r.body["steps_next"] != nil || r.body["number"] != 1.0 {
			t.Errorf("steps=0: %d %v", r.code, r.body)
		}

		r = f.do("GET", "/api/tasks/1/steps/45", nil)
		if r.code != 200 || r.body["iteration"] != 45.0 || len([]rune(r.body["result"].(string))) != 9000 || r.body["result_clipped"] != false {
			t.Errorf("step 45 whole: %d %v", r.code, r.body["iteration"])
		}
		for _, c := range []struct {
			path string
			code int
		}{
			{"/api/tasks/1?steps=101", 400},
			{"/api/tasks/1?steps=-1", 400},
			{"/api/tasks/1?before=0", 400},
			{"/api/tasks/1?before=x", 400},
			{"/api/tasks/1/steps/46", 404},
			{"/api/tasks/1/steps/0", 400},
			{"/api/tasks/1/steps/x", 400},
			{"/api/tasks/99/steps/1", 404},
		} {
			if r := f.do("GET", c.path, nil); r.code != c.code || r.body["error"] == nil {
				t.Errorf("GET %s: %d %s, want %d with an error", c.path, r.code, r.raw, c.code)
			}
		}
	})
}
