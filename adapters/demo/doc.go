// Package demo is the built-in demo model: the plugin.Model that serves
// when no real model is configured, so that a first run with no keys shows
// the queue, the batched progress messages and the pause/resume/cancel
// controls working.
//
// It is deterministic. For a task iteration it answers the decision JSON
// the task service expects ({thought, action, params, progress, status,
// summary}), following a plan of 5 to 8 iterations chosen from a hash of
// the goal: it lists the workspace, writes notes/plan.md, reads it back,
// takes a few more small steps and reports done. It thinks for about a
// second per call (on an injected clock, so tests do not sleep). Everything
// it says — thoughts, summaries, the file it writes, its chat refusal — says
// it is the demo model, and it implements plugin.Demo so the runtime labels
// it too and never sends it free-text chat.
package demo
