package notify

import (
	"strings"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
)

// reasoningRunes is how much of a thought or an observation a progress
// message shows.
const reasoningRunes = 300

// reasoning is the latest thought and the latest observation of a react
// task among a room's pending updates (docs/strategies.md): like the last action,
// the latest of each wins.
type reasoning struct{ thought, observation string }

// add takes in the step of a pending action update and reports whether it
// was a thought or an observation, which is reasoning to show rather than
// an action.
func (r *reasoning) add(s domain.Step) bool {
	switch s.Role {
	case domain.RoleThought:
		if s.Thought != "" {
			r.thought = s.Thought
		}
		return true
	case domain.RoleObservation:
		if s.Thought != "" {
			r.observation = s.Thought
		}
		return true
	}
	return false
}

func (r reasoning) empty() bool { return r.thought == "" && r.observation == "" }

// progressWithReasoning is render.Progress with each task's reasoning
// (why, parallel to updates) at the end of its block:
//
//	💭 Thought: I should read the config before changing it.
//	🔍 Observation: The config sets no pool size.
func progressWithReasoning(f render.Flavor, updates []render.Update, why []reasoning) string {
	blocks := make([]string, len(updates))
	for i, u := range updates {
		b := render.Progress(f, []render.Update{u})
		if i < len(why) {
			if t := why[i].thought; t != "" {
				b += "\n   💭 Thought: " + render.Escape(f, shortLine(t))
			}
			if o := why[i].observation; o != "" {
				b += "\n   🔍 Observation: " + render.Escape(f, shortLine(o))
			}
		}
		blocks[i] = b
	}
	return strings.Join(blocks, "\n\n")
}

// shortLine is s on one line, cut to reasoningRunes with a mark.
func shortLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= reasoningRunes {
		return s
	}
	i := 0
	for pos := range s {
		if i == reasoningRunes-1 {
			return s[:pos] + "…"
		}
		i++
	}
	return s
}
