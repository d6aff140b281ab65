package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// How GET /api/stats reads the recent past: minute by minute, from the
// task events in the store, reading at most maxStatsEvents of them
// however busy the window was.
const (
	DefaultStatsWindow = time.Hour
	MinStatsWindow     = 10 * time.Minute
	MaxStatsWindow     = 6 * time.Hour
	StatsBucket        = time.Minute
	statsPage          = 2000
)

// maxStatsEvents bounds the events one answer reads. A window that holds
// more is read from its latest events back only so far; the minutes
// before them have no numbers (null), and "since" says where the numbers
// begin. A variable only so that a test can make it small (export_test.go).
var maxStatsEvents int64 = 100_000

// activeStatuses are the statuses of the tasks in the queue: every task
// that has not ended.
var activeStatuses = []domain.Status{domain.StatusQueued, domain.StatusRunning, domain.StatusPaused, domain.StatusWaiting}

type statsBody struct {
	WindowSeconds int `json:"window_seconds"`
	BucketSeconds int `json:"bucket_seconds"`
	// From and To bound the window: whole minutes, To the start of the
	// current minute.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// QueueDepth is how many tasks have not ended now.
	QueueDepth int `json:"queue_depth"`
	// Since is where the numbers begin when the window held more events
	// than one answer reads; null when they cover the whole window.
	Since  *time.Time   `json:"since"`
	Points []statsPoint `json:"points"`
}

// statsPoint is one minute of the window: the tasks that had not ended at
// its end, and the iterations (model calls committed) in it. Both are
// null for a minute before Since.
type statsPoint struct {
	Time       time.Time `json:"time"`
	QueueDepth *int      `json:"queue_depth"`
	Iterations *int      `json:"iterations"`
}

// stats answers GET /api/stats: queue depth and iterations per minute
// over the last window (default an hour), for the dashboard's chart.
//
// The minutes are whole minutes of the clock, the last one the minute
// before the current one: the same points whenever in a minute the
// chart is read, rather than minutes that slide with now (whose peaks
// moved at every reload). The queue depth at the end of each minute is
// worked back from now: the tasks that have not ended now, less those
// created since, plus those that ended since. Iterations are the
// "iterated" events of each minute.
func (a *API) stats(w http.ResponseWriter, r *http.Request) {
	window := DefaultStatsWindow
	if v := r.URL.Query().Get("window"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < MinStatsWindow || d > MaxStatsWindow || d%StatsBucket != 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("window must be whole minutes from %s to %s, e.g. 1h or 90m", fmtDur(MinStatsWindow), fmtDur(MaxStatsWindow)))
			return
		}
		window = d
	}
	ctx := r.Context()
	to := a.clk.Now().UTC().Truncate(StatsBucket)
	from := to.Add(-window)
	depth, err := a.store.CountTasks(ctx, domain.TaskFilter{Statuses: activeStatuses})
	if err != nil {
		a.fail(w, r, fmt.Errorf("stats: count the queue: %w", err))
		return
	}
	latest, err := domain.LatestEventID(ctx, a.store, 0)
	if err != nil {
		a.fail(w, r, fmt.Errorf("stats: find the latest event: %w", err))
		return
	}
	after, err := a.eventBefore(r, from, latest)
	if err != nil {
		a.fail(w, r, fmt.Errorf("stats: find the window's first event: %w", err))
		return
	}
	clipped := latest-after > maxStatsEvents
	if clipped {
		after = latest - maxStatsEvents
	}

	n := int(window / StatsBucket)
	created, ended, iterated := make([]int, n), make([]int, n), make([]int, n)
	// The current minute's tasks created and ended: not a point, but the
	// depth is worked back through them.
	createdLater, endedLater := 0, 0
	var first time.Time
	for after < latest {
		evs, err := a.store.EventsSince(ctx, after, statsPage)
		if err != nil {
			a.fail(w, r, fmt.Errorf("stats: read events after %d: %w", after, err))
			return
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.ID > latest {
				break // written while this answer was made: not in its count
			}
			if first.IsZero() {
				first = e.Time
			}
			b := max(int(e.Time.Sub(from)/StatsBucket), 0)
			if !e.Time.Before(to) {
				switch {
				case e.Type == domain.EventCreated && !endsTask(e):
					createdLater++
				case e.Type != domain.EventCreated && endsTask(e):
					endedLater++
				}
				continue
			}
			switch e.Type {
			case domain.EventCreated:
				if !endsTask(e) {
					created[b]++
				}
			case domain.EventIterated:
				iterated[b]++
				if endsTask(e) {
					ended[b]++
				}
			default:
				if endsTask(e) {
					ended[b]++
				}
			}
		}
		after = evs[len(evs)-1].ID
	}

	body := statsBody{WindowSeconds: int(window / time.Second), BucketSeconds: int(StatsBucket / time.Second),
		From: from, To: to, QueueDepth: depth, Points: make([]statsPoint, n)}
	if clipped && !first.IsZero() {
		since := first.UTC()
		body.Since = &since
	}
	d := depth + endedLater - createdLater
	for i := n - 1; i >= 0; i-- {
		start := from.Add(time.Duration(i) * StatsBucket)
		p := statsPoint{Time: start}
		// A minute whose start is before the first event read is only
		// partly counted: it has no numbers.
		if body.Since == nil || !start.Before(*body.Since) {
			depthAt, its := max(d, 0), iterated[i]
			p.QueueDepth, p.Iterations = &depthAt, &its
		}
		body.Points[i] = p
		d += ended[i] - created[i] // the depth at the end of the minute before
	}
	WriteJSON(w, http.StatusOK, body)
}

// eventBefore finds where the window that starts at from begins in the
// event log: the ID after which every event is at from or later (events
// are in time order by ID). It bisects over IDs, reading one event each
// time: O(log n) indexed reads however long the log is.
func (a *API) eventBefore(r *http.Request, from time.Time, latest int64) (int64, error) {
	lo, hi := int64(0), latest
	for lo < hi {
		mid := lo + (hi-lo)/2
		evs, err := a.store.EventsSince(r.Context(), mid, 1)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 || !evs[0].Time.Before(from) {
			hi = mid
			continue
		}
		lo = max(evs[0].ID, mid+1) // no event up to this one is in the window
	}
	return lo, nil
}

// endsTask reports whether an event moves its task to a status that has
// ended.
func endsTask(e domain.TaskEvent) bool {
	var p struct {
		Changes struct {
			Status domain.Status `json:"status"`
		} `json:"changes"`
	}
	if json.Unmarshal(e.Payload, &p) != nil {
		return false
	}
	return p.Changes.Status.Terminal()
}

// fmtDur writes a whole number of minutes or hours as 10m or 6h.
func fmtDur(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}
