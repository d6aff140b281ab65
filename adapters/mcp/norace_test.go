//go:build !race

package mcp_test

// raceEnabled says the tests run with the race detector.
const raceEnabled = false
