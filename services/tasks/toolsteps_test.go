package tasks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// bigTool returns more than a step keeps.
type bigTool struct{}

func (bigTool) Info() plugin.ActionInfo {
	return plugin.ActionInfo{Name: "big_output", Description: "Print a lot.", Tool: true,
		Parameters: []byte(`{"type":"object","properties":{}}`)}
}

func (bigTool) Handle(context.Context, *plugin.Call) (plugin.Result, error) {
	return plugin.Result{Success: true, Text: strings.Repeat("x", domain.MaxResultBytes+1000)}, nil
}

// TestToolCallsKeepTheirOwnResults: each call of a reply is a step whose
// result is kept up to domain.MaxResultBytes, the second call's as the
// first's, and a failed call after a successful one leaves the first a
// success.
func TestToolCallsKeepTheirOwnResults(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newNotifiedFixture(t, open, fake, nil, bigTool{})
		n := f.create("Print a lot twice", func(in *domain.NewTask) { in.Strategy = domain.StrategyTools }).Number
		fake.ReplyToolCalls("",
			testkit.OpenAIToolCall{ID: "a", Name: "big_output", Arguments: `{}`},
			testkit.OpenAIToolCall{ID: "b", Name: "big_output", Arguments: `{}`},
			testkit.OpenAIToolCall{ID: "c", Name: "read_file", Arguments: `{"path":"missing.md"}`})
		f.step("test")
		steps := f.steps(n)
		if len(steps) != 3 {
			t.Fatalf("%d steps, want 3", len(steps))
		}
		for i, s := range steps[:2] {
			if !s.Success || len(s.Result) != domain.MaxResultBytes || s.Call != i {
				t.Errorf("call %d: success %v, %d bytes of result, call %d; want a success of %d bytes", i, s.Success, len(s.Result), s.Call, domain.MaxResultBytes)
			}
		}
		if s := steps[2]; s.Success || s.Error == "" || s.Call != 2 {
			t.Errorf("the read = %+v; want a failure of its own", s)
		}
		f.check()
	})
}
