// Package soak holds the soak test (TestSoak, run by scripts/soak): three
// `taskloom serve` replicas on one PostgreSQL, with a fake Discord, a fake
// Slack and a fake model in the test's process, driven by people in
// several rooms on both platforms and through the HTTP API while faults
// are injected at random — replicas killed and paused past their lease,
// PostgreSQL restarted, database connections dropped, the platforms and
// the model failing — and, once the faults stop and the service settles,
// checked from outside: each command made its task once, every task ended
// or rightly waiting, each room got each task's messages in order, none
// twice and none lost, `taskloom check` clean, no lease left to a dead
// replica, no schedule run twice for one due time. docs/testing.md says
// how to run and replay it.
package soak
