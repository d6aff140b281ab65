package slack_test

import (
	"context"
	"slices"
	"testing"

	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
	"github.com/taskloom/taskloom/services/tasks"
)

// TestModalOffersTheServicesStrategies: the create modal offers the task
// service's strategies, one a plugin added (tasks.Options.Strategies)
// included, and takes it.
func TestModalOffersTheServicesStrategies(t *testing.T) {
	t.Parallel()
	echo := map[string]tasks.Strategy{"echo": tasks.StrategyFunc(func(_ context.Context, t *tasks.Turn) (domain.Outcome, error) {
		o := t.Outcome()
		o.Verdict = domain.VerdictDone
		return o, nil
	})}
	e := newEnvCore(t, httpMode, nil, nil, func(o *app.CoreOptions) { o.Strategies = echo })
	v := e.openModal()
	strategy, ok := v.Input(slack.BlockStrategy)
	if !ok {
		t.Fatal("the modal has no strategy input")
	}
	var offered []string
	for _, o := range strategy.Element.Options {
		offered = append(offered, o.Value)
	}
	if want := e.core.Tasks.Strategies(); !slices.Equal(offered, want) || !slices.Contains(offered, "echo") {
		t.Fatalf("the modal offers %q; the task service has %q, echo among them", offered, want)
	}
	r, _ := e.submit(v, map[string]string{slack.BlockGoal: "Say it back", slack.BlockStrategy: "echo"})
	if r.Action != "" || len(r.Errors) != 0 {
		t.Fatalf("submitting echo answered %+v; want the modal closed", r)
	}
	e.waitMessages(1, both(kind(slackfake.KindResponse), saying("Created task #1")))
	if got := e.task(1).Strategy; got != "echo" {
		t.Errorf("strategy = %q, want echo", got)
	}
}
