package plugin

// StrategyLister lists the strategies a task may be created with
// (docs/strategies.md): the task service's, the built-in ones in their
// order and then those plugins added. It is the one list every place that
// offers or checks a strategy reads — the chat's create_task and help,
// Discord's /task choices, Slack's modal, the API — so a strategy a
// plugin adds is offered everywhere at once.
type StrategyLister interface {
	Strategies() []string
}
