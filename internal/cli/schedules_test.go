package cli_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskloom/taskloom/adapters/demo"
	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/cli"
	"github.com/taskloom/taskloom/services/schedules"
)

// schedules runs `taskloom schedules <args>` against s.
func (s *server) schedules(args ...string) (code int, stdout, stderr string) {
	s.t.Helper()
	var out, errOut bytes.Buffer
	root := &cobra.Command{Use: "taskloom", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(cli.SchedulesCommand(s.env))
	root.SetArgs(append([]string{"schedules"}, args...))
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(s.ctx)
	var ee *cli.ExitError
	switch {
	case err == nil:
		code = 0
	case errors.As(err, &ee):
		code = ee.Code
	default:
		code = -1
	}
	return code, out.String(), errOut.String()
}

func TestSchedulesCommand(t *testing.T) {
	var sched *schedules.Service
	s := newServer(t, demo.New(demo.Options{Think: -1}), "", func(o *httpapi.APIOptions) {
		sched = schedules.New(schedules.Options{Runtime: o.Runtime, MinInterval: time.Minute})
		o.Schedules = sched
	})
	expect := func(wantCode int, want string, args ...string) string {
		t.Helper()
		code, out, errOut := s.schedules(args...)
		if code != wantCode || !strings.Contains(out+errOut, want) {
			t.Fatalf("schedules %q: exit %d\nstdout: %s\nstderr: %s\nwant exit %d and %q", args, code, out, errOut, wantCode, want)
		}
		return out + errOut
	}
	expect(0, "No schedules.")
	expect(0, `Created schedule #1 "Summarise yesterday's alerts" (0 9 * * 1-5); next run 2026-05-06 09:00:00 UTC.`,
		"add", "--cron", "0 9 * * 1-5", "--goal", "Summarise yesterday's alerts")
	expect(0, "2026-05-06 09:00:00 UTC", "list")

	// Bad input: the API's sentence, exit 1; usage mistakes exit 2.
	expect(1, `the cron expression "0 9 * *" is not valid: expected exactly 5 fields`, "add", "--cron", "0 9 * *", "--goal", "x")
	expect(1, "the shortest interval allowed is 1m0s", "add", "--cron", "@every 5s", "--goal", "x")
	expect(2, "add needs --cron and --goal", "add", "--cron", "@daily")
	expect(2, `"x" is not a schedule id`, "pause", "x")
	expect(1, "there is no schedule #9", "pause", "9")
	expect(1, "there is no schedule #9", "rm", "9")
	for i := 2; i <= domain.MaxSchedulesPerRequestor; i++ {
		expect(0, "Created schedule", "add", "--cron", "@hourly", "--goal", "goal "+strings.Repeat("x", i))
	}
	expect(1, "you already have 20 schedules (the limit is 20)", "add", "--cron", "@hourly", "--goal", "one too many")

	// Someone else's (a chat user's) schedule: the API's caller is an
	// admin, as with tasks.
	theirs, err := sched.Create(s.ctx, domain.NewSchedule{Cron: "@daily", Goal: "Theirs", RequestorID: "u1", WorkspaceID: "g1"})
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(theirs.ID, 10)
	expect(0, "is paused", "pause", id)
	expect(0, "is running; next run 2026-05-07 00:00:00 UTC", "resume", "#"+id)
	out := expect(0, "Events, newest first", "show", id)
	if !strings.Contains(out, "resumed") || !strings.Contains(out, "paused") || !strings.Contains(out, "Goal: Theirs") {
		t.Errorf("show:\n%s", out)
	}
	expect(0, "Deleted schedule #"+id, "rm", id)
	if _, err := sched.Get(s.ctx, theirs.ID, domain.ScheduleCaller{}); !errors.Is(err, domain.ErrScheduleNotFound) {
		t.Errorf("after rm: %v", err)
	}
	if code, out, _ := s.schedules("--json"); code != 0 || !strings.HasPrefix(out, `{`) || !strings.Contains(out, `"schedules"`) {
		t.Errorf("--json: %d %s", code, out)
	}
}
