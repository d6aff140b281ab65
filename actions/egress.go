package actions

// Egress is the proxy through which a sandbox with a network reaches the
// world.
type Egress struct {
	sock string
}

// SocketPath is the Unix socket the proxy listens on.
func (e *Egress) SocketPath() string { return e.sock }
