package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// configureTool is a tool with nested objects in its schema, as an MCP
// server's may have: options is closed, labels free-form.
type configureTool struct{}

func (configureTool) Info() plugin.ActionInfo {
	return plugin.ActionInfo{Name: "configure", Description: "Set options.", Tool: true,
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["options"],"properties":{` +
			`"options":{"type":"object","additionalProperties":false,"properties":{"mode":{"type":"string"}}},` +
			`"labels":{"type":"object"}}}`)}
}

func (configureTool) Handle(context.Context, *plugin.Call) (plugin.Result, error) {
	return plugin.Result{Success: true, Text: "configured"}, nil
}

// ran records the actions the runtime started.
type ran struct {
	mu    sync.Mutex
	names []string
}

func (r *ran) watch(rt *plugin.Runtime) {
	rt.Subscribe(plugin.ActionStarted, func(_ context.Context, ev plugin.Event) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.names = append(r.names, ev.Action)
	})
}

func (r *ran) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.names
	r.names = nil
	return out
}

// strictCase is one malformed call: its arguments as the model wrote them
// and a phrase its refusal must have.
type strictCase struct {
	name, args, says string
}

// strictCases builds, from a tool's declared schema, the calls each tool
// must refuse: its first required parameter (else its first) named in
// upper case beside itself, given twice, given twice with the second
// spelled with a \u escape, a field it does not take, and a key given
// twice inside that parameter's value.
func strictCases(t *testing.T, info plugin.ActionInfo) []strictCase {
	t.Helper()
	var s struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(info.Parameters, &s); err != nil || len(s.Properties) == 0 {
		t.Fatalf("%s declares no parameters (%v): the table cannot test it", info.Name, err)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range s.Properties {
			if !yield(n) {
				return
			}
		}
	})
	prop := names[0]
	if len(s.Required) > 0 {
		prop = slices.Min(s.Required)
	}
	value := func(name string) string {
		var p struct{ Type string }
		_ = json.Unmarshal(s.Properties[name], &p)
		switch p.Type {
		case "integer", "number":
			return "1"
		case "object":
			return `{}`
		}
		return `"SHOWN"`
	}
	other := func(name string) string {
		if value(name) == "1" {
			return "2"
		}
		return `"RAN"`
	}
	// The required parameters besides prop, valid as far as their type.
	var base []string
	for _, r := range s.Required {
		if r != prop {
			base = append(base, fmt.Sprintf("%q:%s", r, value(r)))
		}
	}
	obj := func(fields ...string) string {
		return "{" + strings.Join(append(slices.Clone(base), fields...), ",") + "}"
	}
	first := fmt.Sprintf("%q:%s", prop, value(prop))
	escaped := fmt.Sprintf(`"\u%04x%s"`, prop[0], prop[1:])
	return []strictCase{
		{"case-folded key", obj(first, fmt.Sprintf("%q:%s", strings.ToUpper(prop), other(prop))), "case-sensitive"},
		{"repeated key", obj(first, fmt.Sprintf("%q:%s", prop, other(prop))), "given twice"},
		{"repeated escaped key", obj(first, escaped+":"+other(prop)), "given twice"},
		{"unknown field", obj(first, `"bogus":"x"`), `There is no parameter "bogus"`},
		{"nested repeated key", obj(fmt.Sprintf(`%q:{"k":1,"k":2}`, prop)), "given twice"},
	}
}

// oneSentence reports whether s is one sentence: no line break, one full
// stop, at its end.
func oneSentence(s string) bool {
	return s != "" && !strings.ContainsAny(s, "\n") && strings.HasSuffix(s, ".") &&
		!strings.Contains(strings.TrimSuffix(s, "."), ". ")
}

// TestStrictArgumentsRefused: for every tool a task may use (enumerated
// from the registry, so a new tool is covered as it is registered), a
// call whose arguments name a parameter in another case, repeat a key
// (written as is or escaped), carry a field the tool does not take or
// repeat a key inside a value is refused before anything else: its step
// fails with one sentence the model reads and can act on, the tool does
// not run and nobody is asked to approve it. A person wants this because
// encoding/json reads such a call as something other than its text says
// (case folded, the last of two keys wins): the approval request would
// show one command and run another. Both the loop strategy (a decision's
// params) and the tools strategy (native arguments) are covered, with the
// tools needing approval and without.
func TestStrictArgumentsRefused(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		for _, approve := range []bool{false, true} {
			for _, strategy := range []string{domain.StrategyLoop, domain.StrategyTools} {
				fake := testkit.NewOpenAI(t)
				var approveTools []string
				f := newNotifiedFixture(t, open, fake, func(o *tasks.Options) { o.ApproveTools = approveTools },
					actions.RunCommand{Sandbox: &actions.Sandbox{}}, configureTool{})
				var offered []plugin.ActionInfo
				probe := domain.Task{RoomID: "console"}
				for _, a := range f.rt.Actions() {
					if a.Info().OffersTo(probe) {
						offered = append(offered, a.Info())
					}
				}
				if approve {
					for _, info := range offered {
						approveTools = append(approveTools, info.Name)
					}
					f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test", ApproveTools: approveTools})
				}
				var started ran
				started.watch(f.rt)
				for _, info := range offered {
					cases := strictCases(t, info)
					if info.Name == "configure" {
						cases = append(cases,
							strictCase{"nested case-folded key", `{"options":{"mode":"a","MODE":"b"}}`, `"options.MODE" is spelled "options.mode"`},
							strictCase{"nested unknown field", `{"options":{"mode":"a","force":true}}`, `There is no key "force" in "options"`},
							strictCase{"repeated key in a free-form object", `{"options":{},"labels":{"a":"1","\u0061":"2"}}`, `"labels.a" is given twice`})
					}
					for _, c := range cases {
						name := fmt.Sprintf("%s/approve=%v/%s/%s", strategy, approve, info.Name, c.name)
						if strategy == domain.StrategyTools {
							fake.ReplyToolCalls("", testkit.OpenAIToolCall{ID: "call_1", Name: info.Name, Arguments: c.args})
						} else {
							fake.Reply(`{"thought":"t","action":"` + info.Name + `","params":` + c.args + `,"progress":10,"status":"continue","summary":""}`)
						}
						n := f.create("Try "+info.Name, func(in *domain.NewTask) { in.Strategy = strategy }).Number
						f.step("test")
						steps := f.steps(n)
						if len(steps) != 1 || steps[0].Success || steps[0].Action != info.Name {
							t.Fatalf("%s: steps = %+v; want one failed step of %s", name, steps, info.Name)
						}
						if e := steps[0].Error; !oneSentence(e) || !strings.Contains(e, c.says) {
							t.Errorf("%s: the step says %q; want one sentence saying %q", name, e, c.says)
						}
						if got := f.task(n); got.WaitingOn == domain.WaitApproval || got.ApprovalAction != "" || got.Status.Terminal() || got.Status == domain.StatusWaiting {
							t.Errorf("%s: task %s waiting on %q for %q; want it to go on and try again, nothing asked", name, got.Status, got.WaitingOn, got.ApprovalAction)
						}
						if r := started.take(); len(r) > 0 {
							t.Errorf("%s: ran %v; want nothing run", name, r)
						}
						if _, err := f.svc.Cancel(f.ctx, n, "u1"); err != nil {
							t.Fatal(err)
						}
					}
				}
				f.check()
			}
		}
	})
}

// approvalRequests are the approval requests in the outbox, each as its
// id and text.
func (f *fixture) approvalRequests() []string {
	f.t.Helper()
	var out []string
	for {
		room, rows, err := f.store.ClaimRoom(f.ctx, domain.RoomClaim{Owner: "reader", Now: f.clk.Now(), Lease: time.Hour})
		if err != nil {
			f.t.Fatal(err)
		}
		if room == "" {
			return out
		}
		for _, r := range rows {
			var p struct{ Kind, Text, Call string }
			if json.Unmarshal(r.Payload, &p) == nil && p.Kind == "approval" {
				out = append(out, p.Call+" "+p.Text)
			}
		}
	}
}

// spyCommand is run_command as declared, whose Handle records the
// parameters it ran with, and the command it read from them, instead of
// running it.
type spyCommand struct {
	mu  sync.Mutex
	ran []string
}

func (*spyCommand) Info() plugin.ActionInfo { return actions.RunCommand{}.Info() }

func (s *spyCommand) Handle(_ context.Context, call *plugin.Call) (plugin.Result, error) {
	var p struct {
		Command string `json:"command"`
	}
	// As leniently as a tool outside Taskloom (an MCP server) may read
	// its arguments: what it is given must already be the call shown.
	if err := json.Unmarshal(call.Params, &p); err != nil {
		return plugin.Result{Error: err.Error()}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ran = append(s.ran, string(call.Params)+" => "+p.Command)
	return plugin.Result{Success: true, Text: "ran"}, nil
}

// TestApprovalShowsDecodedCall: a call whose arguments escape ">" and
// "&&" (as Go's encoder and many models write them) is shown for approval
// with ">" and "&&" as they are, not as \u003e and \u0026\u0026 — a
// person reads the command, not its escapes — and the call run after
// Approve is exactly the one shown, bound by the request's id.
func TestApprovalShowsDecodedCall(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		for _, strategy := range []string{domain.StrategyLoop, domain.StrategyTools} {
			fake := testkit.NewOpenAI(t)
			spy := &spyCommand{}
			f := newNotifiedFixture(t, open, fake, func(o *tasks.Options) { o.ApproveTools = []string{"run_command"} }, spy)
			const args = `{ "command" : "echo a \u003e b \u0026\u0026 echo c" }`
			const shown = `run_command {"command":"echo a > b && echo c"}`
			if strategy == domain.StrategyTools {
				fake.ReplyToolCalls("", testkit.OpenAIToolCall{ID: "call_1", Name: "run_command", Arguments: args})
			} else {
				fake.Reply(`{"thought":"t","action":"run_command","params":` + args + `,"progress":10,"status":"continue","summary":""}`)
			}
			n := f.create("Write b", func(in *domain.NewTask) { in.Strategy = strategy }).Number
			f.step("test")
			got := f.task(n)
			if got.WaitingOn != domain.WaitApproval || got.ApprovalAction+" "+got.ApprovalParams != shown {
				t.Fatalf("%s: task waits on %q for %s %s; want approval of %s", strategy, got.WaitingOn, got.ApprovalAction, got.ApprovalParams, shown)
			}
			asked := f.approvalRequests()
			call := domain.ApprovalID(got)
			if want := []string{call + " " + shown}; !slices.Equal(asked, want) {
				t.Fatalf("%s: approval requests %q; want %q: the command with > and && as they are, under the pending call's id", strategy, asked, want)
			}
			if _, err := f.svc.Approve(f.ctx, n, "u1", call); err != nil {
				t.Fatalf("%s: approving the shown call %s: %v", strategy, call, err)
			}
			f.step("test")
			if want := []string{`{"command":"echo a > b && echo c"} => echo a > b && echo c`}; !slices.Equal(spy.ran, want) {
				t.Fatalf("%s: ran %q; want exactly the shown call %q", strategy, spy.ran, want)
			}
			steps := f.steps(n)
			if len(steps) != 1 || !steps[0].Success || !sameJSON(string(steps[0].Params), `{"command":"echo a > b && echo c"}`) {
				t.Fatalf("%s: steps = %+v; want the approved call's step", strategy, steps)
			}
			f.check()
		}
	})
}

// TestReportProgressStrict: the tools strategy's own report_progress is
// read as strictly as any tool: {"progress":5,"PROGRESS":90} would
// otherwise report 90 while its text reads 5, and the stale rule that
// ends a task making no progress would be fooled.
func TestReportProgressStrict(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newNotifiedFixture(t, open, fake, nil)
		n := f.create("Report", func(in *domain.NewTask) { in.Strategy = domain.StrategyTools }).Number
		fake.ReplyToolCalls("", testkit.OpenAIToolCall{ID: "call_1", Name: "report_progress", Arguments: `{"progress":5,"PROGRESS":90}`})
		f.step("test")
		steps := f.steps(n)
		if len(steps) != 1 || steps[0].Success || !oneSentence(steps[0].Error) || !strings.Contains(steps[0].Error, `"PROGRESS" is spelled "progress"`) {
			t.Fatalf("steps = %+v; want report_progress refused with one sentence", steps)
		}
		if got := f.task(n); got.Progress != 0 {
			t.Fatalf("progress = %d after a refused report; want 0", got.Progress)
		}
		f.check()
	})
}

// TestStepsKeepDecodedParams: a call that runs without approval keeps, on
// its step, the parameters as decoded ("x > y"), not the model's escapes,
// from both strategies: the timeline and the next prompt read what ran.
func TestStepsKeepDecodedParams(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		for _, strategy := range []string{domain.StrategyLoop, domain.StrategyTools} {
			fake := testkit.NewOpenAI(t)
			f := newNotifiedFixture(t, open, fake, nil)
			const args = `{"content":"x \u003e y \u0026\u0026 z","path":"a.sh"}`
			if strategy == domain.StrategyTools {
				fake.ReplyToolCalls("", testkit.OpenAIToolCall{ID: "call_1", Name: "write_file", Arguments: args})
			} else {
				fake.Reply(`{"thought":"t","action":"write_file","params":` + args + `,"progress":10,"status":"continue","summary":""}`)
			}
			n := f.create("Write", func(in *domain.NewTask) { in.Strategy = strategy }).Number
			f.step("test")
			steps := f.steps(n)
			if len(steps) != 1 || !steps[0].Success || strings.Contains(string(steps[0].Params), `\u00`) ||
				!strings.Contains(string(steps[0].Params), `"x > y && z"`) {
				t.Fatalf("%s: steps = %+v (params %s); want write_file's step with the decoded content", strategy, steps, steps[0].Params)
			}
			if data, err := f.file(n, "a.sh"); err != nil || data != "x > y && z" {
				t.Fatalf("%s: a.sh = %q, %v", strategy, data, err)
			}
			f.check()
		}
	})
}

// TestApprovedLenientCallRefused: a call asked for before calls were read
// strictly (a request still pending across an upgrade) is read strictly
// when approved: {"command":"echo SHOWN","COMMAND":"echo RAN"} is
// refused, not run as the last of its keys says. A person approving must
// never run something other than what the call reads.
func TestApprovedLenientCallRefused(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		spy := &spyCommand{}
		const raw = `{"command":"echo SHOWN","COMMAND":"echo RAN"}`
		// The strategy asks as Turn.Act did before: the call kept as written.
		old := tasks.StrategyFunc(func(_ context.Context, turn *tasks.Turn) (domain.Outcome, error) {
			o := turn.Outcome()
			o.Step.Action, o.Step.Params, o.Step.Role = "run_command", json.RawMessage(raw), domain.RoleAgent
			o.Wait, o.Verdict = domain.WaitApproval, domain.VerdictContinue
			return o, nil
		})
		f := newNotifiedFixture(t, open, fake, func(o *tasks.Options) {
			o.ApproveTools = []string{"run_command"}
			o.Strategies = map[string]tasks.Strategy{"old": old}
		}, spy)
		n := f.create("Old request", func(in *domain.NewTask) { in.Strategy = "old" }).Number
		f.step("test")
		got := f.task(n)
		if got.WaitingOn != domain.WaitApproval || !sameJSON(got.ApprovalParams, raw) {
			t.Fatalf("task waits on %q for %s; want the old request pending", got.WaitingOn, got.ApprovalParams)
		}
		if _, err := f.svc.Approve(f.ctx, n, "u1", domain.ApprovalID(got)); err != nil {
			t.Fatal(err)
		}
		f.step("test")
		steps := f.steps(n)
		if len(spy.ran) != 0 || len(steps) != 1 || steps[0].Success || !oneSentence(steps[0].Error) || !strings.Contains(steps[0].Error, "case-sensitive") {
			t.Fatalf("ran %q, steps %+v; want the approved call refused with one sentence, nothing run", spy.ran, steps)
		}
		f.check()
	})
}
