package httpapi

import (
	"net"
	"net/http"
	"sync"
)

// DefaultMaxStreamsPerClient is how many event streams one client may
// hold at once unless APIOptions.MaxStreamsPerClient says otherwise (and
// never more than MaxStreams): a share, so that one client — a script
// that reconnects without closing, a browser with many tabs — cannot take
// every stream a server keeps.
const DefaultMaxStreamsPerClient = 16

// slotRefusal says why an event stream was refused a slot.
type slotRefusal int

const (
	slotTaken      slotRefusal = iota // not refused
	slotServerFull                    // MaxStreams are open
	slotClientFull                    // the client holds its share
)

// streamSlots counts the event streams open, in all and by client.
type streamSlots struct {
	mu       sync.Mutex
	open     int
	byClient map[string]int
}

// take gives client a slot if fewer than max streams are open and the
// client holds fewer than perClient; release gives it back (once).
func (s *streamSlots) take(client string, max, perClient int) (release func(), refused slotRefusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.open >= max:
		return nil, slotServerFull
	case s.byClient[client] >= perClient:
		return nil, slotClientFull
	}
	if s.byClient == nil {
		s.byClient = map[string]int{}
	}
	s.open++
	s.byClient[client]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.open--
			if s.byClient[client]--; s.byClient[client] <= 0 {
				delete(s.byClient, client)
			}
		})
	}, slotTaken
}

// streamClient names the client of a request for its share of event
// streams: the host of its remote address (the port changes with every
// connection), and the requestor a holder of the API token names
// (RequestorHeader), so that named clients behind one proxy each get a
// share. Forwarded-for headers are not trusted: any client could send one
// to take another's share or a new one at every request.
func streamClient(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if who, err := requestor(r); err == nil && who != "api" {
		return host + " " + who
	}
	return host
}
