package render

import (
	"strconv"
	"strings"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// Bar draws progress as ten cells: "[████████░░]" for 80. Progress is
// clamped to 0–100 and rounded to the nearest cell (half a cell rounds up),
// except that a bar is full only at 100 and empty only at 0, so 97% never
// looks done and 3% never looks untouched.
func Bar(progress int) string {
	p := clampPercent(progress)
	full := (p*10 + 50) / 100
	switch {
	case p > 0 && full == 0:
		full = 1
	case p < 100 && full == 10:
		full = 9
	}
	return "[" + strings.Repeat("█", full) + strings.Repeat("░", 10-full) + "]"
}

func clampPercent(p int) int { return min(max(p, 0), 100) }

// Duration writes d with its two largest units and no zero padding: "8m 23s",
// "45s", "1h 2m", "2d 3h". A second unit that is zero is left out ("1h", not
// "1h 0m"); smaller units are truncated, not rounded. Anything under a
// second, negative durations included, is "0s".
func Duration(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	s := int64(d / time.Second)
	units := []struct {
		n    int64
		name string
	}{
		{s / 86400, "d"}, {s / 3600 % 24, "h"}, {s / 60 % 60, "m"}, {s % 60, "s"},
	}
	for i, u := range units {
		if u.n == 0 {
			continue
		}
		out := strconv.FormatInt(u.n, 10) + u.name
		if i+1 < len(units) && units[i+1].n != 0 {
			out += " " + strconv.FormatInt(units[i+1].n, 10) + units[i+1].name
		}
		return out
	}
	return "0s"
}

// TaskStatusWord is StatusWord for t, saying what a waiting task waits on
// when it is not an answer: "Waiting for an approval", "Waiting for its
// subtasks"; and "Running" only while a worker holds it: a running task
// between two iterations waits its turn in the fair rotation, "Queued (in
// rotation)" (with one worker and seven tasks, one runs and six wait). The
// stored status stays running either way.
func TaskStatusWord(t domain.Task) string {
	if t.Status == domain.StatusRunning && t.LeaseOwner == "" {
		return InRotation
	}
	if t.Status == domain.StatusWaiting {
		switch t.WaitingOn {
		case domain.WaitApproval:
			return "Waiting for an approval"
		case domain.WaitSubtasks:
			return "Waiting for its subtasks"
		}
	}
	return StatusWord(t.Status)
}

// InRotation is how a running task that no worker holds reads: it has
// started and waits for its next turn.
const InRotation = "Queued (in rotation)"

// StatusWord is how a status reads in a sentence: "Running", "Waiting for an
// answer", "Stalled". An unknown status is shown as it is stored.
func StatusWord(s domain.Status) string {
	switch s {
	case domain.StatusQueued:
		return "Queued"
	case domain.StatusRunning:
		return "Running"
	case domain.StatusPaused:
		return "Paused"
	case domain.StatusWaiting:
		return "Waiting for an answer"
	case domain.StatusCompleted:
		return "Completed"
	case domain.StatusFailed:
		return "Failed"
	case domain.StatusStalemate:
		return "Stalled"
	case domain.StatusCanceled:
		return "Canceled"
	}
	return string(s)
}

func itoa(n int) string { return strconv.Itoa(n) }

// timestamp shows t so each platform's readers see it in their own time zone
// where the platform can: Discord's <t:unix:f> and Slack's <!date^…> tokens,
// with UTC as the fallback text. relative asks for "5 minutes ago" instead.
func timestamp(f Flavor, t time.Time, relative bool) string {
	utc := t.UTC().Format("2006-01-02 15:04 UTC")
	unix := strconv.FormatInt(t.Unix(), 10)
	switch f {
	case Discord:
		if relative {
			return "<t:" + unix + ":R>"
		}
		return "<t:" + unix + ":f>"
	case Slack:
		token := "{date_short_pretty} {time}"
		if relative {
			token = "{ago}"
		}
		return "<!date^" + unix + "^" + token + "|" + utc + ">"
	}
	return utc
}
