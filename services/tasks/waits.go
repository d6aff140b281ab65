package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// DefaultAnswerTimeout is how long a question waits for an answer
// (TASKLOOM_ANSWER_TIMEOUT).
const DefaultAnswerTimeout = 24 * time.Hour

// sweepEvery is how often the service looks for questions nobody
// answered in time.
const sweepEvery = time.Minute

// sweepAnswers resumes, every sweepEvery, the tasks whose question has
// waited AnswerTimeout without an answer.
func (s *Service) sweepAnswers() {
	defer s.wg.Done()
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
	}
}

// ExpireQuestions resumes every task that has waited on an answer for
// AnswerTimeout or longer (since the iteration that asked) with the
// observation "No answer came within <timeout>." It returns how many it
// resumed. Another replica doing the same at once is harmless: the second
// answer is refused.
func (s *Service) ExpireQuestions(ctx context.Context) (int, error) {
	waiting, err := s.store.ListTasks(ctx, plugin.TaskFilter{Statuses: []plugin.Status{plugin.StatusWaiting}})
	if err != nil {
		return 0, fmt.Errorf("list waiting tasks: %w", err)
	}
	now := s.clk.Now()
	text := fmt.Sprintf("No answer came within %s.", FormatDuration(s.opts.AnswerTimeout))
	n := 0
	for _, t := range waiting {
		if t.WaitingOn != plugin.WaitAnswer || now.Sub(t.LastProcessedAt) < s.opts.AnswerTimeout {
			continue
		}
		_, err := s.Answer(ctx, t.Number, "system", text)
		if errors.Is(err, plugin.ErrInvalidState) || errors.Is(err, plugin.ErrTerminal) {
			continue // answered, paused or ended meanwhile
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
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
