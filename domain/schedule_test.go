package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

func TestParseCronSaysWhatIsWrong(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"", "empty"},
		{"* * * *", "expected exactly 5 fields"},
		{"61 * * * *", "not valid"},
		{"@fortnightly", "not valid"},
		{"CRON_TZ=Mars/Olympus 0 9 * * *", "not valid"},
		{strings.Repeat("1", 300), "longer than"},
	} {
		_, err := domain.ParseCron(c.expr)
		if !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseCron(%q) = %v; want ErrInvalid saying %q on one line", c.expr, err, c.want)
		}
	}
	for _, ok := range []string{"0 9 * * 1-5", "@daily", "@every 2h", "CRON_TZ=Europe/Berlin 0 2 * * *"} {
		if _, err := domain.ParseCron(ok); err != nil {
			t.Errorf("ParseCron(%q) = %v", ok, err)
		}
	}
}

func TestScheduleMinInterval(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	in := domain.NewSchedule{Cron: "@every 30s", Goal: "g", Now: now}
	if _, err := domain.ValidateSchedule(in); err == nil || !strings.Contains(err.Error(), "shortest interval allowed is 1m0s") {
		t.Errorf("@every 30s = %v; want the default minute refused", err)
	}
	// Measured between the next two runs: `*/5 * * * *` is five minutes
	// apart whenever it is asked.
	in.Cron, in.MinInterval = "*/5 * * * *", 5*time.Minute
	if _, err := domain.ValidateSchedule(in); err != nil {
		t.Errorf("*/5 with a five-minute minimum: %v", err)
	}
	in.Cron = "0,1 * * * *" // one minute apart, then 59
	if _, err := domain.ValidateSchedule(in); err == nil {
		t.Errorf("0,1 * * * * passed a five-minute minimum")
	}
}

// runs walks a schedule's due times from `from` as the scheduler does:
// each one fires at its time and the next is decided then.
func runs(t *testing.T, expr string, from time.Time, n int) []time.Time {
	t.Helper()
	sc, err := domain.ValidateSchedule(domain.NewSchedule{Cron: expr, Goal: "g", Now: from})
	if err != nil {
		t.Fatal(err)
	}
	cron, _ := domain.ParseCron(expr)
	var out []time.Time
	for range n {
		out = append(out, sc.NextRunAt)
		d := domain.DecideRun(sc, cron, sc.NextRunAt, nil)
		if !d.Run || d.Event.Type != domain.ScheduleFired {
			t.Fatalf("at %v: %+v", sc.NextRunAt, d)
		}
		sc.NextRunAt = d.Next
	}
	return out
}

func utc(s string) time.Time {
	t, err := time.Parse(time.DateTime, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestScheduleDST: in Berlin, 02:00 does not exist on the night clocks go
// forward (2026-03-29): robfig/cron skips that day, and so does the
// schedule. 02:30 happens twice on the night they go back (2026-10-25):
// robfig/cron names both, and the schedule runs once, at the first. 01:30
// is once on either night.
func TestScheduleDST(t *testing.T) {
	for _, c := range []struct {
		expr string
		from time.Time
		want []string
	}{
		{"CRON_TZ=Europe/Berlin 0 2 * * *", utc("2026-03-27 12:00:00"),
			[]string{"2026-03-28 01:00:00", "2026-03-30 00:00:00", "2026-03-31 00:00:00"}},
		{"CRON_TZ=Europe/Berlin 30 1 * * *", utc("2026-10-23 12:00:00"),
			[]string{"2026-10-23 23:30:00", "2026-10-24 23:30:00", "2026-10-26 00:30:00"}},
		{"CRON_TZ=Europe/Berlin 30 2 * * *", utc("2026-10-23 12:00:00"),
			[]string{"2026-10-24 00:30:00", "2026-10-25 00:30:00", "2026-10-26 01:30:00"}},
	} {
		got := runs(t, c.expr, c.from, len(c.want))
		for i, w := range c.want {
			if !got[i].Equal(utc(w)) {
				t.Errorf("%s: run %d at %v; want %s UTC (all: %v)", c.expr, i, got[i], w, got)
			}
		}
	}
}

func TestDecideRun(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cron, _ := domain.ParseCron("@every 3s")
	sc := domain.Schedule{Cron: "@every 3s", NextRunAt: t0.Add(3 * time.Second), Overlap: domain.OverlapSkip, CatchUp: domain.CatchUpOne}
	active := []domain.Task{{Number: 7, Status: domain.StatusRunning}}
	failed := []domain.Task{{Status: domain.StatusFailed}, {Status: domain.StatusStalemate}, {Status: domain.StatusFailed}}
	for _, c := range []struct {
		name    string
		edit    func(*domain.Schedule)
		now     time.Duration
		runs    []domain.Task
		run     bool
		event   string
		nextSec int
	}{
		{"on time", nil, 3, nil, true, domain.ScheduleFired, 6},
		{"late, within the next", nil, 5, nil, true, domain.ScheduleFired, 8},
		{"missed three", nil, 10, nil, true, domain.ScheduleCaughtUp, 13},
		{"missed, none", func(s *domain.Schedule) { s.CatchUp = domain.CatchUpNone }, 10, nil, false, domain.ScheduleMissed, 13},
		{"overlap skip", nil, 3, active, false, domain.ScheduleSkipped, 6},
		{"overlap allow", func(s *domain.Schedule) { s.Overlap = domain.OverlapAllow }, 3, active, true, domain.ScheduleFired, 6},
		{"three failures", nil, 3, failed, false, domain.ScheduleAutoPaused, 6},
		{"two failures", nil, 3, failed[:2], true, domain.ScheduleFired, 6},
		// Resumed since: the failures that paused it are not counted.
		{"three failures before the resume", func(s *domain.Schedule) { s.ResumedAt = t0.Add(time.Second) }, 3, failed, true, domain.ScheduleFired, 6},
		{"ninth skip", func(s *domain.Schedule) { s.Skips = domain.MaxScheduleSkips - 2 }, 3, active, false, domain.ScheduleSkipped, 6},
		{"tenth skip", func(s *domain.Schedule) { s.Skips = domain.MaxScheduleSkips - 1 }, 3, active, false, domain.ScheduleAutoPaused, 6},
	} {
		s := sc
		if c.edit != nil {
			c.edit(&s)
		}
		d := domain.DecideRun(s, cron, t0.Add(c.now*time.Second), c.runs)
		if d.Run != c.run || d.Event.Type != c.event || !d.Next.Equal(t0.Add(time.Duration(c.nextSec)*time.Second)) {
			t.Errorf("%s: %+v", c.name, d)
		}
	}
}
