// Package sqlstore is the store logic both SQL stores share: what a task
// mutation, a claim and an outbox claim do, in which order, with which
// checks. It decides; a Dialect (adapters/postgres, adapters/sqlite)
// supplies the statements and the transaction they run in.
//
// The order of a task mutation lives here once: lock the row, apply the
// pure transition of package plugin, check it, then write the row, the
// step, the notifications, the task's file changes (within the limits of
// docs/deploy.md) and the event. A dialect's Tx is a list of small
// SQL-shaped operations (LockTask, UpdateTask, InsertEvent, …), in the way
// River's driver interface is, so a new table means one piece of logic here
// and one short entry per dialect, and adapters/storetest keeps both
// honest.
//
// The column list of tasks, the arguments that write a row and the scanner
// that reads one are shared as well: both drivers scan through
// database/sql's Scanner interface, which pgx honours too.
package sqlstore
