package actions

import "net"

// HandOver hands ln to an egress door at door, as the sandbox's helper
// does with the listener on the sandbox's loopback, so that the proxy's
// limits can be tested on a listener of the test's own.
func HandOver(door string, ln *net.TCPListener) error { return handOver(door, ln) }

// EgressTotalFor is egressTotalFor.
var EgressTotalFor = egressTotalFor
