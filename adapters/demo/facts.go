package demo

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/taskloom/taskloom/plugin"
)

// facts answers a request for durable facts (plugin.FactsSchemaName) by a
// fixed rule, so that memory works without a key (docs/memory.md): every
// sentence a person wrote that states something — no question, three to
// forty words, one of statingVerbs among them, not opening with a word
// that asks or proposes — is a fact, about its author when it speaks in
// the first person.
func facts(req plugin.ModelRequest) string {
	var ask plugin.FactsAsk
	for _, m := range req.Messages {
		if m.Role == plugin.RoleUser {
			_ = json.Unmarshal([]byte(m.Content), &ask) // not a FactsAsk: no facts
		}
	}
	out := plugin.FactsAnswer{Facts: []plugin.DrawnFact{}}
	for _, m := range ask.Messages {
		if m.FromBot {
			continue
		}
		for _, s := range sentenceSplit.Split(m.Text, -1) {
			s = strings.Join(strings.Fields(s), " ")
			if !states(s) {
				continue
			}
			f := plugin.DrawnFact{Text: strings.TrimRight(s, ".!") + ".", Sources: []int64{m.ID}}
			if firstPerson(s) {
				who := m.Author
				if who == "" {
					who = m.AuthorID
				}
				f.Text, f.About = who+" said: "+f.Text, m.AuthorID
			}
			out.Facts = append(out.Facts, f)
		}
	}
	b, _ := json.Marshal(out) // plain structs always encode
	return string(b)
}

var (
	sentenceSplit = regexp.MustCompile(`[.!]+\s+|\n+|;\s+`)
	wordRe        = regexp.MustCompile(`[\p{L}\p{N}']+`)
	statingVerbs  = map[string]bool{"is": true, "are": true, "was": true, "were": true, "lives": true, "live": true,
		"uses": true, "use": true, "runs": true, "run": true, "has": true, "have": true, "means": true, "owns": true,
		"own": true, "prefer": true, "prefers": true, "works": true, "work": true, "called": true, "named": true,
		"i'm": true, "it's": true, "we're": true, "they're": true}
	asking = map[string]bool{"can": true, "could": true, "would": true, "should": true, "do": true, "does": true, "did": true,
		"let's": true, "please": true, "what": true, "why": true, "how": true, "when": true, "where": true, "who": true,
		"which": true, "is": true, "are": true, "create": true, "list": true, "status": true, "help": true, "forget": true}
)

// states reports whether the demo model takes sentence s for a fact.
func states(s string) bool {
	if strings.Contains(s, "?") {
		return false
	}
	words := wordRe.FindAllString(strings.ToLower(s), -1)
	if len(words) < 3 || len(words) > 40 || asking[words[0]] {
		return false
	}
	for _, w := range words {
		if statingVerbs[w] {
			return true
		}
	}
	return false
}

func firstPerson(s string) bool {
	for _, w := range wordRe.FindAllString(strings.ToLower(s), -1) {
		switch w {
		case "i", "i'm", "my", "me", "mine", "i've", "i'd":
			return true
		}
	}
	return false
}
