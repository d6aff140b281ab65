// Package storetest is the conformance suite of domain.Store: the one set
// of tests that adapters/postgres and adapters/sqlite both pass, as River's
// riverdrivertest is for its drivers.
//
// A store's own test calls Run with a function that opens a fresh, empty
// store; Run migrates it and runs every subtest on its own store. The suite
// drives the store only through domain.Store and the domain's transitions
// (domain.Claimed, domain.Iterated, …), passes every time in explicitly and
// never sleeps, and checks each task it touched with domain.Check, so what
// it accepts is what `taskloom check` accepts.
package storetest
