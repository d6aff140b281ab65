// Package postgres is the PostgreSQL implementation of domain.Store, the
// store for deployments with several workers or replicas.
//
// Every task is one row with a column per field of domain.Task; its steps and
// its immutable events live beside it, written in the same transaction as
// the row. The schema is embedded (migrations/*.sql) and applied by Migrate
// under an advisory lock, so processes starting together do not race.
//
// The queue is a query over a partial index. ClaimTask takes the head of it
// in one UPDATE whose subquery locks the row FOR UPDATE SKIP LOCKED, so
// concurrent workers never wait on, nor get, the same task; the event that
// records the claim is built by domain.Claimed from the row before and after
// and inserted in the same transaction. UpdateTask locks a row, lets the
// domain (plugin's transitions) compute the change, and writes it.
//
// All SQL is in migrations/ and queries.go. The package passes the
// conformance suite in adapters/storetest, as adapters/sqlite does.
package postgres
