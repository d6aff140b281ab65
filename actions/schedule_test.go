package actions_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/schedules"
	"github.com/taskloom/taskloom/services/tasks"
)

func TestParseScheduleCommands(t *testing.T) {
	for _, c := range []struct {
		text string
		want actions.Command
	}{
		{"every `0 9 * * 1-5` task summarise yesterday's alerts", actions.Command{Kind: actions.CmdSchedule, Spec: "0 9 * * 1-5", Text: "summarise yesterday's alerts"}},
		{"every @daily task check the backups", actions.Command{Kind: actions.CmdSchedule, Spec: "@daily", Text: "check the backups"}},
		{"Every @every 2h task: poll the feed", actions.Command{Kind: actions.CmdSchedule, Spec: "@every 2h", Text: "poll the feed"}},
		{"/task schedule @hourly task x", actions.Command{Kind: actions.CmdSchedule, Spec: "@hourly", Text: "x"}},
		{"/task schedule every `*/5 * * * *` task goal: y", actions.Command{Kind: actions.CmdSchedule, Spec: "*/5 * * * *", Text: "y"}},
		{"every 2h task x", actions.Command{Kind: actions.CmdSchedule}}, // times that do not read
		{"schedule 9am task x", actions.Command{Kind: actions.CmdSchedule}},
		{"every `0 9 * * *`", actions.Command{Kind: actions.CmdSchedule, Spec: "0 9 * * *"}},
		{"schedules", actions.Command{Kind: actions.CmdSchedules}},
		{"list schedules", actions.Command{Kind: actions.CmdSchedules}},
		{"/task schedule list", actions.Command{Kind: actions.CmdSchedules}},
		{"unschedule #3", actions.Command{Kind: actions.CmdUnschedule, Number: 3}},
		{"pause schedule #4", actions.Command{Kind: actions.CmdPauseSchedule, Number: 4}},
		{"resume schedule 5", actions.Command{Kind: actions.CmdResumeSchedule, Number: 5}},
		{"/task schedule pause 6", actions.Command{Kind: actions.CmdPauseSchedule, Number: 6}},
		{"/task schedule delete 7", actions.Command{Kind: actions.CmdUnschedule, Number: 7}},
		{"pause #4", actions.Command{Kind: actions.CmdPause, Number: 4}},
	} {
		got, ok := actions.ParseCommand(c.text)
		if !ok || got != c.want {
			t.Errorf("ParseCommand(%q) = %+v, %v; want %+v", c.text, got, ok, c.want)
		}
	}
	// Chat that starts with "every" is not a command.
	for _, text := range []string{"every time I ask you forget", "every day at nine would be nice", "schedule a call with Bob tomorrow"} {
		if c, ok := actions.ParseCommand(text); ok {
			t.Errorf("ParseCommand(%q) = %+v; want no command", text, c)
		}
	}
}

func newScheduleChat(t *testing.T) (*chatKit, *schedules.Service) {
	t.Helper()
	k := &chatKit{t: t, ctx: context.Background(), store: teststore.SQLite(t), clk: clock.NewFake(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))}
	k.rt = plugin.New(plugin.Options{Store: k.store, Clock: k.clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	k.svc = tasks.New(tasks.Options{Runtime: k.rt, Owner: "w"})
	sched := schedules.New(schedules.Options{Runtime: k.rt, Strategies: k.svc.Strategies, Admins: []string{"boss"}})
	chat := &actions.Chat{Tasks: k.svc, Schedules: sched, Admins: []string{"boss"}}
	if err := k.rt.Register(&plugin.Plugin{Name: "chat", Actions: actions.Commands(chat)}); err != nil {
		t.Fatal(err)
	}
	if err := k.rt.Start(k.ctx); err != nil {
		t.Fatal(err)
	}
	return k, sched
}

func TestScheduleChat(t *testing.T) {
	k, sched := newScheduleChat(t)
	count := func() int {
		list, err := sched.List(k.ctx, domain.ScheduleCaller{})
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	k.expect("u1", "every `0 9 * * 1-5` task summarise yesterday's alerts",
		"Schedule #1 \"Summarise yesterday's alerts\" created: `0 9 * * 1-5`, next run 2026-08-03 09:00 UTC")

	// Bad input: one sentence, nothing created.
	for _, c := range []struct{ text, want string }{
		{"every `0 25 * * *` task x", "is not valid: end of range (25) above maximum (23)"},
		{"every `* * * *` task x", "expected exactly 5 fields"},
		{"every @every 10s task x", "fires every 10s; the shortest interval allowed is 1m0s."},
		{"every 2h task x", "Say when and what"},
		{"every @daily task", "Say when and what"},
		{"unschedule #99", "There is no schedule #99 here."},
		{"pause schedule #99", "There is no schedule #99 here."},
		{"resume schedule", "Which schedule?"},
		{"unschedule #99999999999999999999", "There is no schedule #99999999999999999999 here."},
	} {
		got := k.say("u1", c.text)
		if !strings.Contains(got, c.want) || strings.Count(got, "\n") > 0 {
			t.Errorf("%q: %q; want one line with %q", c.text, got, c.want)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("%d schedules after refused commands; want 1", n)
	}

	// The 21st schedule of one person is refused.
	for i := 2; i <= domain.MaxSchedulesPerRequestor; i++ {
		k.expect("u1", "every @hourly task goal number "+strings.Repeat("x", i), "created")
	}
	k.expect("u1", "every @hourly task one too many", "Cannot create the schedule: you already have 20 schedules (the limit is 20).")
	if n := count(); n != domain.MaxSchedulesPerRequestor {
		t.Errorf("%d schedules; want %d", n, domain.MaxSchedulesPerRequestor)
	}

	// Someone else may not pause, resume or delete it; the requestor and
	// admins may; another workspace does not see it.
	k.expect("u2", "pause schedule #1", "Only the person who created schedule #1, or an admin, can pause it.")
	k.expect("u2", "unschedule #1", "Only the person who created schedule #1, or an admin, can delete it.")
	k.expect("u1", "pause schedule #1", "There is no schedule #1 here.", inGuild("G2"))
	if sc, _ := k.store.GetSchedule(k.ctx, 1); sc.Paused {
		t.Fatal("paused by someone who may not")
	}
	k.expect("u1", "pause schedule #1", "Schedule #1 \"Summarise yesterday's alerts\" paused.")
	k.expect("boss", "resume schedule #1", "resumed; next run 2026-08-03 09:00 UTC")
	k.expect("mod", "pause schedule #1", "paused", admin)
	k.expect("u1", "schedules", "• #1 \"Summarise yesterday's alerts\" `0 9 * * 1-5` — paused")
	k.expect("u1", "unschedule #1", "Schedule #1 \"Summarise yesterday's alerts\" deleted; its runs are kept.")
	k.expect("u1", "unschedule #1", "There is no schedule #1 here.")
}
