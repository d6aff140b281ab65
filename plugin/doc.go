// Package plugin is Taskloom's contract and the runtime that hosts it.
//
// A Plugin registers actions (chat commands that are also agent tools, each
// with a JSON Schema for its parameters), providers (state for model calls),
// evaluators (run after a response), services (long-lived components),
// models, HTTP routes and event handlers. The Runtime starts plugins in
// dependency order, runs the message pipeline for every chat message, and
// reaches the registered model through UseModel.
//
// The task domain — Task, its transitions, events and the Store — is
// package domain, below this one: the runtime hands tasks to actions
// and services, and the stores never import the runtime.
//
// It imports no adapter.
package plugin
