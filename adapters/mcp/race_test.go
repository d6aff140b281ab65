//go:build race

package mcp_test

// raceEnabled says the tests run with the race detector, whose runtime
// maps more memory than a tight limit allows a process to start with.
const raceEnabled = true
