package actions_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/taskloom/taskloom/actions"
)

func TestParseCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want actions.Command
		ok   bool
	}{
		{"create task Build auth", actions.Command{Kind: "create", Text: "Build auth"}, true},
		{"Create Task: Build auth", actions.Command{Kind: "create", Text: "Build auth"}, true},
		{"new task write a haiku", actions.Command{Kind: "create", Text: "write a haiku"}, true},
		{"work on building auth", actions.Command{Kind: "create", Text: "building auth"}, true},
		{"/task create Build auth", actions.Command{Kind: "create", Text: "Build auth"}, true},
		{"/task create goal: Build auth", actions.Command{Kind: "create", Text: "Build auth"}, true},
		{"create task", actions.Command{Kind: "create"}, true},
		{"create review task Build auth", actions.Command{Kind: "create", Strategy: "review", Text: "Build auth"}, true},
		{"/task create React task: Build auth", actions.Command{Kind: "create", Strategy: "react", Text: "Build auth"}, true},
		{"create a group_chat task Compare queues", actions.Command{Kind: "create", Strategy: "group_chat", Text: "Compare queues"}, true},
		{"create a task Build auth", actions.Command{Kind: "create", Text: "Build auth"}, true},
		{"create task task list", actions.Command{Kind: "create", Text: "task list"}, true},
		{"create bogus task Build auth", actions.Command{Kind: "create", Strategy: "bogus", Text: "Build auth"}, true},
		{"create task plan a trip\nwith two stops", actions.Command{Kind: "create", Text: "plan a trip\nwith two stops"}, true},
		{"list tasks", actions.Command{Kind: "list"}, true},
		{"show queue", actions.Command{Kind: "list"}, true},
		{"/task list", actions.Command{Kind: "list"}, true},
		{"tasks", actions.Command{Kind: "list"}, true},
		{"status #1", actions.Command{Kind: "status", Number: 1}, true},
		{"status 12", actions.Command{Kind: "status", Number: 12}, true},
		{"Status of task #3", actions.Command{Kind: "status", Number: 3}, true},
		{"/task status 3", actions.Command{Kind: "status", Number: 3}, true},
		{"/task status number: 3", actions.Command{Kind: "status", Number: 3}, true},
		{"status", actions.Command{Kind: "status"}, true},
		{"status #abc", actions.Command{Kind: "status"}, true},
		{"status #-1", actions.Command{Kind: "status"}, true},
		{"pause #2", actions.Command{Kind: "pause", Number: 2}, true},
		{"resume #2", actions.Command{Kind: "resume", Number: 2}, true},
		{"cancel #2", actions.Command{Kind: "cancel", Number: 2}, true},
		{"stop 2", actions.Command{Kind: "cancel", Number: 2}, true},
		{"cancel #99999999999999999999", actions.Command{Kind: "cancel", Beyond: "99999999999999999999"}, true},
		{"cancel #9223372036854775807", actions.Command{Kind: "cancel", Number: 9223372036854775807}, true},
		{"cancel #-99999999999999999999", actions.Command{Kind: "cancel"}, true},
		{"retry 99999999999999999999 again", actions.Command{Kind: "retry", Beyond: "99999999999999999999", Text: "again"}, true},
		{"search tasks auth", actions.Command{Kind: "search", Text: "auth"}, true},
		{"/task search auth flow", actions.Command{Kind: "search", Text: "auth flow"}, true},
		{"search", actions.Command{Kind: "search"}, true},
		{"answer #3 use JWT", actions.Command{Kind: "answer", Number: 3, Text: "use JWT"}, true},
		{"/task answer 3 use JWT", actions.Command{Kind: "answer", Number: 3, Text: "use JWT"}, true},
		{"/task answer number: 3 text: use JWT", actions.Command{Kind: "answer", Number: 3, Text: "use JWT"}, true},
		{"answer", actions.Command{Kind: "answer"}, true},
		{"retry #3", actions.Command{Kind: "retry", Number: 3}, true},
		{"retry #3 use JWT this time", actions.Command{Kind: "retry", Number: 3, Text: "use JWT this time"}, true},
		{"/task retry 3 use JWT", actions.Command{Kind: "retry", Number: 3, Text: "use JWT"}, true},
		{"retry #3 context: use JWT", actions.Command{Kind: "retry", Number: 3, Text: "use JWT"}, true},
		{"retry", actions.Command{Kind: "retry"}, true},
		{"approve #4", actions.Command{Kind: "approve", Number: 4}, true},
		{"/task approve 4", actions.Command{Kind: "approve", Number: 4}, true},
		{"deny #4 not on a Friday", actions.Command{Kind: "deny", Number: 4, Text: "not on a Friday"}, true},
		{"/task deny number: 4 reason: too risky", actions.Command{Kind: "deny", Number: 4, Text: "too risky"}, true},
		{"deny", actions.Command{Kind: "deny"}, true},
		{"approve #4 call:5f0c1d2e3a4b5c6d", actions.Command{Kind: "approve", Number: 4, Call: "5f0c1d2e3a4b5c6d"}, true},
		{actions.DecisionText("deny", 4, "5f0c1d2e3a4b5c6d"), actions.Command{Kind: "deny", Number: 4, Call: "5f0c1d2e3a4b5c6d"}, true},
		{"deny #4 call 5f0c1d2e3a4b5c6d not now", actions.Command{Kind: "deny", Number: 4, Call: "5f0c1d2e3a4b5c6d", Text: "not now"}, true},
		{"deny #4 calling it off", actions.Command{Kind: "deny", Number: 4, Text: "calling it off"}, true},
		{"help", actions.Command{Kind: "help"}, true},
		{"/task", actions.Command{Kind: "help"}, true},
		{"forget me", actions.Command{Kind: "forget"}, true},
		{"Forget me!", actions.Command{Kind: "forget"}, true},
		{"/task forget everything about me", actions.Command{Kind: "forget"}, true},
		{"forget what I said", actions.Command{Kind: "forget"}, true},
		{"forget me not, it's a flower", actions.Command{}, false},
		{"forget the staging database", actions.Command{}, false},
		{"what's the weather like?", actions.Command{}, false},
		{"I think the status is fine", actions.Command{}, false},
		{"", actions.Command{}, false},
	}
	for _, tt := range tests {
		got, ok := actions.ParseCommand(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseCommand(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"create task x", "status #1", "/task answer 3 yes", "pause #99999999999999999999", "search ", "\x00", "answer #"} {
		f.Add(s)
	}
	kinds := map[string]bool{"create": true, "list": true, "status": true, "pause": true, "resume": true, "cancel": true, "search": true, "answer": true, "help": true, "forget": true, "retry": true, "approve": true, "deny": true}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := actions.ParseCommand(s)
		if !ok {
			return
		}
		if !kinds[c.Kind] {
			t.Fatalf("unknown kind %q", c.Kind)
		}
		if c.Number < 0 {
			t.Fatalf("negative number %d", c.Number)
		}
		if c.Beyond != "" && (c.Number != 0 || strings.Trim(c.Beyond, "0123456789") != "") {
			t.Fatalf("beyond %q with number %d", c.Beyond, c.Number)
		}
		if utf8.ValidString(s) && !utf8.ValidString(c.Text) {
			t.Fatalf("text %q is not valid UTF-8", c.Text)
		}
	})
}

// TestPressText: a button press is a control of a task, and an approve
// or deny names its call; a decision without one (an older message's
// button), a call on a control, or anything malformed is refused.
func TestPressText(t *testing.T) {
	for _, tc := range []struct {
		verb, ref, want string
		ok              bool
	}{
		{"pause", "12", "pause #12", true},
		{"approve", "12:5f0c1d2e3a4b5c6d", "approve #12 call:5f0c1d2e3a4b5c6d", true},
		{"deny", "3:ab", "deny #3 call:ab", true},
		{"approve", "12", "", false},
		{"deny", "12:", "", false},
		{"approve", "12:a b", "", false},
		{"pause", "12:5f0c", "", false},
		{"cancel", "0", "", false},
		{"cancel", "x", "", false},
	} {
		got, _, ok := actions.PressText(tc.verb, tc.ref)
		if got != tc.want || ok != tc.ok {
			t.Errorf("PressText(%q, %q) = %q, %v; want %q, %v", tc.verb, tc.ref, got, ok, tc.want, tc.ok)
		}
		if ok {
			if c, parsed := actions.ParseCommand(got); !parsed || c.Kind != tc.verb {
				t.Errorf("%q does not parse back as %s: %+v", got, tc.verb, c)
			}
		}
	}
}
