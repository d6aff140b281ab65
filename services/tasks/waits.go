package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// DefaultAnswerTimeout is how long a question waits for an answer
// (TASKLOOM_ANSWER_TIMEOUT).
const DefaultAnswerTimeout = 24 * time.Hour

// sweepEvery is how often the service looks for questions nobody
// answered in time; pruneEvery how often it deletes old memories.
const (
	sweepEvery = time.Minute
	pruneEvery = time.Hour
)

// DefaultRetention is how long chat memories are kept
// (TASKLOOM_RETENTION).
const DefaultRetention = 720 * time.Hour

// sweep resumes, every sweepEvery, the tasks whose question has waited
// AnswerTimeout without an answer, and every pruneEvery deletes the
// memories older than the retention.
func (s *Service) sweep() {
	defer s.wg.Done()
	lastPrune := s.clk.Now()
	for {
		t := s.clk.NewTimer(sweepEvery)
		select {
		case <-s.stopping:
			t.Stop()
			return
		case <-t.C():
		}
		if _, err := s.ExpireQuestions(s.hardCtx); err != nil && s.hardCtx.Err() == nil {
			s.log.Error("cannot resume unanswered questions", "err", err)
		}
		if now := s.clk.Now(); now.Sub(lastPrune) >= pruneEvery {
			lastPrune = now
			if n, err := s.Prune(s.hardCtx); err != nil && s.hardCtx.Err() == nil {
				s.log.Error("cannot delete old memories", "err", err)
			} else if n > 0 {
				s.log.Info("deleted old memories", "count", n, "retention", s.opts.Retention)
			}
		}
	}
}

// Prune deletes the chat memories older than the retention and says how
// many it deleted; task events are kept (`taskloom prune`).
func (s *Service) Prune(ctx context.Context) (int64, error) {
	n, err := s.store.PruneMemories(ctx, s.clk.Now().Add(-s.opts.Retention))
	if err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	return n, nil
}

// ExpireQuestions resumes every task that has waited on an answer for
// AnswerTimeout or longer (since the iteration that asked, or its latest
// resume from a pause) with the
// observation "No answer came within <timeout>." It returns how many it
// resumed. Another replica doing the same at once is harmless: the second
// answer is refused.
func (s *Service) ExpireQuestions(ctx context.Context) (int, error) {
	waiting, err := s.store.ListTasks(ctx, domain.TaskFilter{Statuses: []domain.Status{domain.StatusWaiting}})
	if err != nil {
		return 0, fmt.Errorf("list waiting tasks: %w", err)
	}
	now := s.clk.Now()
	text := fmt.Sprintf("No answer came within %s.", FormatDuration(s.opts.AnswerTimeout))
	n := 0
	for _, t := range waiting {
		if t.WaitingOn != domain.WaitAnswer || now.Sub(t.LastProcessedAt) < s.opts.AnswerTimeout {
			continue
		}
		since, err := s.waitingSince(ctx, t)
		if err != nil {
			return n, err
		}
		if now.Sub(since) < s.opts.AnswerTimeout {
			continue
		}
		_, err = s.Answer(ctx, t.Number, "system", text)
		if errors.Is(err, domain.ErrInvalidState) || errors.Is(err, domain.ErrTerminal) {
			continue // answered, paused or ended meanwhile
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// resumeLookback is how many of a waiting task's latest events
// waitingSince reads for a resume: while it waits, only pauses, resumes
// and the like are written.
const resumeLookback = 8

// waitingSince is when t, waiting on an answer, began to wait: the
// iteration that asked, or the latest resume since, when it was paused
// meanwhile. Nobody can answer a paused task, so its question gets the
// whole timeout again once resumed, not what was left of it — or none,
// after a pause longer than the timeout.
func (s *Service) waitingSince(ctx context.Context, t domain.Task) (time.Time, error) {
	since := t.LastProcessedAt
	evs, err := s.store.TaskEvents(ctx, t.Number, max(t.EventSeq-resumeLookback, 0))
	if err != nil {
		return time.Time{}, fmt.Errorf("events of task #%d: %w", t.Number, err)
	}
	for _, e := range evs {
		if e.Type == domain.EventResumed && e.Time.After(since) {
			since = e.Time
		}
	}
	return since, nil
}

// FormatDuration writes d the way people say it: 24h, 90m, 1h30m, 45s.
func FormatDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
