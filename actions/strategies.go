package actions

import (
	"slices"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// createTaskName is create_task's action name, by which the adapters find
// it in the runtime.
const createTaskName = "create_task"

// Strategies lists the strategies rt's create_task accepts: its task
// service's (plugin.StrategyLister), read through the runtime's
// create_task action, so Discord's choices and Slack's modal offer what
// the service takes. Without a task service, only loop, the default.
func Strategies(rt *plugin.Runtime) []string {
	if rt != nil {
		if a, ok := rt.Action(createTaskName); ok {
			if l, ok := a.(plugin.StrategyLister); ok {
				return l.Strategies()
			}
		}
	}
	return []string{domain.StrategyLoop}
}

// Strategies lists the strategies the chat's task service has, or only
// loop when it lists none.
func (c *Chat) Strategies() []string {
	if c != nil {
		if l, ok := c.Tasks.(plugin.StrategyLister); ok {
			if names := l.Strategies(); len(names) > 0 {
				return slices.Clone(names)
			}
		}
	}
	return []string{domain.StrategyLoop}
}

// strategyList names strategies in a sentence, the first (loop) marked as
// the default: "loop (default), react, tools".
func strategyList(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
		if n == domain.StrategyLoop {
			out += " (default)"
		}
	}
	return out
}
