package discord_test

import (
	"context"
	"slices"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/services/tasks"
)

// echoStrategy is a strategy a plugin adds: it completes its task at once.
var echoStrategy = map[string]tasks.Strategy{"echo": tasks.StrategyFunc(func(_ context.Context, t *tasks.Turn) (domain.Outcome, error) {
	o := t.Outcome()
	o.Verdict, o.Summary = domain.VerdictDone, "echoed"
	return o, nil
})}

// TestSlashOffersTheServicesStrategies: /task create's strategy choices
// are the task service's, a strategy a plugin added included, and
// creating a task with that one works.
func TestSlashOffersTheServicesStrategies(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := newBotCore(t, srv, nil, func(o *app.CoreOptions) { o.Strategies = echoStrategy })
	if err := b.core.Runtime.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.core.Tasks.Stop(b.ctx); err != nil {
		t.Fatal(err)
	}
	cmds := srv.Commands("")
	if len(cmds) != 1 {
		t.Fatalf("%d commands registered, want /task", len(cmds))
	}
	var offered []string
	for _, sub := range cmds[0].Options {
		if sub.Name != "create" {
			continue
		}
		for _, o := range sub.Options {
			if o.Name == "strategy" {
				for _, c := range o.Choices {
					offered = append(offered, c.Name)
				}
			}
		}
	}
	if want := b.core.Tasks.Strategies(); !slices.Equal(offered, want) || !slices.Contains(offered, "echo") {
		t.Errorf("/task create offers %q; the task service has %q, echo among them", offered, want)
	}

	b.slash(alice, "create", discordfake.CommandOption{Name: "goal", Value: "Say it back"},
		discordfake.CommandOption{Name: "strategy", Value: "echo"})
	_, ack := b.response(1)
	mustContain(t, "/task create strategy:echo", ack.Content, `Created task #1 "Say it back"`)
	if got := b.task(1).Strategy; got != "echo" {
		t.Errorf("strategy = %q, want echo", got)
	}
}
