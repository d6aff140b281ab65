// Package tasks is the orchestrator's task service: a pool of workers that
// claim the next task from the fair queue (the store's ClaimTask), give it
// one agent iteration — one model call that returns the next action and a
// progress estimate together — run that action through the runtime, and
// commit the result only while their lease (fence token) still holds.
// The action works on the task's files through a domain.FileView opened
// for the iteration; what it writes is part of the result, so a worker
// that lost its lease writes no file either, and the next iteration, on
// any replica, reads what this one wrote. When the store can
// (domain.NextClaimer), a worker's commit also claims its next task, in
// the same transaction: one commit an iteration instead of two.
//
// Its building blocks are exported for other plugins: BuildIterationPrompt,
// ParseDecision and Iterator.Run (one iteration). The lifecycle operations
// chat commands and the API use — Create, Pause, Resume, Cancel, Answer —
// are guarded transitions that refuse what a task's state forbids.
package tasks
