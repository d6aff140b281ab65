package cli_test

import (
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// TestAnswerApproveDenyRetry drives the commands of docs/tasks.md, docs/security.md
// against the real API: what a task waits on shows in list and show, and
// answer, approve, deny and retry change it — or, refused, print the
// API's sentence and exit 1.
func TestAnswerApproveDenyRetry(t *testing.T) {
	model := testkit.NewScriptedModel().
		Decide("ask_user", map[string]string{"question": "Which database should the service use?"}, 10, "continue").
		Decide("http_get", map[string]string{"url": "https://example.com/status"}, 10, "continue").
		Decide("http_get", map[string]string{"url": "https://example.com/admin"}, 10, "continue")
	s := newServer(t, model, "")
	for _, goal := range []string{"Pick a database", "Check the status page", "Check the admin page"} {
		if _, err := s.tasks.Create(s.ctx, domain.NewTask{Goal: goal, RequestorID: "u1", Platform: "console", RoomID: "console", Actor: "u1", Now: t0}); err != nil {
			t.Fatal(err)
		}
		s.step() // the new task, the only one the queue may serve: it waits
	}

	call2, call3 := domain.ApprovalID(mustTask(t, s, 2)), domain.ApprovalID(mustTask(t, s, 3))
	tests := []struct {
		name string
		args []string
		code int
		out  []string // substrings of stdout (exit 0) or stderr (otherwise)
	}{
		{"list says what each waits for", []string{"list"}, 0, []string{"waiting for an answer", "waiting for an approval"}},
		{"show a task waiting on an answer", []string{"show", "1"}, 0, []string{`Task #1 "Pick a database" — waiting for an answer`, "Waiting on:    an answer"}},
		{"show the call a task waits to make", []string{"show", "2"}, 0, []string{
			"Waiting on:    an approval",
			`Tool call:     http_get {"url":"https://example.com/status"} — awaits a decision: taskloom tasks approve 2 --call ` + call2 + ` (or deny 2 --call ` + call2 + `)`,
			"budget 1000000"}},
		{"answer a task not waiting on one", []string{"answer", "2", "PostgreSQL"}, 1, []string{"not waiting for an answer"}},
		{"answer without an answer", []string{"answer", "1"}, 2, []string{"answer takes a task number and the answer"}},
		{"answer", []string{"answer", "#1", "PostgreSQL,", "please"}, 0, []string{`Answered task #1 "Pick a database"; it is queued.`}},
		{"its event", []string{"events", "1"}, 0, []string{"answered   by api: PostgreSQL, please"}},
		{"answer it again", []string{"answer", "1", "MySQL"}, 1, []string{"not waiting for an answer"}},
		{"approve a task not waiting on one", []string{"approve", "1"}, 1, []string{"not waiting for an approval"}},
		{"approve another call", []string{"approve", "2", "--call", call3}, 1, []string{"no longer pending"}},
		{"deny another call", []string{"deny", "2", "--call", "0123456789abcdef", "no"}, 1, []string{"no longer pending"}},
		{"approve", []string{"approve", "2", "--call", call2}, 0, []string{`Approved http_get {"url":"https://example.com/status"} for task #2 "Check the status page"; it is queued.`}},
		{"show the approved call", []string{"show", "2"}, 0, []string{"approved; it runs at the next iteration"}},
		{"deny an approved call", []string{"deny", "2"}, 1, []string{"not waiting for an approval"}},
		{"approve it again", []string{"approve", "2", "--call", call2}, 1, []string{"no longer pending"}},
		{"deny, with a reason after --", []string{"deny", "3", "--", "--force", "and", "-f", "are", "not", "for", "tasks"}, 0,
			[]string{`Denied http_get {"url":"https://example.com/admin"} for task #3 "Check the admin page"; it is queued and decides anew.`}},
		{"the denial's event", []string{"events", "3"}, 0, []string{"asks approval: http_get {\"url\":\"https://example.com/admin\"}", "denied     by api: --force and -f are not for tasks"}},
		{"deny without a number", []string{"deny"}, 2, []string{"deny takes a task number and, if you like, a reason"}},
		{"retry a task that has not ended", []string{"retry", "1"}, 1, []string{"has not ended"}},
		{"create with a budget", []string{"create", "Write the release notes", "--max-tokens", "5000", "--json"}, 0, []string{`"max_tokens": 5000`, `"number": 4`}},
		{"create with a negative budget", []string{"create", "x", "--max-tokens", "-5"}, 1, []string{"max_tokens"}},
		{"cancel it", []string{"cancel", "4"}, 0, []string{"is canceled."}},
		{"retry", []string{"retry", "4", "use", "the", "changelog"}, 0, []string{
			`Created task #5 "Write the release notes", continuing #4 with its files (queued).`,
			"Follow it with: taskloom tasks events 5 --follow"}},
		{"show the retry", []string{"show", "5"}, 0, []string{"Continues:     #4"}},
		{"retry as JSON", []string{"retry", "4", "--json"}, 0, []string{`"continues_number": 4`, `"number": 6`}},
		{"retry an unknown task", []string{"retry", "99"}, 1, []string{"there is no task #99"}},
		{"retry without a number", []string{"retry"}, 2, []string{"retry takes a task number"}},
		{"help lists them", []string{"help"}, 0, []string{"answer N TEXT...", "approve N", "deny N [REASON...]", "retry N [CONTEXT...]"}},
		{"create's help has its flags", []string{"create", "--help"}, 0, []string{"--max-tokens"}},
	}
	for _, tc := range tests {
		code, out, errOut := run(t, s.env, tc.args...)
		if code != tc.code {
			t.Errorf("%s: taskloom tasks %q = %d, want %d\nstdout: %s\nstderr: %s", tc.name, tc.args, code, tc.code, out, errOut)
			continue
		}
		text := out
		if code != 0 {
			text = errOut
		}
		for _, want := range tc.out {
			if !strings.Contains(text, want) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, want, text)
			}
		}
	}
	if got := mustTask(t, s, 2); got.Status != domain.StatusQueued || !got.ApprovalGranted {
		t.Errorf("#2 after approve: %s, granted %v", got.Status, got.ApprovalGranted)
	}
	if got := mustTask(t, s, 5); got.ContinuesNumber != 4 || got.MaxTokens != 1_000_000 {
		t.Errorf("#5: continues #%d with a budget of %d", got.ContinuesNumber, got.MaxTokens)
	}
}

func mustTask(t *testing.T, s *server, n int64) domain.Task {
	t.Helper()
	task, err := s.store.GetTask(s.ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestShowMakesTheCallVisible: the CLI shows a call to approve as chat
// does (render.Visible): padding that prints blank collapsed to its code
// point and count, a host's letter of another script named.
func TestShowMakesTheCallVisible(t *testing.T) {
	url := "https://g\u0456thub.com/" + strings.Repeat("\u3164", 2600) + "x"
	s := newServer(t, testkit.NewScriptedModel().Decide("http_get", map[string]string{"url": url}, 10, "continue"), "")
	if _, err := s.tasks.Create(s.ctx, domain.NewTask{Goal: "Fetch", RequestorID: "u1", Platform: "console", RoomID: "console", Actor: "u1", Now: t0}); err != nil {
		t.Fatal(err)
	}
	s.step()
	code, out, errOut := run(t, s.env, "show", "1")
	want := `Tool call:     http_get {"url":"https://gіthub.com/⟨U+3164⟩×2600x ⟨Cyrillic і⟩"}`
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("taskloom tasks show 1 = %d\n%s%s\nwant it to show %s", code, out, errOut, want)
	}
}
