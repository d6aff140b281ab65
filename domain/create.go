package domain

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// NewTaskRow validates a request and returns the row to insert (without its
// number, which the store assigns) — goal 1–4000 characters and not blank,
// name derived from the goal when empty, limits defaulted.
func NewTaskRow(in NewTask) (Task, error) {
	goal := strings.TrimSpace(in.Goal)
	if goal == "" {
		return Task{}, fmt.Errorf("create task: %w: the goal is empty", ErrInvalid)
	}
	if Blank(goal) {
		// Zero-width, filler or other invisible characters only: a task
		// no one can read in the queue, with nothing for a model to do.
		return Task{}, fmt.Errorf("create task: %w: the goal shows nothing: it holds only invisible characters", ErrInvalid)
	}
	if n := utf8.RuneCountInString(in.Goal); n > MaxGoalLength {
		return Task{}, fmt.Errorf("create task: %w: the goal is %d characters; the limit is %d", ErrInvalid, n, MaxGoalLength)
	}
	if !utf8.ValidString(in.Goal) || !utf8.ValidString(in.Name) {
		return Task{}, fmt.Errorf("create task: %w: text is not valid UTF-8", ErrInvalid)
	}
	var maxTokens int64
	if in.MaxTokens != nil {
		maxTokens = *in.MaxTokens
	}
	if maxTokens < 0 {
		return Task{}, fmt.Errorf("create task: %w: max_tokens is %d; it must be 0 (no limit) or more", ErrInvalid, maxTokens)
	}
	name := strings.TrimSpace(in.Name)
	if name == "" {
		name = NameFromGoal(goal)
	}
	if utf8.RuneCountInString(name) > MaxNameLength {
		name = truncateRunes(name, MaxNameLength)
	}
	t := Task{
		Name:               name,
		Goal:               goal,
		Status:             StatusQueued,
		MaxIterations:      in.MaxIterations,
		MaxStaleIterations: in.MaxStaleIterations,
		RequestorID:        in.RequestorID,
		Platform:           in.Platform,
		RoomID:             in.RoomID,
		WorkspaceID:        in.WorkspaceID,
		ParentNumber:       in.ParentNumber,
		MaxTokens:          maxTokens,
		ContinuesNumber:    in.ContinuesNumber,
		ScheduleID:         in.ScheduleID,
		Strategy:           strings.TrimSpace(in.Strategy),
		CreatedAt:          UTC(in.Now),
	}
	if t.Strategy == "" {
		t.Strategy = StrategyLoop
	}
	t.Digest = Digest{}.String()
	if t.MaxIterations <= 0 {
		t.MaxIterations = DefaultMaxIterations
	}
	if t.MaxStaleIterations <= 0 {
		t.MaxStaleIterations = DefaultMaxStaleIterations
	}
	if t.WorkspaceID == "" {
		t.WorkspaceID = "local"
	}
	return t, nil
}

// Created builds the first event of a task whose row the store has just
// numbered; a retry's context goes into its detail.
func Created(t Task, actor, context string) (Mutation, error) {
	var detail map[string]any
	if context != "" {
		detail = map[string]any{"context": context}
	}
	return Change(Task{}, t, EventCreated, actor, t.CreatedAt, detail)
}

// NameFromGoal derives a short task name from its goal without asking a
// model: the first sentence, at most eight words and 60 characters, with a
// leading capital.
func NameFromGoal(goal string) string {
	s := strings.TrimSpace(goal)
	if i := sentenceEnd(s); i > 0 {
		s = s[:i]
	}
	words := strings.Fields(s)
	if len(words) > 8 {
		words = words[:8]
	}
	s = strings.Join(words, " ")
	if utf8.RuneCountInString(s) > 60 {
		s = strings.TrimSpace(truncateRunes(s, 59)) + "…"
	}
	if s == "" {
		return "Task"
	}
	r, size := utf8.DecodeRuneInString(s)
	return strings.ToUpper(string(r)) + s[size:]
}

// sentenceEnd is where the first sentence of s ends: a newline, or . ! ?
// followed by a space or the end ("v1.2" and "<!channel>" do not end one).
func sentenceEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n':
			return i
		case '.', '!', '?':
			if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' {
				return i
			}
		}
	}
	return -1
}

func truncateRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
