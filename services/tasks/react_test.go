package tasks_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/adapters/openai"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/notify"
	"github.com/taskloom/taskloom/services/tasks"
)

// chatRoom is an in-process platform "chat" that keeps what the
// notification service sends it.
type chatRoom struct {
	mu   sync.Mutex
	sent []string
}

func (*chatRoom) Name() string { return "chat" }

func (c *chatRoom) Send(_ context.Context, _ string, m plugin.Outgoing) (plugin.SentMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, m.Text)
	return plugin.SentMessage{IDs: []string{fmt.Sprint(len(c.sent))}}, nil
}

// last is the latest message sent, "" when none was.
func (c *chatRoom) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sent) == 0 {
		return ""
	}
	return c.sent[len(c.sent)-1]
}

// notifiedFixture is a wire fixture (go-openai talking to fake, no
// retries) whose task service writes notifications, which note sends to
// the chat room room; extra actions join the tools.
type notifiedFixture struct {
	*fixture
	note *notify.Service
	room *chatRoom
}

func newNotifiedFixture(t *testing.T, open teststore.Opener, fake *testkit.OpenAI, opts func(*tasks.Options), extra ...plugin.Action) *notifiedFixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), clk: clock.NewFake(t0), store: open(t)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := openai.New(openai.Config{BaseURL: fake.URL(), APIKey: "k", HTTPClient: fake.Client(), MaxRetries: -1, Clock: f.clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	room := &chatRoom{}
	f.rt = plugin.New(plugin.Options{Store: f.store, Clock: f.clk, Logger: quiet})
	if err := f.rt.Register(
		&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: m}},
		&plugin.Plugin{Name: "tools", Actions: append(actions.Tools(actions.ToolConfig{}), extra...)},
		&plugin.Plugin{Name: "chat", Platforms: []plugin.Platform{room}},
	); err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Start(f.ctx); err != nil {
		t.Fatal(err)
	}
	note := notify.New(notify.Options{Runtime: f.rt, Owner: "test"})
	o := tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test", Notify: note.Outbox}
	if opts != nil {
		opts(&o)
	}
	f.svc = tasks.New(o)
	return &notifiedFixture{fixture: f, note: note, room: room}
}

// flush sends the room its batched message, as the 5-second tick does.
func (f *notifiedFixture) flush() string {
	f.t.Helper()
	if _, err := f.note.Flush(f.ctx); err != nil {
		f.t.Fatal(err)
	}
	return f.room.last()
}

// lastUser is the last user message of a request the fake received.
func lastUser(r testkit.OpenAIRequest) string {
	msgs := r.Body.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

// TestReactCycles: a react task's claims cycle thought → action →
// observation, each one model call with its role line, the goal and its
// phase's temperature; only observations move progress and the stale
// counter; the room's batched messages show the thoughts and
// observations; and max_iterations counts cycles, not claims.
func TestReactCycles(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newNotifiedFixture(t, open, fake, nil)
		const goal = "Write two notes and check they are there"
		n := f.create(goal, func(in *domain.NewTask) {
			in.Strategy, in.RoomID, in.Platform, in.MaxIterations = domain.StrategyReact, "chat:C1", "chat", 2
		}).Number

		fake.Reply(`{"thought":"Start with the first note."}`)
		fake.Reply(`{"action":"write_file","params":{"path":"notes/a.md","content":"A"}}`)
		fake.Reply(`{"observation":"The first note is written.","progress":40,"status":"continue"}`)
		fake.Reply(`{"thought":"Now check the workspace."}`)
		fake.Reply(`{"action":"list_files","params":{}}`)
		fake.Reply(`{"observation":"notes/a.md is there.","progress":60,"status":"continue"}`)

		f.step("test")
		got := f.task(n)
		if got.Phase != domain.RoleAction || got.Progress != 0 || got.StaleCounter != 0 || got.Iteration != 1 || got.Status != domain.StatusRunning {
			t.Fatalf("after the thought: phase %q progress %d stale %d iteration %d %s", got.Phase, got.Progress, got.StaleCounter, got.Iteration, got.Status)
		}
		msg := f.flush()
		if !strings.Contains(msg, "💭 Thought: Start with the first note.") || strings.Contains(msg, "Last action") {
			t.Fatalf("message after the thought:\n%s", msg)
		}

		f.step("test")
		if got := f.task(n); got.Phase != domain.RoleObservation || got.Progress != 0 || got.StaleCounter != 0 {
			t.Fatalf("after the action: phase %q progress %d stale %d", got.Phase, got.Progress, got.StaleCounter)
		}
		if data, err := f.file(n, "notes/a.md"); err != nil || data != "A" {
			t.Fatalf("notes/a.md = %q, %v; the action's tool did not run", data, err)
		}
		f.step("test")
		if got := f.task(n); got.Phase != domain.RoleThought || got.Progress != 40 || got.Status != domain.StatusRunning {
			t.Fatalf("after the observation: phase %q progress %d %s", got.Phase, got.Progress, got.Status)
		}
		msg = f.flush()
		for _, want := range []string{"Progress: 0% → 40%", "`write_file notes/a.md` ✓", "🔍 Observation: The first note is written."} {
			if !strings.Contains(msg, want) {
				t.Errorf("message after the first cycle lacks %q:\n%s", want, msg)
			}
		}

		for range 3 {
			f.step("test")
		}
		got = f.task(n)
		if got.Status != domain.StatusStalemate || got.Iteration != 6 || got.Progress != 60 || got.Error != "reached the limit of 2 iterations" {
			t.Fatalf("after two cycles: %s iteration %d progress %d error %q; want a stalemate at the limit of 2 cycles", got.Status, got.Iteration, got.Progress, got.Error)
		}
		if f.step("test") {
			t.Fatal("an ended task was served again")
		}

		reqs := fake.Requests()
		roles := []string{"thought", "action", "observation", "thought", "action", "observation"}
		temps := []float64{0.7, 0.3, 0.7, 0.7, 0.3, 0.7}
		if len(reqs) != len(roles) {
			t.Fatalf("%d model calls, want %d", len(reqs), len(roles))
		}
		for i, r := range reqs {
			user := strings.TrimSpace(lastUser(r))
			if !strings.HasSuffix(user, "\nRole: "+roles[i]) || !strings.Contains(user, goal) {
				t.Errorf("request %d: the user message does not end with the role line %q or lacks the goal:\n%s", i+1, roles[i], user)
			}
			if temp, ok := r.Temperature(); !ok || temp != temps[i] {
				t.Errorf("request %d (%s): temperature %v, want %v", i+1, roles[i], temp, temps[i])
			}
			shown := strings.Contains(r.Body.Messages[0].Content, "- write_file:")
			if shown != (roles[i] == "action") {
				t.Errorf("request %d (%s): tools shown = %v; only an action sees them", i+1, roles[i], shown)
			}
			if len(r.Body.Tools) != 0 {
				t.Errorf("request %d offers native tools", i+1)
			}
		}
		if !strings.Contains(lastUser(reqs[1]), "Your thought for this cycle: Start with the first note.") {
			t.Errorf("the action was not given its thought:\n%s", lastUser(reqs[1]))
		}
		if u := lastUser(reqs[3]); !strings.Contains(u, "Your observation at the end of the last cycle: The first note is written.") ||
			!strings.Contains(u, "This is cycle 2 of at most 2;") {
			t.Errorf("the next thought was not given the observation:\n%s", lastUser(reqs[3]))
		}
		var stepRoles []string
		for _, s := range f.steps(n) {
			stepRoles = append(stepRoles, s.Role)
		}
		if strings.Join(stepRoles, " ") != strings.Join(roles, " ") {
			t.Errorf("step roles %v, want %v", stepRoles, roles)
		}
		f.check()
	})
}

// TestReactEndings: a final answer at an action completes the task with
// it as summary; an observation's done completes it, its stuck fails it;
// flat observations are a stalemate by the stale rule, which thoughts and
// actions do not move; an unusable action is a failed step and the cycle
// goes on to its observation.
func TestReactEndings(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		tests := []struct {
			name    string
			replies []string
			status  domain.Status
			claims  int
			summary string
			errText string
		}{
			{"final answer", []string{
				`{"thought":"The goal needs nothing but an answer."}`,
				`{"final_answer":"The answer is 42."}`,
			}, domain.StatusCompleted, 2, "The answer is 42.", ""},
			{"done at an observation", []string{
				`Plain words are a thought too.`,
				"```json\n{\"action\":\"list_files\",\"params\":null}\n```",
				`{"observation":"Everything is in place.","progress":"100%","status":"done"}`,
			}, domain.StatusCompleted, 3, "Everything is in place.", ""},
			{"stuck at an observation", []string{
				`{"thought":"Look for the server."}`,
				`{"action":"http_get","params":{"url":"http://127.0.0.1:1/"}}`,
				`{"observation":"The server cannot be reached from here.","progress":5,"status":"stuck"}`,
			}, domain.StatusFailed, 3, "", "The server cannot be reached from here."},
			{"flat observations", []string{
				`{"thought":"a"}`, `{"action":"list_files","params":{}}`, `{"observation":"nothing yet","progress":0,"status":"continue"}`,
				`{"thought":"b"}`, `not an action at all`, `{"observation":"still nothing","progress":0,"status":"continue"}`,
			}, domain.StatusStalemate, 6, "", "no progress in 2 iterations"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				fake := testkit.NewOpenAI(t)
				f := newNotifiedFixture(t, open, fake, nil)
				for _, r := range tt.replies {
					fake.Reply(r)
				}
				n := f.create("Find the answer", func(in *domain.NewTask) {
					in.Strategy, in.MaxStaleIterations = domain.StrategyReact, 2
				}).Number
				for i := range tt.claims {
					f.step("test")
					if got := f.task(n); i%3 != 2 && !got.Status.Terminal() && got.StaleCounter != i/3 {
						t.Fatalf("claim %d (not an observation) moved the stale counter to %d", i+1, got.StaleCounter)
					}
				}
				got := f.task(n)
				if got.Status != tt.status || got.Iteration != tt.claims || got.Summary != tt.summary || got.Error != tt.errText {
					t.Fatalf("%s after %d claims, summary %q, error %q; want %s after %d, %q, %q",
						got.Status, got.Iteration, got.Summary, got.Error, tt.status, tt.claims, tt.summary, tt.errText)
				}
				if tt.name == "flat observations" {
					steps := f.steps(n)
					if bad := steps[4]; bad.Role != domain.RoleAction || bad.Success || !strings.Contains(bad.Error, "not a usable action") {
						t.Errorf("the unusable action's step = %+v", bad)
					}
				}
				f.check()
			})
		}
	})
}
