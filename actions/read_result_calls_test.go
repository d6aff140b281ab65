package actions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestReadResultCalls: read_result reads the result of any call of a
// tools reply of several, each a step of the same iteration ("Step 1.2"
// is its second call), and says so when there is no such call.
func TestReadResultCalls(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newResultKit(t, open, []string{})
		st := k.rt.Store()
		ctx := context.Background()
		now := time.Date(2026, 2, 3, 5, 0, 0, 0, time.UTC)
		c, err := st.ClaimTask(ctx, domain.Claim{Owner: "kit", Now: now, Lease: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		o := domain.Outcome{Owner: "kit", Fence: c.Fence, Now: now, Progress: 10, Verdict: domain.VerdictContinue,
			Step:  domain.Step{Action: "write_file", Result: "wrote a.md", Success: true},
			Steps: []domain.Step{{Action: "read_file", Result: strings.Repeat("é", 9000), Success: true}}}
		if _, err := st.UpdateTask(ctx, c.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			params any
			ok     bool
			want   string
		}{
			{map[string]int{"step": 1}, true, "wrote a.md\n[end of step 1's result]"},
			{map[string]int{"step": 1, "call": 1}, true, "wrote a.md\n[end of step 1's result]"},
			{map[string]int{"step": 1, "call": 2}, true, `read_result {"step": 1, "call": 2, "offset": 8000}]`},
			{map[string]int{"step": 1, "call": 2, "offset": 8000}, true, "\n[end of step 1.2's result]"},
			{map[string]int{"step": 1, "call": 3}, false, "Task #1 has no step 1.3."},
			{map[string]int{"step": 1, "call": 0}, false, "There is no call 0"},
		}
		for _, c := range cases {
			ok, got := k.read(0, c.params)
			if ok != c.ok || (c.ok && !strings.HasSuffix(got, c.want)) || (!c.ok && !strings.Contains(got, c.want)) {
				t.Errorf("read_result %v = %v %q, want %v %q", c.params, ok, clipTail(got), c.ok, c.want)
			}
		}
	})
}

func clipTail(s string) string {
	if r := []rune(s); len(r) > 120 {
		return "…" + string(r[len(r)-120:])
	}
	return s
}
