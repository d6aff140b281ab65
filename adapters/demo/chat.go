package demo

import (
	"encoding/json"
	"strings"
	"unicode"

	"github.com/taskloom/taskloom/plugin"
)

// chat answers free text in chat (plugin.ActionChoiceSchemaName) by a
// fixed rule, so that a newcomer without a key sees memory at work
// (docs/memory.md): of what the prompt quotes of the room's conversation
// and memory, the line that shares the most words with the message is
// said back, named as the demo's; with none, the reply says so and what the
// demo can do. It never picks an action: a demo cannot read a request.
func chat(req plugin.ModelRequest) string {
	var system, asked string
	for _, m := range req.Messages {
		switch m.Role {
		case plugin.RoleSystem:
			system = m.Content
		case plugin.RoleUser:
			asked = m.Content
		}
	}
	reply := "(demo model) I am Taskloom's demo model: I cannot think or chat, and nothing in this room's memory or knowledge matches your words. " +
		"Say `help` for the commands, which work without a model; set OPENAI_API_KEY or OPENAI_BASE_URL to talk to a real one."
	if best := bestRecalled(recalled(system), asked); best != "" {
		reply = "(demo model) I cannot think or chat, but this is what I recall that matches your words: " + best +
			" — a real model (OPENAI_API_KEY or OPENAI_BASE_URL) would answer from it."
	}
	out, _ := json.Marshal(map[string]any{"action": "none", "params": map[string]any{}, "reply": reply})
	return string(out)
}

// recalled lists what the prompt quotes of the room: each line of its
// quoted blocks — the conversation so far and the "Relevant memory"
// section, which leaves out what the conversation shows — the demo's own
// replies aside.
func recalled(prompt string) []string {
	var items []string
	for _, line := range strings.Split(prompt, "\n") {
		text, ok := strings.CutPrefix(line, plugin.QuotePrefix)
		if !ok || strings.Contains(text, "(demo model)") {
			continue
		}
		items = append(items, strings.TrimPrefix(text, "- "))
	}
	return items
}

// bestRecalled is the item sharing the most words of three letters or
// more with asked, the first on a tie; "" when none shares one.
func bestRecalled(items []string, asked string) string {
	want := map[string]bool{}
	for _, w := range words(asked) {
		want[w] = true
	}
	best, score := "", 0
	for _, item := range items {
		n := 0
		seen := map[string]bool{}
		for _, w := range words(item) {
			if want[w] && !seen[w] {
				seen[w] = true
				n++
			}
		}
		if n > score {
			best, score = item, n
		}
	}
	return best
}

func words(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) >= 3 && !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

var stopWords = map[string]bool{"the": true, "and": true, "how": true, "what": true, "who": true, "why": true, "when": true,
	"where": true, "you": true, "are": true, "was": true, "for": true, "with": true, "this": true, "that": true, "does": true,
	"did": true, "can": true, "our": true, "have": true, "has": true, "about": true, "from": true, "into": true, "your": true}
