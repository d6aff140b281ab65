package schedules_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/schedules"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

func newService(t *testing.T, st domain.Store, clk clock.Clock, opts schedules.Options) *schedules.Service {
	t.Helper()
	opts.Runtime = plugin.New(plugin.Options{Store: st, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if opts.MinInterval == 0 {
		opts.MinInterval = time.Second
	}
	return schedules.New(opts)
}

func start(t *testing.T, s *schedules.Service) {
	t.Helper()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

func schedule(cron, goal string) domain.NewSchedule {
	return domain.NewSchedule{Cron: cron, Goal: goal, RequestorID: "u1", Platform: "discord", Room: "discord:1",
		WorkspaceID: "g1", MinInterval: time.Second, Now: t0}
}

func runsOf(t *testing.T, st domain.Store, id int64) []domain.Task {
	t.Helper()
	all, err := st.ListTasks(t.Context(), domain.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []domain.Task
	for _, task := range all {
		if task.ScheduleID == id {
			out = append(out, task)
		}
	}
	return out
}

// settle waits until each of n loops sleeps on the clock again.
func settle(t *testing.T, clk *clock.Fake, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntil(ctx, n); err != nil {
		t.Fatalf("the loops did not go back to sleep: %v", err)
	}
}

// TestTwoReplicasFireEachDueTimeOnce: two replicas, each with its own
// store over one PostgreSQL database and no leader, run `@every 3s` for
// 13 seconds of the fake clock: four runs, one per due time, each at its
// due time; after the schedule is deleted, none.
func TestTwoReplicasFireEachDueTimeOnce(t *testing.T) {
	url := testkit.PostgresURL(t)
	a, b := teststore.PostgresAt(t, url), teststore.PostgresAt(t, url)
	clk := clock.NewFake(t0)
	sa := newService(t, a, clk, schedules.Options{})
	sb := newService(t, b, clk, schedules.Options{})
	in := schedule("@every 3s", "Summarise the alerts")
	in.Overlap = domain.OverlapAllow // no worker ends the runs here
	sc, err := a.CreateSchedule(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	start(t, sa)
	start(t, sb)
	settle(t, clk, 2)
	for range 13 {
		clk.Advance(time.Second)
		settle(t, clk, 2)
	}
	got := runsOf(t, b, sc.ID)
	if len(got) != 4 {
		t.Fatalf("%d runs in 13s of @every 3s; want 4", len(got))
	}
	for i, run := range got {
		due := t0.Add(time.Duration(3*(i+1)) * time.Second)
		if !run.CreatedAt.Equal(due) {
			t.Errorf("run %d (#%d) created at %v; want its due time %v", i, run.Number, run.CreatedAt, due)
		}
	}
	if _, err := sb.Delete(t.Context(), sc.ID, domain.ScheduleCaller{ID: "u1"}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		clk.Advance(time.Second)
		settle(t, clk, 2)
	}
	if got := runsOf(t, a, sc.ID); len(got) != 4 {
		t.Errorf("%d runs after the delete; want still 4", len(got))
	}
}

// TestOverlap: a run that never ends keeps a skip schedule from running
// again (each skipped due time recorded); an allow schedule runs at every
// due time.
func TestOverlap(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		s := newService(t, st, clk, schedules.Options{})
		skip, err := s.Create(t.Context(), schedule("@every 3s", "Never ends"))
		if err != nil {
			t.Fatal(err)
		}
		in := schedule("@every 3s", "Overlaps")
		in.Overlap = domain.OverlapAllow
		allow, err := s.Create(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		start(t, s)
		settle(t, clk, 1)
		for range 10 {
			clk.Advance(time.Second)
			settle(t, clk, 1)
		}
		if got := runsOf(t, st, skip.ID); len(got) != 1 {
			t.Errorf("skip: %d runs while the first never ends; want 1", len(got))
		}
		if got := runsOf(t, st, allow.ID); len(got) != 3 {
			t.Errorf("allow: %d runs; want 3", len(got))
		}
		evs, err := s.Events(t.Context(), skip.ID)
		if err != nil {
			t.Fatal(err)
		}
		skipped := 0
		for _, e := range evs {
			if e.Type == domain.ScheduleSkipped {
				skipped++
			}
		}
		if skipped != 2 {
			t.Errorf("%d skipped events; want 2 (at 6s and 9s): %+v", skipped, evs)
		}
	})
}

// TestCatchUpAfterOutage: every replica was down across three due times;
// the first to start makes one run for them with catch_up one, none with
// catch_up none, and the next due time follows the start.
func TestCatchUpAfterOutage(t *testing.T) {
	st := teststore.SQLite(t)
	one, err := st.CreateSchedule(t.Context(), schedule("@every 3s", "Catch up"))
	if err != nil {
		t.Fatal(err)
	}
	in := schedule("@every 3s", "Do not")
	in.CatchUp = domain.CatchUpNone
	none, err := st.CreateSchedule(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	// Down from t0 until 10.5s: due times 3s, 6s and 9s passed.
	clk := clock.NewFake(t0.Add(10*time.Second + 500*time.Millisecond))
	s := newService(t, st, clk, schedules.Options{})
	start(t, s)
	settle(t, clk, 1)
	if got := runsOf(t, st, one.ID); len(got) != 1 || !got[0].CreatedAt.Equal(clk.Now()) {
		t.Errorf("catch_up one: runs %+v; want one, at the start", got)
	}
	if got := runsOf(t, st, none.ID); len(got) != 0 {
		t.Errorf("catch_up none: %d runs; want none", len(got))
	}
	for _, id := range []int64{one.ID, none.ID} {
		sc, _ := st.GetSchedule(t.Context(), id)
		// @every rounds its times to the second.
		if want := t0.Add(13 * time.Second); !sc.NextRunAt.Equal(want) {
			t.Errorf("schedule #%d next at %v; want %v, 3s after the start", id, sc.NextRunAt, want)
		}
	}
}

// TestDSTOnTheLoop: the loop sleeps to each due time of a Berlin schedule
// across both changes of the clocks and fires each once.
func TestDSTOnTheLoop(t *testing.T) {
	st := teststore.SQLite(t)
	from := time.Date(2026, 10, 23, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(from)
	s := newService(t, st, clk, schedules.Options{MaxSleep: 48 * time.Hour, MinInterval: time.Minute})
	sc, err := s.Create(t.Context(), domain.NewSchedule{Cron: "CRON_TZ=Europe/Berlin 30 2 * * *", Goal: "Nightly", RequestorID: "u1",
		Overlap: domain.OverlapAllow})
	if err != nil {
		t.Fatal(err)
	}
	start(t, s)
	settle(t, clk, 1)
	for range 4 * 48 {
		clk.Advance(30 * time.Minute)
		settle(t, clk, 1)
	}
	var got []time.Time
	for _, r := range runsOf(t, st, sc.ID) {
		got = append(got, r.CreatedAt)
	}
	want := []time.Time{
		time.Date(2026, 10, 24, 0, 30, 0, 0, time.UTC), // 02:30 CEST
		time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), // 02:30 CEST, not again at 02:30 CET
		time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC), // 02:30 CET
		time.Date(2026, 10, 27, 1, 30, 0, 0, time.UTC),
	}
	if len(got) != len(want) {
		t.Fatalf("runs at %v; want %v", got, want)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("run %d at %v; want %v", i, got[i], want[i])
		}
	}
}

// TestWhoMayChange: the requestor and admins may pause, resume and delete
// a schedule; anyone else is refused and changes nothing; a schedule of
// another workspace is one that does not exist.
func TestWhoMayChange(t *testing.T) {
	st := teststore.SQLite(t)
	clk := clock.NewFake(t0)
	s := newService(t, st, clk, schedules.Options{Admins: []string{"boss"}})
	sc, err := s.Create(t.Context(), schedule("@hourly", "Mine"))
	if err != nil {
		t.Fatal(err)
	}
	stranger := domain.ScheduleCaller{ID: "u2", WorkspaceID: "g1"}
	if _, err := s.Pause(t.Context(), sc.ID, true, stranger); !errors.Is(err, domain.ErrScheduleForbidden) {
		t.Errorf("stranger's pause = %v", err)
	}
	if _, err := s.Delete(t.Context(), sc.ID, stranger); !errors.Is(err, domain.ErrScheduleForbidden) {
		t.Errorf("stranger's delete = %v", err)
	}
	if got, _ := st.GetSchedule(t.Context(), sc.ID); got.Paused {
		t.Errorf("paused by a stranger")
	}
	if _, err := s.Pause(t.Context(), sc.ID, true, domain.ScheduleCaller{ID: "u1", WorkspaceID: "g2"}); !errors.Is(err, domain.ErrScheduleNotFound) {
		t.Errorf("from another workspace = %v", err)
	}
	for _, who := range []domain.ScheduleCaller{{ID: "boss"}, {ID: "mod", Admin: true}, {ID: "u1", WorkspaceID: "g1"}} {
		if p, err := s.Pause(t.Context(), sc.ID, true, who); err != nil || !p.Paused {
			t.Errorf("%+v pause = %+v, %v", who, p, err)
		}
		if p, err := s.Pause(t.Context(), sc.ID, false, who); err != nil || p.Paused {
			t.Errorf("%+v resume = %+v, %v", who, p, err)
		}
	}
	if _, err := s.Create(t.Context(), domain.NewSchedule{Cron: "@hourly", Goal: "x", Strategy: "nonsense"}); err != nil {
		t.Errorf("without a strategy list any strategy passes: %v", err)
	}
	strict := newService(t, st, clk, schedules.Options{Strategies: func() []string { return []string{"loop", "react"} }})
	if _, err := strict.Create(t.Context(), domain.NewSchedule{Cron: "@hourly", Goal: "x", Strategy: "nonsense"}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("unknown strategy = %v", err)
	}
}

// TestChangeWakesTheLoop: a schedule created on this replica wakes its
// loop, asleep for as long as MaxSleep allows, so its first time fires
// on time rather than when the loop would next have looked.
func TestChangeWakesTheLoop(t *testing.T) {
	st := teststore.SQLite(t)
	clk := clock.NewFake(t0)
	s := newService(t, st, clk, schedules.Options{MaxSleep: time.Hour})
	start(t, s)
	settle(t, clk, 1) // asleep: nothing is due, for an hour
	sc, err := s.Create(t.Context(), schedule("@every 3s", "Soon"))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	// The loop runs on its own goroutine: wait (in real time, bounded)
	// for the run it makes at 3s.
	deadline := time.Now().Add(10 * time.Second)
	for len(runsOf(t, st, sc.ID)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no run at the first due time: the loop slept through the change")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if run := runsOf(t, st, sc.ID)[0]; !run.CreatedAt.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("run created at %v; want %v", run.CreatedAt, t0.Add(3*time.Second))
	}
}

// TestFiringWhoseAnswerIsLost: a firing is one transaction. When the
// connection breaks after its commit (the answer lost: a PostgreSQL
// restart, a network cut) the run and the schedule's next time are both
// in, and the replica's next look finds nothing due: no second run. When
// it breaks before the schedule's update reaches the server, nothing of
// the firing is in, and the next look makes the one run.
func TestFiringWhoseAnswerIsLost(t *testing.T) {
	proxy, url := testkit.ProxyPostgres(t, testkit.PostgresURL(t))
	st := teststore.PostgresAt(t, url)
	clk := clock.NewFake(t0)
	s := newService(t, st, clk, schedules.Options{})
	in := schedule("@every 3s", "Fire once")
	in.Overlap = domain.OverlapAllow
	sc, err := st.CreateSchedule(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}

	clk.Set(t0.Add(3 * time.Second))
	proxy.LoseAnswers(1, "UPDATE schedules SET")
	if err := s.FireDue(t.Context()); err == nil {
		t.Fatal("FireDue heard its commit, whose answer was lost")
	}
	if err := s.FireDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := runsOf(t, st, sc.ID); len(got) != 1 || proxy.Lost() != 1 {
		t.Fatalf("%d runs after a lost answer (%d lost); want the one committed", len(got), proxy.Lost())
	}

	clk.Set(t0.Add(6 * time.Second))
	proxy.LoseRequests(1, "UPDATE schedules SET")
	if err := s.FireDue(t.Context()); err == nil {
		t.Fatal("FireDue succeeded without its update")
	}
	if got := runsOf(t, st, sc.ID); len(got) != 1 || proxy.Dropped() != 1 {
		t.Fatalf("%d runs after a lost request; want still 1, nothing of it committed", len(got))
	}
	// The transaction whose request was lost holds the schedule's row
	// until PostgreSQL sees its connection gone; until then a firing
	// passes over the row (SKIP LOCKED) and fires nothing, as another
	// replica's would. The next firing after that makes the run.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := s.FireDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := runsOf(t, st, sc.ID)
		if len(got) == 2 && got[1].CreatedAt.Equal(t0.Add(6*time.Second)) {
			break
		}
		if len(got) != 1 || time.Now().After(deadline) {
			t.Fatalf("runs %+v; want the second at 6s", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// failRun fails task n at now, as a worker whose model said stuck would.
func failRun(t *testing.T, st domain.Store, n int64, now time.Time) {
	t.Helper()
	c, err := st.UpdateTask(t.Context(), n, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Claimed(cur, domain.Claim{Owner: "w", Now: now, Lease: time.Minute})
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.UpdateTask(t.Context(), n, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, domain.Outcome{Owner: c.LeaseOwner, Fence: c.Fence, Now: now, Verdict: domain.VerdictStuck,
			Reason: "no access", Step: domain.Step{Action: "post_message", Params: []byte(`{"text":"x"}`), Result: "posted", Success: true}})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// roomLines is how many lines the schedules told their rooms.
func roomLines(t *testing.T, st domain.Store) int {
	t.Helper()
	rows, err := st.ListNotifications(t.Context(), "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// TestResumedScheduleRunsAgain: on the loop, an `@every 2s` schedule whose
// three runs failed pauses itself; resumed, it makes a run at its next
// due time (it made none in 7 s, and paused again, when the resume
// recounted the old failures), and a second pause and resume do the same.
func TestResumedScheduleRunsAgain(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		s := newService(t, st, clk, schedules.Options{})
		sc, err := s.Create(t.Context(), schedule("@every 2s", "Flaky"))
		if err != nil {
			t.Fatal(err)
		}
		start(t, s)
		settle(t, clk, 1)
		// tick moves the clock a second at a time, failing each new run.
		failed := map[int64]bool{}
		tick := func(seconds int) {
			for range seconds {
				clk.Advance(time.Second)
				settle(t, clk, 1)
				for _, run := range runsOf(t, st, sc.ID) {
					if !failed[run.Number] {
						failed[run.Number] = true
						failRun(t, st, run.Number, clk.Now())
					}
				}
			}
		}
		who := domain.ScheduleCaller{ID: "u1"}
		for round := 1; round <= 2; round++ {
			tick(10)
			got, err := s.Get(t.Context(), sc.ID, who)
			if runs := len(runsOf(t, st, sc.ID)); err != nil || !got.Paused || runs != 3*round {
				t.Fatalf("round %d: %+v (%v) with %d runs; want paused after %d failed runs", round, got, err, runs, 3*round)
			}
			if _, err := s.Pause(t.Context(), sc.ID, false, who); err != nil {
				t.Fatal(err)
			}
			settle(t, clk, 1)
			n := len(runsOf(t, st, sc.ID))
			tick(3)
			if got := runsOf(t, st, sc.ID); len(got) != n+1 {
				t.Fatalf("round %d: %d runs in 3 s after the resume; want one", round, len(got)-n)
			}
		}
	})
}

// TestWaitingRunsPauseTheSchedule: runs that wait on a person (here:
// nothing ends them) fill the requestor's limit of an `overlap: allow`
// schedule; the due times after are skipped — said once in the room —
// and the tenth skip in a row pauses it, said in the room too: not a
// skipped event every period for ever.
func TestWaitingRunsPauseTheSchedule(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		s := newService(t, st, clk, schedules.Options{MaxActive: 3})
		in := schedule("@every 2s", "Needs an approval each time")
		in.Overlap = domain.OverlapAllow
		sc, err := s.Create(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		start(t, s)
		settle(t, clk, 1)
		for range 60 {
			clk.Advance(time.Second)
			settle(t, clk, 1)
		}
		got, err := s.Get(t.Context(), sc.ID, domain.ScheduleCaller{})
		if err != nil || !got.Paused || got.Skips != domain.MaxScheduleSkips {
			t.Fatalf("after 60 s: %+v, %v; want paused after %d skips", got, err, domain.MaxScheduleSkips)
		}
		if runs := runsOf(t, st, sc.ID); len(runs) != 3 {
			t.Errorf("%d runs; want 3, the limit", len(runs))
		}
		evs, err := s.Events(t.Context(), sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, e := range evs {
			count[e.Type]++
		}
		if count[domain.ScheduleSkipped] != domain.MaxScheduleSkips-1 || count[domain.ScheduleAutoPaused] != 1 {
			t.Errorf("events %v; want %d skipped and one auto_paused", count, domain.MaxScheduleSkips-1)
		}
		if n := roomLines(t, st); n != 2 {
			t.Errorf("%d lines in the room; want two: the skip, once, and the pause", n)
		}
	})
}
