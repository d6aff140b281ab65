// Package sqlite is the SQLite implementation of domain.Store (pure Go,
// modernc.org/sqlite), the embedded store for a single Taskloom process.
//
// It keeps the schema of adapters/postgres — a column per field of
// domain.Task, steps and immutable events beside the row, the outbox —
// with times as unix microseconds. The database runs in WAL mode, so reads
// go on while a write commits. Writes go through one connection whose
// transactions begin IMMEDIATE: they queue in the process instead of
// failing with SQLITE_BUSY, and a read-modify-write never has to upgrade a
// read lock. Another process on the same file waits on busy_timeout.
//
// SQLite's RETURNING cannot report the values a row had before an UPDATE,
// so ClaimTask reads the head of the queue and claims it by number inside
// the same IMMEDIATE transaction, which no other writer can interleave
// with; the claim's event is built by domain.Claimed from the two rows.
//
// All SQL is in migrations/ and queries.go. The package passes the
// conformance suite in adapters/storetest, as adapters/postgres does.
package sqlite
