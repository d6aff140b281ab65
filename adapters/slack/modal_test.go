package slack_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
)

// createTakes says whether the create_task action takes a parameter.
func (e *env) createTakes(name string) bool {
	e.t.Helper()
	act, ok := e.core.Runtime.Action("create_task")
	if !ok {
		e.t.Fatal("no create_task action")
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(act.Info().Parameters, &schema); err != nil {
		e.t.Fatal(err)
	}
	_, takes := schema.Properties[name]
	return takes
}

// openModal has alice run `/task create` in C7 and returns the modal.
func (e *env) openModal() slackfake.View {
	e.t.Helper()
	d := e.deliver(e.fake.SlashCommand("C7", alice, "create"))
	if m, ok := e.immediate(d); ok {
		e.t.Fatalf("/task create answered %q; want an empty acknowledgement and the modal", m.Text)
	}
	e.settle()
	open := e.fake.OpenModals(alice)
	if len(open) != 1 {
		e.t.Fatalf("%d modals open for alice, want 1", len(open))
	}
	return open[0]
}

// submit submits alice's modal and reads the answer.
func (e *env) submit(v slackfake.View, values map[string]string) (slackfake.ViewResponse, slackfake.ViewSubmission) {
	e.t.Helper()
	sub, err := e.fake.SubmitView(alice, v.ID, values)
	if err != nil {
		e.t.Fatal(err)
	}
	d := e.deliver(sub)
	r, err := e.fake.ViewSubmissionResult(sub, d.body)
	if err != nil {
		e.t.Fatal(err)
	}
	return r, sub
}

// strategyFor returns a strategy other than loop that the task service
// has and the modal offers, and one the modal offers that the service does
// not have ("" when there is none of either).
func (e *env) strategyFor() (has, lacks string) {
	for _, s := range e.core.Tasks.Strategies() {
		switch {
		case s == domain.StrategyLoop:
		case slices.Contains(e.core.Tasks.Strategies(), s):
			if has == "" {
				has = s
			}
		case lacks == "":
			lacks = s
		}
	}
	return has, lacks
}

func TestTaskCreateModal(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		v := e.openModal()
		if v.CallbackID != slack.CallbackCreate || v.Title == "" || v.Submit == "" {
			t.Errorf("modal = %+v", v)
		}
		goal, ok := v.Input(slack.BlockGoal)
		if !ok || goal.Optional || goal.Element.Type != "plain_text_input" || !goal.Element.Multiline {
			t.Errorf("goal input = %+v; want a required multiline text", goal)
		}
		strategy, ok := v.Input(slack.BlockStrategy)
		if !ok || strategy.Element.Type != "static_select" || len(strategy.Element.Options) != 7 ||
			strategy.Element.InitialOption == nil || strategy.Element.InitialOption.Value != domain.StrategyLoop {
			t.Errorf("strategy input = %+v; want a select of the seven strategies, loop first", strategy)
		}
		takesMax := e.createTakes("max_iterations")
		if _, hasMax := v.Input(slack.BlockMaxIterations); hasMax != takesMax {
			t.Errorf("max iterations input shown: %v; create_task takes max_iterations: %v", hasMax, takesMax)
		}
		if !takesMax {
			t.Log("create_task does not take max_iterations: the modal leaves the field out")
		}

		// Invalid input: errors by field; nothing is created and the
		// modal stays open.
		r, _ := e.submit(v, map[string]string{slack.BlockGoal: " \n ", slack.BlockStrategy: domain.StrategyLoop})
		if r.Action != "errors" || !strings.Contains(r.Errors[slack.BlockGoal], "what the task should do") {
			t.Errorf("a blank goal answered %+v; want an error on the goal", r)
		}
		// What only a client that checks less, or a forger with the
		// signing secret, could send.
		forged, err := e.fake.SubmitView(alice, v.ID, map[string]string{slack.BlockGoal: "x", slack.BlockStrategy: domain.StrategyLoop})
		if err != nil {
			t.Fatal(err)
		}
		forged.Values[slack.BlockStrategy][slack.BlockStrategy] = map[string]any{"type": "static_select",
			"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": "x"}, "value": "chaos"}}
		if takesMax {
			forged.Values[slack.BlockMaxIterations] = map[string]any{slack.BlockMaxIterations: map[string]any{"type": "number_input", "value": "0"}}
		}
		d := e.deliver(forged)
		if r, err = e.fake.ViewSubmissionResult(forged, d.body); err != nil || r.Action != "errors" || !strings.Contains(r.Errors[slack.BlockStrategy], `"chaos"`) {
			t.Errorf("an unknown strategy answered %+v (%v); want an error on the strategy", r, err)
		}
		if takesMax && !strings.Contains(r.Errors[slack.BlockMaxIterations], "from 1 to") {
			t.Errorf("max iterations 0 answered %+v; want an error on it", r)
		}
		e.settle()
		if n := e.countTasks(); n != 0 || len(e.fake.OpenModals(alice)) != 1 {
			t.Fatalf("after invalid submissions: %d tasks, %d modals open; want none and the modal", n, len(e.fake.OpenModals(alice)))
		}

		// A strategy the service does not have: its refusal, on the field.
		has, lacks := e.strategyFor()
		if lacks != "" {
			r, _ = e.submit(v, map[string]string{slack.BlockGoal: "Build auth", slack.BlockStrategy: lacks})
			if r.Action != "errors" || !strings.Contains(r.Errors[slack.BlockStrategy], lacks) {
				t.Errorf("strategy %s, which the service lacks, answered %+v; want its refusal on the strategy", lacks, r)
			}
			if n := e.countTasks(); n != 0 {
				t.Fatalf("%d tasks after a refused strategy", n)
			}
		}

		// Valid input creates the task as `create task` does, in the
		// command's channel, for the person who submitted.
		pick := has
		if pick == "" {
			pick = domain.StrategyLoop
			t.Logf("the task service has no strategy but loop (%v); the modal creates a loop task", e.core.Tasks.Strategies())
		}
		values := map[string]string{slack.BlockGoal: "  Build auth\nwith tests  ", slack.BlockStrategy: pick}
		if takesMax {
			values[slack.BlockMaxIterations] = "7"
		}
		r, _ = e.submit(v, values)
		if r.Action != "" || len(r.Errors) != 0 {
			t.Fatalf("a valid submission answered %+v; want the modal closed", r)
		}
		reply := e.waitMessages(1, both(kind(slackfake.KindResponse), saying("Created task #1")))
		if reply[0].ResponseType != "in_channel" || reply[0].Channel != "C7" || len(reply[0].Buttons()) != 3 {
			t.Errorf("the answer = %+v; want it in C7 for everyone, with the task's buttons", reply[0])
		}
		task := e.task(1)
		if task.Goal != "Build auth\nwith tests" || task.RoomID != "slack:C7" || task.RequestorID != alice ||
			task.WorkspaceID != e.fake.TeamID() || task.Platform != "slack" || task.Strategy != pick {
			t.Errorf("task = goal %q room %q requestor %q workspace %q platform %q strategy %q; want the form's, in slack:C7, alice's, strategy %s",
				task.Goal, task.RoomID, task.RequestorID, task.WorkspaceID, task.Platform, task.Strategy, pick)
		}
		if takesMax && task.MaxIterations != 7 {
			t.Errorf("max iterations = %d, want 7", task.MaxIterations)
		}
		if n := len(e.fake.OpenModals(alice)); n != 0 {
			t.Errorf("%d modals still open", n)
		}
	})
}

func TestTaskCreateModalWithAStaleTrigger(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		cmd := e.fake.SlashCommand("C7", alice, "create")
		e.clk.Advance(slackfake.TriggerLifetime + time.Second) // Slack was slow to deliver it
		d := e.deliver(cmd)
		m, ok := e.immediate(d)
		if !ok || m.ResponseType != "ephemeral" || !strings.Contains(m.Text, "/task create <goal>") {
			t.Errorf("answer = %+v; want a private hint to say /task create <goal>", m)
		}
		if calls := e.fake.CallsTo("views.open"); len(calls) != 1 || calls[0].Error != "expired_trigger_id" {
			t.Errorf("views.open calls = %+v; want one, expired_trigger_id", calls)
		}
		// With a goal, /task create still creates at once.
		d = e.deliver(e.fake.SlashCommand("C7", alice, "create Build auth"))
		if m, _ := e.immediate(d); !strings.Contains(m.Text, "Created task #1") {
			t.Errorf("/task create Build auth answered %q", m.Text)
		}
	})
}
