package render

import (
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

func TestBar(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		progress int
		want     string
	}{
		{0, "[░░░░░░░░░░]"},
		{-20, "[░░░░░░░░░░]"},
		{1, "[█░░░░░░░░░]"}, // started is not empty
		{4, "[█░░░░░░░░░]"},
		{5, "[█░░░░░░░░░]"},
		{14, "[█░░░░░░░░░]"},
		{15, "[██░░░░░░░░]"}, // half a cell rounds up
		{20, "[██░░░░░░░░]"},
		{35, "[████░░░░░░]"},
		{50, "[█████░░░░░]"},
		{80, "[████████░░]"},
		{84, "[████████░░]"},
		{85, "[█████████░]"},
		{95, "[█████████░]"}, // not done is not full
		{99, "[█████████░]"},
		{100, "[██████████]"},
		{250, "[██████████]"},
	} {
		if got := Bar(tc.progress); got != tc.want {
			t.Errorf("Bar(%d) = %s, want %s", tc.progress, got, tc.want)
		}
	}
}

func TestDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{-5 * time.Second, "0s"},
		{999 * time.Millisecond, "0s"},
		{time.Second, "1s"},
		{45 * time.Second, "45s"},
		{45*time.Second + 900*time.Millisecond, "45s"},
		{60 * time.Second, "1m"},
		{8*time.Minute + 23*time.Second, "8m 23s"},
		{8*time.Minute + 3*time.Second, "8m 3s"},
		{59*time.Minute + 59*time.Second, "59m 59s"},
		{time.Hour, "1h"},
		{time.Hour + 5*time.Second, "1h"},
		{time.Hour + 2*time.Minute, "1h 2m"},
		{time.Hour + 2*time.Minute + 59*time.Second, "1h 2m"},
		{23*time.Hour + 59*time.Minute, "23h 59m"},
		{24 * time.Hour, "1d"},
		{2*24*time.Hour + 3*time.Hour + 4*time.Minute, "2d 3h"},
		{2*24*time.Hour + 4*time.Minute, "2d"},
		{400 * 24 * time.Hour, "400d"},
	} {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestStatusWord(t *testing.T) {
	t.Parallel()
	want := map[domain.Status]string{
		domain.StatusQueued:    "Queued",
		domain.StatusRunning:   "Running",
		domain.StatusPaused:    "Paused",
		domain.StatusWaiting:   "Waiting for an answer",
		domain.StatusCompleted: "Completed",
		domain.StatusFailed:    "Failed",
		domain.StatusStalemate: "Stalled",
		domain.StatusCanceled:  "Canceled",
	}
	for _, s := range domain.Statuses {
		w, ok := want[s]
		if !ok {
			t.Errorf("status %q has no expected word in this test", s)
			continue
		}
		if got := StatusWord(s); got != w {
			t.Errorf("StatusWord(%q) = %q, want %q", s, got, w)
		}
	}
	if got := StatusWord("mystery"); got != "mystery" {
		t.Errorf("StatusWord(unknown) = %q, want it as stored", got)
	}
}

func TestTimestamp(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 10, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		f        Flavor
		relative bool
		want     string
	}{
		{Plain, false, "2026-03-01 10:04 UTC"},
		{Plain, true, "2026-03-01 10:04 UTC"},
		{Discord, false, "<t:1772359445:f>"},
		{Discord, true, "<t:1772359445:R>"},
		{Slack, false, "<!date^1772359445^{date_short_pretty} {time}|2026-03-01 10:04 UTC>"},
		{Slack, true, "<!date^1772359445^{ago}|2026-03-01 10:04 UTC>"},
	} {
		if got := timestamp(tc.f, at, tc.relative); got != tc.want {
			t.Errorf("timestamp(%v, relative=%v) = %q, want %q", tc.f, tc.relative, got, tc.want)
		}
	}
}
