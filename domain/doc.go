// Package domain is Taskloom's task domain: what a task is and how it may
// change, apart from the plugin runtime that drives it.
//
// It holds Task and its statuses, the pure transitions (Created, Claimed,
// Iterated, Paused, …) that every store applies inside its own
// transaction, the events they write and Replay/Check, which rebuild a task
// from its event log; the digest a long task's prompt is built from; a
// task's files and the FileView its tools reach them through; the review
// phases strategies share; and the Store interface with its outbox of
// notifications.
//
// The stores (adapters/postgres, adapters/sqlite over adapters/sqlstore)
// import this package and not the runtime (package plugin), the way River
// keeps its job types apart from its client: a store can be read, tested
// and replaced without the runtime, and the runtime's changes never reach
// a store. docs/tasks.md describes the lifecycle it implements.
package domain
