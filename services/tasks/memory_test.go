package tasks_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// memoryFake recalls one marked line and records what it was asked.
type memoryFake struct {
	mu   sync.Mutex
	asks []plugin.MemoryAsk
}

func (m *memoryFake) Section(_ context.Context, ask plugin.MemoryAsk) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asks = append(m.asks, ask)
	return plugin.MemoryHeading + "\n- [knowledge: Runbook] RECALLED-MARK", nil
}

// TestEveryStrategysPromptRecalls: whatever the strategy, the prompt of a
// task's iteration has its "Relevant memory" section, recalled in the
// task's room for its goal; the next iteration's recall is for the goal
// and the latest step.
func TestEveryStrategysPromptRecalls(t *testing.T) {
	for _, strategy := range []string{domain.StrategyLoop, domain.StrategyReact, domain.StrategyTools, domain.StrategyReview,
		domain.StrategySupervisor, domain.StrategyMagentic, domain.StrategyGroupChat} {
		t.Run(strategy, func(t *testing.T) {
			f := newFixture(t, teststore.SQLite)
			mem := &memoryFake{}
			f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test", Memory: mem})
			f.model.Default(func(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
				return plugin.ModelResponse{Text: testkit.DecisionJSON("list_files", nil, 10, "continue")}, nil
			})
			n := f.create("Check the staging database runbook", func(in *domain.NewTask) {
				in.Strategy, in.RoomID = strategy, "discord:C1"
			}).Number
			f.step("test")
			f.step("test")
			reqs := f.model.Requests()
			if len(reqs) == 0 {
				t.Fatal("no model call")
			}
			for i, req := range reqs {
				user := req.Messages[len(req.Messages)-1].Content
				if req.Task != nil && req.Task.Number == n && !strings.Contains(promptText(req), "RECALLED-MARK") {
					t.Fatalf("request %d has no recalled memory:\n%s", i, user)
				}
			}
			mem.mu.Lock()
			defer mem.mu.Unlock()
			if len(mem.asks) == 0 || mem.asks[0].Room != "discord:C1" || !strings.HasPrefix(mem.asks[0].Text, "Check the staging database runbook") {
				t.Fatalf("asks = %+v", mem.asks)
			}
			if last := mem.asks[len(mem.asks)-1]; len(mem.asks) > 1 && !strings.Contains(last.Text, "\n") {
				t.Fatalf("the second iteration's recall is not for the latest step: %q", last.Text)
			}
		})
	}
}

func promptText(req plugin.ModelRequest) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}

// TestPromptMemorySection: the section stands after the history, before
// the iteration line; with no memory there is none.
func TestPromptMemorySection(t *testing.T) {
	task := domain.Task{Number: 7, Name: "Build auth", Goal: "Build the login.", MaxIterations: 50}
	without, err := tasks.BuildIterationPrompt(tasks.PromptInput{System: "s", Task: task})
	if err != nil {
		t.Fatal(err)
	}
	with, err := tasks.BuildIterationPrompt(tasks.PromptInput{System: "s", Task: task, Memory: plugin.MemoryHeading + "\n- [fact] x"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(without[1].Content, "Relevant memory") || !strings.Contains(with[1].Content, "No steps yet: this is the first.\n\n"+plugin.MemoryHeading+"\n- [fact] x\n\nIteration 1") {
		t.Fatalf("without:\n%s\nwith:\n%s", without[1].Content, with[1].Content)
	}
}

// TestIterationMemoryStaysBounded: however much the room remembers —
// many huge documents, hundreds of long messages and facts, all about the
// task's subject — the section its iteration's prompt gets is at most
// plugin.MemorySectionChars, and still recalls something of each kind.
func TestIterationMemoryStaysBounded(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test", Memory: &plugin.Recaller{Store: f.store}})
	f.model.Default(func(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
		return plugin.ModelResponse{Text: testkit.DecisionJSON("", nil, 100, "completed")}, nil
	})
	huge := strings.Repeat("The staging database migration needs care. ", 20000) // ~880 KB
	for i := range 3 {
		if _, err := f.store.AddDocument(f.ctx, domain.Document{Title: strings.Repeat("Staging ", 100) + string(rune('A'+i)), Room: "discord:C1", CreatedAt: t0}, huge); err != nil {
			t.Fatal(err)
		}
	}
	var facts []domain.Fact
	for i := range 300 {
		m, _, err := f.store.SaveMemory(f.ctx, domain.Memory{Platform: "discord", MessageID: strconv.Itoa(i), Room: "discord:C1", AuthorID: "U1", AuthorName: "ann",
			Text: strings.Repeat("the staging database migration ", 200), CreatedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		facts = append(facts, domain.Fact{Room: "discord:C1", About: "discord:U1", Text: "staging database fact " + strconv.Itoa(i) + " " + strings.Repeat("x", 1500), Sources: []int64{m.ID}})
	}
	if _, err := f.store.SaveFacts(f.ctx, facts); err != nil {
		t.Fatal(err)
	}
	f.create("Plan the staging database migration", func(in *domain.NewTask) { in.RoomID = "discord:C1" })
	f.step("test")
	reqs := f.model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	user := reqs[0].Messages[1].Content
	at := strings.Index(user, plugin.MemoryHeading)
	end := strings.Index(user, "\n\nIteration 1 of")
	if at < 0 || end < at {
		t.Fatalf("no memory section:\n%.2000s", user)
	}
	section := user[at:end]
	if n := utf8.RuneCountInString(section); n > plugin.MemorySectionChars {
		t.Fatalf("the section is %d characters, more than %d", n, plugin.MemorySectionChars)
	}
	if strings.Count(section, "\n"+plugin.QuotePrefix+"- [") < 3 {
		t.Fatalf("the section recalls too little:\n%s", section)
	}
	t.Logf("section: %d characters, %d items", utf8.RuneCountInString(section), strings.Count(section, "\n"+plugin.QuotePrefix+"- ["))
}
