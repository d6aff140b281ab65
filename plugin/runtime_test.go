package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestStartOrder(t *testing.T) {
	t.Parallel()
	p := func(name string, deps ...string) *plugin.Plugin {
		return &plugin.Plugin{Name: name, Dependencies: deps}
	}
	tests := []struct {
		name    string
		plugins []*plugin.Plugin
		want    []string
		wantErr string
	}{
		{"registration order without deps", []*plugin.Plugin{p("a"), p("b"), p("c")}, []string{"a", "b", "c"}, ""},
		{"dependencies first", []*plugin.Plugin{p("orchestrator", "store", "model"), p("model"), p("store")}, []string{"model", "store", "orchestrator"}, ""},
		{"diamond", []*plugin.Plugin{p("d", "b", "c"), p("b", "a"), p("c", "a"), p("a")}, []string{"a", "b", "c", "d"}, ""},
		{"missing dependency names both", []*plugin.Plugin{p("discord", "orchestrator")}, nil, `plugin "discord" depends on "orchestrator", which is not registered`},
		{"cycle names the plugins", []*plugin.Plugin{p("x"), p("a", "b"), p("b", "c"), p("c", "a")}, nil, "plugin dependency cycle: a → b → c → a"},
		{"self cycle", []*plugin.Plugin{p("a", "a")}, nil, "plugin dependency cycle: a → a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := plugin.New(plugin.Options{Logger: quietLogger()})
			if err := rt.Register(tt.plugins...); err != nil {
				t.Fatal(err)
			}
			order, err := rt.StartOrder()
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if err := rt.Start(context.Background()); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Start err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range order {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("order = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRegisterRefusesDuplicatesAndNameless(t *testing.T) {
	t.Parallel()
	rt := plugin.New(plugin.Options{Logger: quietLogger()})
	if err := rt.Register(&plugin.Plugin{Name: "a"}, &plugin.Plugin{Name: "a"}); err == nil {
		t.Fatal("registering a plugin name twice succeeded")
	}
	if err := rt.Register(&plugin.Plugin{}); err == nil {
		t.Fatal("registering a nameless plugin succeeded")
	}
}

// recorder keeps what happened, in order, across services and hooks.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) { r.mu.Lock(); r.log = append(r.log, s); r.mu.Unlock() }
func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

type service struct {
	name    string
	rec     *recorder
	failing bool
}

func (s *service) Name() string { return s.name }
func (s *service) Start(context.Context) error {
	if s.failing {
		return errors.New("port in use")
	}
	s.rec.add("start " + s.name)
	return nil
}
func (s *service) Stop(context.Context) error { s.rec.add("stop " + s.name); return nil }

func TestStartInitsAndStopsInOrder(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	mk := func(name string, deps ...string) *plugin.Plugin {
		return &plugin.Plugin{
			Name: name, Dependencies: deps,
			Init:     func(context.Context, *plugin.Runtime) error { rec.add("init " + name); return nil },
			Services: []plugin.Service{&service{name: name + "-svc", rec: rec}},
		}
	}
	rt := plugin.New(plugin.Options{Logger: quietLogger()})
	if err := rt.Register(mk("top", "base"), mk("base")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"init base", "start base-svc", "init top", "start top-svc", "stop top-svc", "stop base-svc"}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestStartFailureStopsWhatStartedAndNamesThePlugin(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	rt := plugin.New(plugin.Options{Logger: quietLogger()})
	_ = rt.Register(
		&plugin.Plugin{Name: "base", Services: []plugin.Service{&service{name: "db", rec: rec}}},
		&plugin.Plugin{Name: "web", Dependencies: []string{"base"}, Services: []plugin.Service{&service{name: "http", rec: rec, failing: true}}},
	)
	err := rt.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), `plugin "web"`) || !strings.Contains(err.Error(), "port in use") {
		t.Fatalf("err = %v", err)
	}
	if got := rec.get(); !slices.Equal(got, []string{"start db", "stop db"}) {
		t.Fatalf("got %v", got)
	}
}

func TestDuplicateActionIsAStartError(t *testing.T) {
	t.Parallel()
	rt := plugin.New(plugin.Options{Logger: quietLogger()})
	_ = rt.Register(
		&plugin.Plugin{Name: "a", Actions: []plugin.Action{echo("help")}},
		&plugin.Plugin{Name: "b", Actions: []plugin.Action{echo("help")}},
	)
	if err := rt.Start(context.Background()); err == nil || !strings.Contains(err.Error(), `action "help" is already registered`) {
		t.Fatalf("err = %v", err)
	}
}

func TestRoutesMountUnderPluginName(t *testing.T) {
	t.Parallel()
	rt := plugin.New(plugin.Options{Logger: quietLogger()})
	_ = rt.Register(&plugin.Plugin{Name: "stats", Routes: []plugin.Route{{Method: "GET", Path: "/summary"}, {Path: "raw"}}})
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rt.Routes() {
		got = append(got, r.Pattern)
	}
	want := []string{"GET /plugins/stats/summary", "/plugins/stats/raw"}
	if !slices.Equal(got, want) {
		t.Fatalf("routes = %v, want %v", got, want)
	}
}

// provider is a scripted provider.
type provider struct {
	info plugin.ProviderInfo
	get  func(ctx context.Context) (plugin.ProviderResult, error)
}

func (p provider) Info() plugin.ProviderInfo { return p.info }
func (p provider) Get(ctx context.Context, _ *plugin.Message, _ *plugin.State) (plugin.ProviderResult, error) {
	return p.get(ctx)
}

// TestComposeStateOrdersByPositionAndCutsOffAtBudget runs in a synctest
// bubble: time moves only when every goroutine is blocked, so the fast
// providers have certainly answered before the budget runs out, and the
// budget is measured exactly.
func TestComposeStateOrdersByPositionAndCutsOffAtBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hangRelease := make(chan struct{})
		hung := provider{plugin.ProviderInfo{Name: "slow", Position: 0}, func(ctx context.Context) (plugin.ProviderResult, error) {
			<-hangRelease // ignores its context on purpose: the budget must not wait for it
			return plugin.ProviderResult{Text: "too late"}, nil
		}}
		failing := provider{plugin.ProviderInfo{Name: "broken", Position: 1}, func(context.Context) (plugin.ProviderResult, error) {
			return plugin.ProviderResult{Text: "never shown"}, errors.New("backend down")
		}}
		text := func(name string, pos int, text string) provider {
			return provider{plugin.ProviderInfo{Name: name, Position: pos}, func(context.Context) (plugin.ProviderResult, error) {
				return plugin.ProviderResult{Text: text, Values: map[string]any{name: true}}, nil
			}}
		}
		rt := plugin.New(plugin.Options{Logger: quietLogger(), Clock: clock.Real{}, ProviderBudget: 2 * time.Second})
		_ = rt.Register(&plugin.Plugin{Name: "p", Providers: []plugin.Provider{
			text("tasks", 20, "TASKS"),
			hung,
			failing,
			text("room", 10, "ROOM"),
			provider{plugin.ProviderInfo{Name: "secret", Private: true}, func(context.Context) (plugin.ProviderResult, error) {
				return plugin.ProviderResult{Text: "PRIVATE"}, nil
			}},
		}})
		if err := rt.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		st := rt.ComposeState(context.Background(), &plugin.Message{})
		if waited := time.Since(start); waited != 2*time.Second {
			t.Fatalf("ComposeState took %s, want exactly the 2s budget", waited)
		}
		close(hangRelease)
		synctest.Wait() // the hung provider's goroutine ends too
		if st.Text != "ROOM\n\nTASKS" {
			t.Fatalf("text = %q, want ROOM then TASKS", st.Text)
		}
		if st.Values["room"] != true || st.Values["tasks"] != true || len(st.Values) != 2 {
			t.Fatalf("values = %v", st.Values)
		}
		var names []string
		for _, o := range st.Providers {
			names = append(names, o.Name)
			if o.Name == "slow" && (!o.TimedOut || !errors.Is(o.Err, plugin.ErrProviderTimeout)) {
				t.Errorf("slow provider not marked as timed out: %+v", o)
			}
		}
		if !slices.Equal(names, []string{"slow", "broken", "room", "tasks"}) {
			t.Fatalf("providers = %v", names)
		}
	})
}

func TestComposeStateDoesNotWaitWhenAllAnswer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rt := plugin.New(plugin.Options{Logger: quietLogger(), ProviderBudget: time.Minute})
		_ = rt.Register(&plugin.Plugin{Name: "p", Providers: []plugin.Provider{
			provider{plugin.ProviderInfo{Name: "a"}, func(context.Context) (plugin.ProviderResult, error) {
				return plugin.ProviderResult{Text: "A"}, nil
			}},
		}})
		_ = rt.Start(context.Background())
		start := time.Now()
		if st := rt.ComposeState(context.Background(), nil); st.Text != "A" || time.Since(start) != 0 {
			t.Fatalf("text %q after %s", st.Text, time.Since(start))
		}
	})
}

func TestComposeStateIncludesPrivateOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	rt := plugin.New(plugin.Options{Logger: quietLogger()})
	mk := func(name string, private, dynamic bool) provider {
		return provider{plugin.ProviderInfo{Name: name, Private: private, Dynamic: dynamic}, func(context.Context) (plugin.ProviderResult, error) {
			return plugin.ProviderResult{Text: name}, nil
		}}
	}
	_ = rt.Register(&plugin.Plugin{Name: "p", Providers: []plugin.Provider{mk("a", false, false), mk("b", true, false), mk("c", false, true)}})
	_ = rt.Start(context.Background())
	if st := rt.ComposeState(context.Background(), nil); st.Text != "a" {
		t.Fatalf("default text = %q", st.Text)
	}
	if st := rt.ComposeState(context.Background(), nil, "b", "c"); st.Text != "a\n\nb\n\nc" {
		t.Fatalf("with include text = %q", st.Text)
	}
}

// action is a scripted action.
type action struct {
	info     plugin.ActionInfo
	match    func(string) (json.RawMessage, bool)
	handle   func(ctx context.Context, c *plugin.Call) (plugin.Result, error)
	validate func(c *plugin.Call) error
}

func (a *action) Info() plugin.ActionInfo { return a.info }
func (a *action) Handle(ctx context.Context, c *plugin.Call) (plugin.Result, error) {
	return a.handle(ctx, c)
}

type matchingAction struct{ *action }

func (a matchingAction) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	return a.match(msg.Text)
}

type validatingAction struct{ matchingAction }

func (a validatingAction) Validate(_ context.Context, c *plugin.Call) error { return a.validate(c) }

var (
	_ plugin.CommandMatcher  = matchingAction{}
	_ plugin.ActionValidator = validatingAction{}
)

func echo(name string) plugin.Action {
	return &action{info: plugin.ActionInfo{Name: name}, handle: func(_ context.Context, c *plugin.Call) (plugin.Result, error) {
		return plugin.Result{Success: true, Text: name + ":" + string(c.Params)}, nil
	}}
}

func prefixed(name, prefix string, handle func(context.Context, *plugin.Call) (plugin.Result, error)) matchingAction {
	return matchingAction{&action{
		info: plugin.ActionInfo{Name: name},
		match: func(text string) (json.RawMessage, bool) {
			rest, ok := strings.CutPrefix(text, prefix)
			if !ok {
				return nil, false
			}
			raw, _ := json.Marshal(map[string]string{"arg": strings.TrimSpace(rest)})
			return raw, true
		},
		handle: handle,
	}}
}

type evaluator struct {
	info plugin.EvaluatorInfo
	seen *recorder
}

func (e evaluator) Info() plugin.EvaluatorInfo { return e.info }
func (e evaluator) Evaluate(_ context.Context, ev *plugin.Evaluation) error {
	e.seen.add(e.info.Name + ":" + ev.Message.Text)
	return nil
}

type pipelineFixture struct {
	rt      *plugin.Runtime
	replies *recorder
	events  *recorder
	evals   *recorder
}

func newPipeline(t *testing.T, model plugin.Model, actions ...plugin.Action) *pipelineFixture {
	t.Helper()
	f := &pipelineFixture{replies: &recorder{}, events: &recorder{}, evals: &recorder{}}
	f.rt = plugin.New(plugin.Options{Logger: quietLogger()})
	p := &plugin.Plugin{
		Name:    "test",
		Actions: actions,
		Evaluators: []plugin.Evaluator{
			evaluator{plugin.EvaluatorInfo{Name: "always", AlwaysRun: true}, f.evals},
			evaluator{plugin.EvaluatorInfo{Name: "after-reply"}, f.evals},
		},
	}
	if model != nil {
		p.Models = map[plugin.ModelType]plugin.Model{plugin.ModelText: model}
	}
	if err := f.rt.Register(p); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []plugin.EventType{plugin.RunStarted, plugin.MessageReceived, plugin.ActionStarted, plugin.ActionCompleted, plugin.RunEnded} {
		f.rt.Subscribe(typ, func(_ context.Context, ev plugin.Event) {
			s := string(ev.Type)
			if ev.Action != "" {
				s += " " + ev.Action
			}
			f.events.add(s)
		})
	}
	if err := f.rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *pipelineFixture) send(t *testing.T, msg plugin.Message) []string {
	t.Helper()
	before := len(f.replies.get())
	err := f.rt.HandleMessage(context.Background(), msg, func(_ context.Context, r plugin.Response) error {
		f.replies.add(r.Text)
		return nil
	})
	if err != nil {
		t.Fatalf("HandleMessage: %v", err)
	}
	return f.replies.get()[before:]
}

func TestPipelineRunsMatchedCommandAndEmitsEventsInOrder(t *testing.T) {
	t.Parallel()
	f := newPipeline(t, nil, prefixed("create_task", "create task", func(_ context.Context, c *plugin.Call) (plugin.Result, error) {
		return plugin.Result{Success: true, Text: "Created: " + string(c.Params)}, nil
	}))
	got := f.send(t, plugin.Message{ID: "m1", Platform: "console", Room: "console", Text: "create task Build auth", DM: true})
	if !slices.Equal(got, []string{`Created: {"arg":"Build auth"}`}) {
		t.Fatalf("replies = %q", got)
	}
	want := []string{"RUN_STARTED", "MESSAGE_RECEIVED", "ACTION_STARTED create_task", "ACTION_COMPLETED create_task", "RUN_ENDED"}
	if ev := f.events.get(); !slices.Equal(ev, want) {
		t.Fatalf("events = %v\nwant %v", ev, want)
	}
	if ev := f.evals.get(); !slices.Equal(ev, []string{"always:create task Build auth", "after-reply:create task Build auth"}) {
		t.Fatalf("evaluators = %v", ev)
	}
}

func TestPipelineIgnoresChatterButRunsAlwaysEvaluators(t *testing.T) {
	t.Parallel()
	called := false
	f := newPipeline(t, nil, prefixed("create_task", "create task", func(context.Context, *plugin.Call) (plugin.Result, error) {
		called = true
		return plugin.Result{Success: true, Text: "created"}, nil
	}))
	got := f.send(t, plugin.Message{Platform: "discord", Room: "discord:1", Text: "create task in passing"})
	if len(got) != 0 || called {
		t.Fatalf("replied %q (called=%v) to a message not addressed to the bot", got, called)
	}
	if ev := f.evals.get(); !slices.Equal(ev, []string{"always:create task in passing"}) {
		t.Fatalf("evaluators = %v", ev)
	}
	for _, m := range []plugin.Message{
		{Text: "create task a", Mentioned: true},
		{Text: "create task b", ReplyToBot: true},
		{Text: "create task c", Command: true},
		{Text: "create task d", DM: true},
	} {
		if got := f.send(t, m); len(got) != 1 {
			t.Fatalf("%+v: replies = %q, want one", m, got)
		}
	}
}

func TestPipelineSurvivesPanicsAndErrors(t *testing.T) {
	t.Parallel()
	f := newPipeline(t, nil,
		prefixed("explode", "explode", func(context.Context, *plugin.Call) (plugin.Result, error) {
			var m map[string]int
			m["boom"]++ // nil map write: a real panic
			return plugin.Result{}, nil
		}),
		prefixed("fail", "fail", func(context.Context, *plugin.Call) (plugin.Result, error) {
			return plugin.Result{}, errors.New("pq: connection reset by peer")
		}),
		prefixed("refuse", "refuse", func(context.Context, *plugin.Call) (plugin.Result, error) {
			return plugin.Result{Success: false, Error: "Task #99 doesn't exist."}, nil
		}),
		validatingAction{prefixed("admin", "admin", func(context.Context, *plugin.Call) (plugin.Result, error) {
			t.Error("handler ran although Validate refused")
			return plugin.Result{}, nil
		})}.withValidate(func(*plugin.Call) error { return errors.New("only admins can do that") }),
		prefixed("ok", "ok", func(context.Context, *plugin.Call) (plugin.Result, error) {
			return plugin.Result{Success: true, Text: "fine"}, nil
		}),
	)
	cases := []struct{ text, want string }{
		{"explode", "Sorry — something went wrong while running `explode`. It has been logged; please try again."},
		{"fail", "Sorry — something went wrong while running `fail`. It has been logged; please try again."},
		{"refuse", "Task #99 doesn't exist."},
		{"admin", "Only admins can do that."},
		{"ok", "fine"},
	}
	for _, c := range cases {
		got := f.send(t, plugin.Message{Text: c.text, DM: true})
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: replies = %q, want %q", c.text, got, c.want)
		}
		for _, r := range got {
			if strings.Contains(r, "goroutine") || strings.Contains(r, "nil map") || strings.Contains(r, "pq:") {
				t.Errorf("%s: reply leaks internals: %q", c.text, r)
			}
		}
	}
}

func (v validatingAction) withValidate(fn func(*plugin.Call) error) validatingAction {
	v.validate = fn
	return v
}

// TestDemoModelAnswersButRunsNothing: free text reaches the demo model,
// whose reply (said from memory by a rule) is the answer, but an action
// it names never runs: a demo cannot read a request. A reply it cannot
// give falls back to the help.
func TestDemoModelAnswersButRunsNothing(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ reply, want string }{
		{`{"action":"none","params":{},"reply":"(demo model) what I recall"}`, "(demo model) what I recall"},
		{`{"action":"list_tasks","params":{},"reply":""}`, "help:{}"}, // named, not run
		{`not JSON`, "help:{}"},
	} {
		demo := demoModel{tt.reply}
		f := newPipeline(t, demo, echo("help"), echo("list_tasks"))
		got := f.send(t, plugin.Message{Text: "what's the weather?", DM: true})
		if !slices.Equal(got, []string{tt.want}) {
			t.Fatalf("demo replying %s: replies = %q, want %q", tt.reply, got, tt.want)
		}
	}
}

type demoModel struct{ reply string }

func (d demoModel) IsDemo() bool { return true }
func (d demoModel) Generate(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
	return plugin.ModelResponse{Text: d.reply}, nil
}

func TestPipelineLetsARealModelPickAnAction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply string
		want  string
	}{
		{"picks a registered action", `{"action":"list_tasks","params":{"status":"running"},"reply":""}`, `list_tasks:{"status":"running"}`},
		{"fenced JSON", "Sure!\n```json\n{\"action\":\"list_tasks\",\"params\":{},\"reply\":\"\"}\n```", `list_tasks:{}`},
		{"none gives the model's reply", `{"action":"none","params":{},"reply":"I can run tasks for you."}`, "I can run tasks for you."},
		{"unknown action falls back to help", `{"action":"rm_rf","params":{},"reply":""}`, "help:{}"},
		{"not JSON falls back to help", `I think you want the list.`, "help:{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var req plugin.ModelRequest
			model := plugin.ModelFunc(func(_ context.Context, r plugin.ModelRequest) (plugin.ModelResponse, error) {
				req = r
				return plugin.ModelResponse{Text: tt.reply}, nil
			})
			f := newPipeline(t, model, echo("help"), echo("list_tasks"))
			got := f.send(t, plugin.Message{Text: "what is running right now?", Mentioned: true})
			if !slices.Equal(got, []string{tt.want}) {
				t.Fatalf("replies = %q, want %q", got, tt.want)
			}
			if req.Schema == nil || len(req.Messages) != 2 || !strings.Contains(req.Messages[0].Content, "list_tasks") {
				t.Fatalf("model request did not list the actions with a schema: %+v", req)
			}
		})
	}
}

func TestCharacterFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := dir + "/" + name
		if err := writeFile(p, body); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := plugin.LoadCharacter(write("a.json", `{"name":"Loomy","system":"Be terse.","bio":["Builds things.","Ships."],"style":{"all":"Short sentences."},"settings":{"model":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "Loomy" || len(c.Bio) != 2 || c.Settings["model"] != "x" {
		t.Fatalf("character = %+v", c)
	}
	if sp := c.SystemPrompt(); !strings.HasPrefix(sp, "Be terse.") || !strings.Contains(sp, "Builds things. Ships.") || !strings.Contains(sp, "Short sentences.") {
		t.Fatalf("system prompt = %q", sp)
	}
	c, err = plugin.LoadCharacter(write("b.json", `{"bio":"One line."}`))
	if err != nil || c.Name != "Taskloom" || c.System == "" || len(c.Bio) != 1 {
		t.Fatalf("defaults not applied: %+v, %v", c, err)
	}
	if _, err := plugin.LoadCharacter(write("c.json", `{"name": 3}`)); err == nil {
		t.Fatal("a malformed character file loaded")
	}
}
