// Package plugin is Taskloom's contract and the runtime that hosts it.
//
// A Plugin registers actions (chat commands that are also agent tools, each
// with a JSON Schema for its parameters), providers (state for model calls),
// evaluators (run after a response), services (long-lived components),
// models, HTTP routes and event handlers. The Runtime starts plugins in
// dependency order, runs the message pipeline for every chat message, and
// reaches the registered model through UseModel.
//
// The package also holds the task domain: Task and its statuses, the pure
// transitions (Claimed, Iterated, Paused, …) that every store applies inside
// its own transaction, the Store interface, and Replay/Check, which rebuild a
// task from its event log. A task's files live in the store too: its tools
// reach them through a FileView (Call.Files) that reads through to the store
// and keeps the iteration's writes for its fenced commit (Mutation.Files).
// It imports no adapter.
package plugin
