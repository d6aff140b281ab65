// Package tasks is the orchestrator's task service: a pool of workers that
// claim the next task from the fair queue (the store's ClaimTask), give it
// one agent iteration — one model call that returns the next action and a
// progress estimate together — run that action through the runtime, and
// commit the result only while their lease (fence token) still holds.
//
// Its building blocks are exported for other plugins: BuildIterationPrompt,
// ParseDecision and Iterator.Run (one iteration). The lifecycle operations
// chat commands and the API use — Create, Pause, Resume, Cancel, Answer —
// are guarded transitions that refuse what a task's state forbids.
package tasks
