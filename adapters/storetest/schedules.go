package storetest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// The schedule cases (docs/schedules.md).

func newSchedule(cron, goal string) domain.NewSchedule {
	return domain.NewSchedule{
		Cron: cron, Goal: goal, RequestorID: "u1", Platform: "discord", Room: "room-1",
		WorkspaceID: "guild-1", Actor: "u1", MinInterval: time.Second, Now: t0,
	}
}

func createSchedule(t *testing.T, s domain.Store, in domain.NewSchedule) domain.Schedule {
	t.Helper()
	sc, err := s.CreateSchedule(t.Context(), in)
	if err != nil {
		t.Fatalf("CreateSchedule(%q): %v", in.Cron, err)
	}
	return sc
}

func fire(t *testing.T, s domain.Store, now time.Time, maxActive int) domain.ScheduleFiring {
	t.Helper()
	f, err := s.FireSchedule(t.Context(), domain.FireSchedule{Now: now, MaxActive: maxActive})
	if err != nil {
		t.Fatalf("FireSchedule at %v: %v", now, err)
	}
	return f
}

func noFire(t *testing.T, s domain.Store, now time.Time) {
	t.Helper()
	f, err := s.FireSchedule(t.Context(), domain.FireSchedule{Now: now})
	if !errors.Is(err, domain.ErrNoScheduleDue) {
		t.Fatalf("FireSchedule at %v = %+v, %v; want ErrNoScheduleDue", now, f, err)
	}
}

func scheduleEvents(t *testing.T, s domain.Store, id int64) []string {
	t.Helper()
	evs, err := s.ScheduleEvents(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(evs) - 1; i >= 0; i-- {
		out = append(out, evs[i].Type)
	}
	return out
}

// testScheduleCreate: a schedule is stored with its first due time and
// defaults; a bad expression, an interval below the minimum, a bad policy
// and the requestor's schedule past the limit are refused and write
// nothing.
func testScheduleCreate(t *testing.T, s domain.Store) {
	ctx := t.Context()
	in := newSchedule("@every 3s", "Summarise yesterday's alerts")
	in.Strategy = "react"
	sc := createSchedule(t, s, in)
	if sc.ID <= 0 || sc.Overlap != domain.OverlapSkip || sc.CatchUp != domain.CatchUpOne || sc.Paused ||
		!sc.NextRunAt.Equal(at(3*time.Second)) || sc.Name != "Summarise yesterday's alerts" || sc.Strategy != "react" {
		t.Fatalf("created %+v", sc)
	}
	got, err := s.GetSchedule(ctx, sc.ID)
	if err != nil || got != sc {
		t.Fatalf("GetSchedule = %+v, %v; want %+v", got, err, sc)
	}
	if evs := scheduleEvents(t, s, sc.ID); len(evs) != 1 || evs[0] != domain.ScheduleCreated {
		t.Errorf("events %v; want created", evs)
	}
	if due, err := s.NextScheduleDue(ctx); err != nil || !due.Equal(sc.NextRunAt) {
		t.Errorf("NextScheduleDue = %v, %v; want %v", due, err, sc.NextRunAt)
	}
	if _, err := s.GetSchedule(ctx, sc.ID+100); !errors.Is(err, domain.ErrScheduleNotFound) {
		t.Errorf("GetSchedule(unknown) = %v; want ErrScheduleNotFound", err)
	}

	bad := []struct {
		name string
		edit func(*domain.NewSchedule)
		want string
	}{
		{"bad expression", func(n *domain.NewSchedule) { n.Cron = "61 * * * *" }, "not valid"},
		{"four fields", func(n *domain.NewSchedule) { n.Cron = "* * * *" }, "not valid"},
		{"empty", func(n *domain.NewSchedule) { n.Cron = " " }, "empty"},
		{"below the minimum", func(n *domain.NewSchedule) { n.Cron = "@every 2s"; n.MinInterval = 3 * time.Second }, "shortest interval"},
		{"never", func(n *domain.NewSchedule) { n.Cron = "0 0 30 2 *" }, "never fires"},
		{"overlap", func(n *domain.NewSchedule) { n.Overlap = "sometimes" }, "overlap"},
		{"catch_up", func(n *domain.NewSchedule) { n.CatchUp = "all" }, "catch_up"},
		{"goal", func(n *domain.NewSchedule) { n.Goal = "  " }, "goal"},
	}
	for _, b := range bad {
		n := newSchedule("@every 3s", "x")
		b.edit(&n)
		_, err := s.CreateSchedule(ctx, n)
		if !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: CreateSchedule = %v; want ErrInvalid saying %q", b.name, err, b.want)
		}
	}
	// The default minimum is a minute, measured between the next two runs.
	n := newSchedule("* * * * *", "every minute")
	n.MinInterval = 0
	createSchedule(t, s, n)
	n.Cron = "@every 59s"
	if _, err := s.CreateSchedule(ctx, n); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("@every 59s with the default minimum = %v; want ErrInvalid", err)
	}

	// u1 has 2; 18 more reach the limit, the 21st is refused.
	for i := range domain.MaxSchedulesPerRequestor - 2 {
		createSchedule(t, s, newSchedule("@hourly", fmt.Sprintf("goal %d", i)))
	}
	if _, err := s.CreateSchedule(ctx, newSchedule("@hourly", "one too many")); !errors.Is(err, domain.ErrLimit) {
		t.Fatalf("21st schedule = %v; want ErrLimit", err)
	}
	other := newSchedule("@hourly", "someone else's")
	other.RequestorID = "u2"
	createSchedule(t, s, other)
	mine, err := s.ListSchedules(ctx, domain.ScheduleFilter{RequestorID: "u1"})
	if err != nil || len(mine) != domain.MaxSchedulesPerRequestor {
		t.Fatalf("ListSchedules(u1) = %d, %v; want %d", len(mine), err, domain.MaxSchedulesPerRequestor)
	}
	all, err := s.ListSchedules(ctx, domain.ScheduleFilter{})
	if err != nil || len(all) != domain.MaxSchedulesPerRequestor+1 || all[0].ID != sc.ID {
		t.Fatalf("ListSchedules() = %d, %v", len(all), err)
	}
	if none, _ := s.ListSchedules(ctx, domain.ScheduleFilter{WorkspaceID: "elsewhere"}); len(none) != 0 {
		t.Errorf("ListSchedules(elsewhere) = %d schedules", len(none))
	}
}

// testScheduleFire: a due schedule creates its run, a task with the
// schedule's goal, room, requestor and strategy that names it, and moves
// its next due time on; the same due time does not fire again.
func testScheduleFire(t *testing.T, s domain.Store) {
	in := newSchedule("@every 3s", "Check the alerts")
	in.Strategy = "react"
	sc := createSchedule(t, s, in)
	noFire(t, s, at(2*time.Second))
	f := fire(t, s, at(3*time.Second), 0)
	run := f.Task
	if run.Number == 0 || run.ScheduleID != sc.ID || run.Goal != sc.Goal || run.RoomID != "room-1" ||
		run.RequestorID != "u1" || run.Strategy != "react" || run.WorkspaceID != "guild-1" || run.Status != domain.StatusQueued {
		t.Fatalf("run %+v", run)
	}
	if stored := get(t, s, run.Number); stored.ScheduleID != sc.ID {
		t.Errorf("stored run has schedule_id %d", stored.ScheduleID)
	}
	check(t, s, run.Number)
	if evs := events(t, s, run.Number); len(evs) != 1 || evs[0].Type != domain.EventCreated || evs[0].Actor != fmt.Sprintf("schedule #%d", sc.ID) {
		t.Errorf("run's events %+v; want one created by schedule #%d", evs, sc.ID)
	}
	if f.Event.Type != domain.ScheduleFired || f.Event.TaskNumber != run.Number {
		t.Errorf("event %+v", f.Event)
	}
	if !f.Schedule.NextRunAt.Equal(at(6*time.Second)) || f.Schedule.LastTask != run.Number || !f.Schedule.LastRunAt.Equal(at(3*time.Second)) {
		t.Errorf("after firing %+v", f.Schedule)
	}
	if got, _ := s.GetSchedule(t.Context(), sc.ID); got != f.Schedule {
		t.Errorf("stored %+v; want %+v", got, f.Schedule)
	}
	noFire(t, s, at(3*time.Second))
	noFire(t, s, at(5*time.Second))
	if evs := scheduleEvents(t, s, sc.ID); strings.Join(evs, ",") != "created,fired" {
		t.Errorf("events %v", evs)
	}
}

// testScheduleFireConcurrent: replicas firing the same due time at once
// create one run between them.
func testScheduleFireConcurrent(t *testing.T, s domain.Store) {
	sc := createSchedule(t, s, newSchedule("@every 3s", "Once only"))
	var wg sync.WaitGroup
	var mu sync.Mutex
	fired := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := s.FireSchedule(t.Context(), domain.FireSchedule{Now: at(3 * time.Second)})
			if errors.Is(err, domain.ErrNoScheduleDue) {
				return
			}
			if err != nil {
				t.Errorf("FireSchedule: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if f.Task.Number != 0 {
				fired++
			}
		}()
	}
	wg.Wait()
	runs, err := s.ListTasks(t.Context(), domain.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if fired != 1 || len(runs) != 1 || runs[0].ScheduleID != sc.ID {
		t.Fatalf("%d firings made a run, %d tasks; want one of each", fired, len(runs))
	}
}

// testScheduleOverlap: with overlap skip, a due time whose previous run
// has not ended makes no run and records why; with allow it starts
// another.
func testScheduleOverlap(t *testing.T, s domain.Store) {
	skip := createSchedule(t, s, newSchedule("@every 3s", "Skip while running"))
	in := newSchedule("@every 3s", "Allow overlap")
	in.Overlap = domain.OverlapAllow
	allow := createSchedule(t, s, in)

	first := map[int64]int64{}
	for range 2 {
		f := fire(t, s, at(3*time.Second), 0)
		first[f.Schedule.ID] = f.Task.Number
	}
	// Both runs are still queued at the next due time.
	got := map[int64]domain.ScheduleFiring{}
	for range 2 {
		f := fire(t, s, at(6*time.Second), 0)
		got[f.Schedule.ID] = f
	}
	if f := got[skip.ID]; f.Task.Number != 0 || f.Event.Type != domain.ScheduleSkipped || f.Event.TaskNumber != first[skip.ID] ||
		!strings.Contains(f.Event.Detail, "has not ended") || !f.Schedule.NextRunAt.Equal(at(9*time.Second)) {
		t.Errorf("skip: %+v", f)
	}
	if f := got[allow.ID]; f.Task.Number == 0 || f.Event.Type != domain.ScheduleFired {
		t.Errorf("allow: %+v; want a second run", f)
	}
	// Once the run has ended, the next due time runs again.
	update(t, s, first[skip.ID], func(cur domain.Task) (domain.Mutation, error) {
		return domain.Canceled(cur, "u1", "", at(7*time.Second))
	})
	for range 2 {
		f := fire(t, s, at(9*time.Second), 0)
		if f.Schedule.ID == skip.ID && f.Task.Number == 0 {
			t.Errorf("skip after its run ended: %+v", f)
		}
	}
}

// testScheduleCatchUp: due times missed while no replica ran become one
// run at once with catch_up one, none with catch_up none; either way the
// next due time is the first after the time of that start.
func testScheduleCatchUp(t *testing.T, s domain.Store) {
	one := createSchedule(t, s, newSchedule("@every 3s", "Catch up once"))
	in := newSchedule("@every 3s", "Do not catch up")
	in.CatchUp = domain.CatchUpNone
	none := createSchedule(t, s, in)
	// Down from before the first due time (3s) until past the third (9s).
	start := at(10 * time.Second)
	got := map[int64]domain.ScheduleFiring{}
	for range 2 {
		f := fire(t, s, start, 0)
		got[f.Schedule.ID] = f
	}
	noFire(t, s, start)
	if f := got[one.ID]; f.Task.Number == 0 || f.Event.Type != domain.ScheduleCaughtUp || !f.Schedule.NextRunAt.Equal(at(13*time.Second)) {
		t.Errorf("catch_up one: %+v", f)
	}
	if f := got[none.ID]; f.Task.Number != 0 || f.Event.Type != domain.ScheduleMissed || !f.Schedule.NextRunAt.Equal(at(13*time.Second)) {
		t.Errorf("catch_up none: %+v", f)
	}
	runs, _ := s.ListTasks(t.Context(), domain.TaskFilter{})
	if len(runs) != 1 {
		t.Errorf("%d runs; want one", len(runs))
	}
	// A due time a little late (less than the next one, within the
	// grace) is on time, whatever catch_up says.
	f := fire(t, s, at(14*time.Second), 0)
	f2 := fire(t, s, at(14*time.Second), 0)
	for _, f := range []domain.ScheduleFiring{f, f2} {
		if f.Schedule.ID == none.ID && (f.Task.Number == 0 || f.Event.Type != domain.ScheduleFired) {
			t.Errorf("late by a second: %+v", f)
		}
	}
}

// testScheduleLimit: a due time at which the requestor is at their limit
// of active tasks makes no run; the schedule records why and tells its
// room, in the same transaction.
func testScheduleLimit(t *testing.T, s domain.Store) {
	create(t, s, newTask("Already running"))
	sc := createSchedule(t, s, newSchedule("@every 3s", "Over the limit"))
	f := fire(t, s, at(3*time.Second), 1)
	if f.Task.Number != 0 || f.Event.Type != domain.ScheduleSkipped || !strings.Contains(f.Event.Detail, "limit is 1") {
		t.Fatalf("at the limit: %+v", f)
	}
	rows, err := s.ListNotifications(t.Context(), "", 0, 0)
	if err != nil || len(rows) != 1 || rows[0].Room != "room-1" || rows[0].Category != domain.NotifyMessage {
		t.Fatalf("notifications %+v, %v; want one line in room-1", rows, err)
	}
	var p struct{ Text string }
	if json.Unmarshal(rows[0].Payload, &p) != nil || !strings.Contains(p.Text, fmt.Sprintf("#%d", sc.ID)) || !strings.Contains(p.Text, "skipped") {
		t.Errorf("line %s", rows[0].Payload)
	}
	if f := fire(t, s, at(6*time.Second), 5); f.Task.Number == 0 {
		t.Errorf("under the limit: %+v", f)
	}
}

// failRuns fires schedule runs at the due times given and fails each.
func failRuns(t *testing.T, s domain.Store, dues ...time.Time) {
	t.Helper()
	for i, due := range dues {
		f := fire(t, s, due, 0)
		if f.Task.Number == 0 {
			t.Fatalf("due time %d (%v) made no run: %+v", i+1, due, f)
		}
		c := claim(t, s, "w", due, time.Minute)
		o := outcome(c, due.Add(time.Second), 10, domain.VerdictStuck)
		o.Reason = "no access"
		if got := update(t, s, c.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); got.Status != domain.StatusFailed {
			t.Fatalf("run #%d is %s", c.Number, got.Status)
		}
	}
}

// roomLines reads the text of the lines the store queued for rooms, in
// order.
func roomLines(t *testing.T, s domain.Store) []string {
	t.Helper()
	rows, err := s.ListNotifications(t.Context(), "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rows, func(a, b domain.Notification) int { return cmp.Compare(a.ID, b.ID) })
	var out []string
	for _, n := range rows {
		var p struct{ Text string }
		if err := json.Unmarshal(n.Payload, &p); err != nil || n.Room != "room-1" {
			t.Fatalf("notification %+v: %v", n, err)
		}
		out = append(out, p.Text)
	}
	return out
}

// testScheduleAutoPause: a schedule whose last three runs failed or
// stalled pauses itself at its next due time and says so in its room.
// Resumed, it runs at its next due time: the runs that paused it are not
// counted again (the person who said `resume schedule #N` wants a run,
// not the same pause at once). It pauses and resumes the same way a
// second time.
func testScheduleAutoPause(t *testing.T, s domain.Store) {
	sc := createSchedule(t, s, newSchedule("@every 3s", "Keeps failing"))
	failRuns(t, s, at(3*time.Second), at(6*time.Second), at(9*time.Second))
	f := fire(t, s, at(12*time.Second), 0)
	if f.Task.Number != 0 || !f.Schedule.Paused || f.Event.Type != domain.ScheduleAutoPaused || f.Schedule.Failures != 3 {
		t.Fatalf("after three failures: %+v", f)
	}
	noFire(t, s, at(time.Hour))
	if due, _ := s.NextScheduleDue(t.Context()); !due.IsZero() {
		t.Errorf("NextScheduleDue = %v with the only schedule paused", due)
	}
	if lines := roomLines(t, s); len(lines) != 1 || !strings.Contains(lines[0], "paused itself") {
		t.Errorf("room lines %q", lines)
	}
	// Resumed, it starts counting again and runs at its next due time.
	r, err := s.PauseSchedule(t.Context(), sc.ID, false, "u1", at(20*time.Second))
	if err != nil || r.Paused || r.Failures != 0 || !r.NextRunAt.Equal(at(23*time.Second)) || !r.ResumedAt.Equal(at(20*time.Second)) {
		t.Fatalf("resume = %+v, %v", r, err)
	}
	if got, err := s.GetSchedule(t.Context(), sc.ID); err != nil || !got.ResumedAt.Equal(at(20*time.Second)) || got.Paused {
		t.Fatalf("get after resume = %+v, %v", got, err)
	}
	f = fire(t, s, at(23*time.Second), 0)
	if f.Task.Number == 0 || f.Schedule.Paused || f.Event.Type != domain.ScheduleFired || f.Schedule.Failures != 0 {
		t.Fatalf("resumed after three failed runs: %+v; want a run", f)
	}
	lines := roomLines(t, s)
	if len(lines) != 2 || !strings.Contains(lines[1], "runs again") || !strings.Contains(lines[1], fmt.Sprintf("task #%d", f.Task.Number)) {
		t.Errorf("room lines %q; want the room told it runs again", lines)
	}
	// Its second use: the run fails, two more do, and it pauses again;
	// resumed a second time, it runs again.
	c := claim(t, s, "w", at(23*time.Second), time.Minute)
	o := outcome(c, at(24*time.Second), 10, domain.VerdictStuck)
	o.Reason = "no access"
	update(t, s, c.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
	failRuns(t, s, at(26*time.Second), at(29*time.Second))
	if f := fire(t, s, at(32*time.Second), 0); !f.Schedule.Paused || f.Task.Number != 0 || f.Schedule.Failures != 3 {
		t.Fatalf("three failures after the resume: %+v; want paused again", f)
	}
	if _, err := s.PauseSchedule(t.Context(), sc.ID, false, "u1", at(40*time.Second)); err != nil {
		t.Fatal(err)
	}
	if f := fire(t, s, at(43*time.Second), 0); f.Task.Number == 0 || f.Schedule.Paused {
		t.Fatalf("resumed a second time: %+v; want a run", f)
	}
	if lines := roomLines(t, s); len(lines) != 4 || !strings.Contains(lines[2], "paused itself") || !strings.Contains(lines[3], "runs again") {
		t.Errorf("room lines %q", lines)
	}
}

// testScheduleSkips: a schedule whose due times keep being skipped (its
// run waits, overlap skip; or its requestor is at the limit) tells its
// room once, records each skip, and pauses itself at the
// MaxScheduleSkips-th in a row, saying so: a room does not want a line, nor
// the store an event, every period forever. A run that starts ends the
// row, and a resume starts it again.
func testScheduleSkips(t *testing.T, s domain.Store) {
	sc := createSchedule(t, s, newSchedule("@every 3s", "Waits on a person"))
	run := fire(t, s, at(3*time.Second), 0).Task
	if run.Number == 0 {
		t.Fatal("no first run")
	}
	due := func(i int) time.Time { return at(time.Duration(3*(i+1)) * time.Second) }
	for i := 1; i < domain.MaxScheduleSkips; i++ {
		f := fire(t, s, due(i), 0)
		if f.Task.Number != 0 || f.Event.Type != domain.ScheduleSkipped || f.Schedule.Paused || f.Schedule.Skips != i {
			t.Fatalf("skip %d: %+v", i, f)
		}
	}
	if lines := roomLines(t, s); len(lines) != 1 || !strings.Contains(lines[0], "skipped its run") || !strings.Contains(lines[0], "once") {
		t.Fatalf("room lines after %d skips %q; want one", domain.MaxScheduleSkips-1, lines)
	}
	f := fire(t, s, due(domain.MaxScheduleSkips), 0)
	if f.Task.Number != 0 || !f.Schedule.Paused || f.Event.Type != domain.ScheduleAutoPaused || f.Schedule.Skips != domain.MaxScheduleSkips ||
		!strings.Contains(f.Event.Detail, "skipped") {
		t.Fatalf("skip %d: %+v; want paused", domain.MaxScheduleSkips, f)
	}
	noFire(t, s, at(time.Hour))
	lines := roomLines(t, s)
	if len(lines) != 2 || !strings.Contains(lines[1], "paused itself") || !strings.Contains(lines[1], fmt.Sprintf("resume schedule #%d", sc.ID)) {
		t.Fatalf("room lines %q; want the skip once and the pause", lines)
	}
	evs := scheduleEvents(t, s, sc.ID)
	if n := strings.Count(strings.Join(evs, ","), domain.ScheduleSkipped); n != domain.MaxScheduleSkips-1 {
		t.Errorf("%d skipped events %v", n, evs)
	}

	// Resumed with its run still waiting: the row starts again (and is
	// told again), and a run that starts ends it.
	r, err := s.PauseSchedule(t.Context(), sc.ID, false, "u1", at(time.Hour))
	if err != nil || r.Skips != 0 {
		t.Fatalf("resume = %+v, %v", r, err)
	}
	next := r.NextRunAt
	if f := fire(t, s, next, 0); f.Schedule.Skips != 1 || f.Schedule.Paused {
		t.Fatalf("skip after the resume: %+v", f)
	}
	if lines := roomLines(t, s); len(lines) != 3 || !strings.Contains(lines[2], "skipped its run") {
		t.Fatalf("room lines %q", lines)
	}
	update(t, s, run.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Canceled(cur, "u1", "", next.Add(time.Second))
	})
	f = fire(t, s, next.Add(3*time.Second), 0)
	if f.Task.Number == 0 || f.Schedule.Skips != 0 {
		t.Fatalf("a run after skips: %+v; want it to end the row", f)
	}

	// At the requestor's limit the same: one line, then a pause.
	other := createSchedule(t, s, newSchedule("@every 3s", "Over the limit"))
	base := roomLines(t, s)
	var last domain.ScheduleFiring
	for i := 0; i < domain.MaxScheduleSkips; i++ {
		now := next.Add(time.Duration(3*(i+2)) * time.Second)
		for range 2 {
			if f := fire(t, s, now, 1); f.Schedule.ID == other.ID {
				last = f
			}
		}
	}
	if !last.Schedule.Paused || last.Schedule.Skips != domain.MaxScheduleSkips {
		t.Fatalf("at the limit %d times: %+v; want paused", domain.MaxScheduleSkips, last)
	}
	var mine []string
	for _, l := range roomLines(t, s)[len(base):] {
		if strings.Contains(l, fmt.Sprintf("Schedule #%d ", other.ID)) {
			mine = append(mine, l)
		}
	}
	if len(mine) != 2 || !strings.Contains(mine[0], "limit") || !strings.Contains(mine[1], "paused itself") {
		t.Errorf("lines about the schedule at the limit %q", mine)
	}
}

// testSchedulePauseDelete: a paused schedule is not due; resumed, it
// waits for its first due time after the resume; deleted, it is gone with
// its events, and its runs stay.
func testSchedulePauseDelete(t *testing.T, s domain.Store) {
	ctx := t.Context()
	sc := createSchedule(t, s, newSchedule("@every 3s", "Pause me"))
	run := fire(t, s, at(3*time.Second), 0).Task
	p, err := s.PauseSchedule(ctx, sc.ID, true, "u1", at(4*time.Second))
	if err != nil || !p.Paused {
		t.Fatalf("pause = %+v, %v", p, err)
	}
	if again, err := s.PauseSchedule(ctx, sc.ID, true, "u1", at(4*time.Second)); err != nil || again != p {
		t.Errorf("pause twice = %+v, %v", again, err)
	}
	noFire(t, s, at(time.Minute))
	r, err := s.PauseSchedule(ctx, sc.ID, false, "u1", at(time.Minute+time.Second))
	if err != nil || r.Paused || !r.NextRunAt.Equal(at(time.Minute+4*time.Second)) {
		t.Fatalf("resume = %+v, %v", r, err)
	}
	// Resumed twice: the second changes nothing (its next time and the
	// time its counts start from stay those of the first).
	if again, err := s.PauseSchedule(ctx, sc.ID, false, "u1", at(2*time.Minute)); err != nil || again != r {
		t.Errorf("resume twice = %+v, %v; want %+v", again, err, r)
	}
	if evs := scheduleEvents(t, s, sc.ID); strings.Join(evs, ",") != "created,fired,paused,resumed" {
		t.Errorf("events %v", evs)
	}
	if _, err := s.PauseSchedule(ctx, sc.ID+1, true, "u1", t0); !errors.Is(err, domain.ErrScheduleNotFound) {
		t.Errorf("pause unknown = %v", err)
	}
	if err := s.DeleteSchedule(ctx, sc.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSchedule(ctx, sc.ID); !errors.Is(err, domain.ErrScheduleNotFound) {
		t.Errorf("delete twice = %v", err)
	}
	if _, err := s.GetSchedule(ctx, sc.ID); !errors.Is(err, domain.ErrScheduleNotFound) {
		t.Errorf("get deleted = %v", err)
	}
	if evs, err := s.ScheduleEvents(ctx, sc.ID, 0); err != nil || len(evs) != 0 {
		t.Errorf("events of the deleted = %v, %v", evs, err)
	}
	noFire(t, s, at(time.Hour))
	if kept := get(t, s, run.Number); kept.ScheduleID != sc.ID {
		t.Errorf("run after delete: %+v", kept)
	}
	// Made again, the same schedule is a new one: the runs of the one
	// deleted (#1 still queued) neither hold back its first run
	// (overlap) nor count as its failures.
	in := newSchedule("@every 3s", "Pause me")
	in.Now = at(time.Hour)
	again := createSchedule(t, s, in)
	if again.ID == sc.ID {
		t.Fatalf("the schedule made again has the deleted one's id %d", sc.ID)
	}
	f := fire(t, s, at(time.Hour+3*time.Second), 0)
	if f.Schedule.ID != again.ID || f.Task.Number == 0 || f.Event.Type != domain.ScheduleFired {
		t.Errorf("the first due time of the schedule made again: %+v; want a run", f)
	}
}
