package actions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// resultKit is a runtime with read_result and two tasks whose steps hold
// the given results.
type resultKit struct {
	t     *testing.T
	rt    *plugin.Runtime
	tasks []domain.Task
}

// newResultKit creates one task per entry of results and records, for
// each, one step per result, in order. An empty result is recorded as a
// failed step.
func newResultKit(t *testing.T, open teststore.Opener, results ...[]string) *resultKit {
	t.Helper()
	ctx := context.Background()
	st := open(t)
	clk := clock.NewFake(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC))
	k := &resultKit{t: t}
	k.rt = plugin.New(plugin.Options{Store: st, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := k.rt.Register(&plugin.Plugin{Name: "tools", Actions: []plugin.Action{actions.ReadResult{}}}); err != nil {
		t.Fatal(err)
	}
	if err := k.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	todo := map[int64][]string{}
	left := 0
	for i, rs := range results {
		task, err := st.CreateTask(ctx, domain.NewTask{Goal: fmt.Sprintf("task %d", i+1), RoomID: "console", RequestorID: "u1", Now: clk.Now()})
		if err != nil {
			t.Fatal(err)
		}
		k.tasks = append(k.tasks, task)
		todo[task.Number] = rs
		left += len(rs)
	}
	// Each claim takes the queue's head; a task with nothing left to
	// record keeps its lease, so the queue hands out the others.
	for left > 0 {
		task, err := st.ClaimTask(ctx, domain.Claim{Owner: "kit", Now: clk.Now(), Lease: time.Hour})
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if len(todo[task.Number]) == 0 {
			continue
		}
		result := todo[task.Number][0]
		todo[task.Number] = todo[task.Number][1:]
		left--
		step := domain.Step{Action: "read_file", Result: result, Success: result != ""}
		if result == "" {
			step.Error = "Cannot read missing.txt."
		}
		o := domain.Outcome{Owner: "kit", Fence: task.Fence, Now: clk.Now(), Step: step, Progress: task.Progress + 1, Verdict: domain.VerdictContinue}
		if _, err := st.UpdateTask(ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); err != nil {
			t.Fatalf("record a step of task #%d: %v", task.Number, err)
		}
		clk.Advance(time.Second)
	}
	return k
}

// read calls read_result as task i (0-based) would.
func (k *resultKit) read(i int, params any) (ok bool, text string) {
	k.t.Helper()
	raw, _ := json.Marshal(params)
	task := k.tasks[i]
	res, err := k.rt.RunAction(context.Background(), "read_result", &plugin.Call{Task: &task, Params: raw})
	if err != nil {
		k.t.Fatalf("read_result %s: unexpected error %v", raw, err)
	}
	if !res.Success {
		return false, res.Error
	}
	return true, res.Text
}

// readOn is the note that ends a page with more to read.
var readOn = regexp.MustCompile(`\n\[… ([\d,]+) more characters: read_result \{"step": (\d+), "offset": (\d+)\}\]$`)

// TestReadResultPagesThroughAStep reads a long result of mixed 1- to
// 4-byte characters by following each page's note: the pages, joined, are
// the result; each is at most tasks.ResultPage characters and says what
// is left.
func TestReadResultPagesThroughAStep(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		long := mixedText(100_000)
		k := newResultKit(t, open, []string{"short", long})
		total := utf8.RuneCountInString(long)
		var b strings.Builder
		offset, pages := 0, 0
		for {
			pages++
			if pages > 100 {
				t.Fatal("read_result never reached the end")
			}
			ok, text := k.read(0, map[string]int{"step": 2, "offset": offset})
			if !ok {
				t.Fatalf("offset %d: %s", offset, text)
			}
			i := strings.LastIndex(text, "\n[")
			page, note := text[:i], text[i:]
			if n := utf8.RuneCountInString(page); n > tasks.ResultPage || !utf8.ValidString(page) {
				t.Fatalf("offset %d: a page of %d characters (valid UTF-8: %v)", offset, n, utf8.ValidString(page))
			}
			b.WriteString(page)
			if note == "\n[end of step 2's result]" {
				break
			}
			m := readOn.FindStringSubmatch(note)
			if m == nil {
				t.Fatalf("offset %d: the note %q says neither what is left nor the end", offset, note)
			}
			next, _ := strconv.Atoi(m[3])
			if m[2] != "2" || next != offset+tasks.ResultPage {
				t.Fatalf("offset %d: the note %q does not read on from the page's end", offset, note)
			}
			if left, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", "")); left != total-next {
				t.Fatalf("offset %d: the note says %d left, want %d", offset, left, total-next)
			}
			offset = next
		}
		if b.String() != long {
			t.Fatalf("the pages joined (%d bytes) differ from the result (%d bytes)", b.Len(), len(long))
		}
		if want := (total + tasks.ResultPage - 1) / tasks.ResultPage; pages != want {
			t.Fatalf("%d pages, want %d", pages, want)
		}
	})
}

func TestReadResultAnswers(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		// Task #1 has three steps, the last failed with no result; task #2
		// has four, so its step 4 exists but is not task #1's.
		k := newResultKit(t, open,
			[]string{"first result", "é日😀 second", ""},
			[]string{"other 1", "other 2", "other 3", "other 4 (secret)"})
		cases := []struct {
			name   string
			task   int
			params any
			ok     bool
			want   string
		}{
			{"a short result whole", 0, map[string]int{"step": 1}, true, "first result\n[end of step 1's result]"},
			{"from an offset in characters", 0, map[string]int{"step": 2, "offset": 2}, true, "😀 second\n[end of step 2's result]"},
			{"each task reads its own step 1", 1, map[string]int{"step": 1}, true, "other 1\n[end of step 1's result]"},
			{"another task's step", 0, map[string]int{"step": 4}, false, "Task #1 has no step 4."},
			{"a step not taken yet", 0, map[string]int{"step": 99}, false, "Task #1 has no step 99."},
			{"step 0", 0, map[string]int{"step": 0}, false, "There is no step 0: steps are numbered from 1."},
			{"no step", 0, map[string]int{"offset": 3}, false, "read_result needs a step"},
			{"offset at the end", 0, map[string]int{"step": 2, "offset": 10}, false, "Step 2's result has 10 characters; there is nothing to read at offset 10."},
			{"offset past the end", 0, map[string]int{"step": 1, "offset": 500}, false, "Step 1's result has 12 characters; there is nothing to read at offset 500."},
			{"negative offset", 0, map[string]int{"step": 1, "offset": -1}, false, "The offset is -1"},
			{"a step with no result", 0, map[string]int{"step": 3}, false, "Step 3 has no result to read."},
			{"not an object", 0, []int{1}, false, "The parameters are not valid"},
		}
		for _, c := range cases {
			ok, got := k.read(c.task, c.params)
			if ok != c.ok || (c.ok && got != c.want) || (!c.ok && !strings.Contains(got, c.want)) {
				t.Errorf("%s: read_result %v as task #%d = %v %q, want %v %q", c.name, c.params, k.tasks[c.task].Number, ok, got, c.ok, c.want)
			}
			if strings.Contains(got, "secret") && c.task == 0 {
				t.Errorf("%s: task #1 read task #2's result: %q", c.name, got)
			}
		}
		res, err := k.rt.RunAction(context.Background(), "read_result", &plugin.Call{Params: json.RawMessage(`{"step":1}`)})
		if err != nil || res.Success || !strings.Contains(res.Error, "cannot be used from chat") {
			t.Fatalf("chat call: %+v %v", res, err)
		}
	})
}
