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
	slotHostFull                      // the client's address holds its share
)

// hostShare is how many streams one address may hold in all, however many
// requestors a holder of the token names from it: half of what the server
// keeps (never less than one client's share), so that rotating names
// cannot take every stream, while clients behind one proxy still get
// many.
func hostShare(total, perClient int) int { return max(perClient, total/2) }

// streamSlots counts the event streams open, in all, by client and by
// the client's address.
type streamSlots struct {
	mu       sync.Mutex
	open     int
	byClient map[string]int
	byHost   map[string]int
}

// take gives c a slot if fewer than max streams are open, the client
// holds fewer than perClient and its address fewer than hostShare;
// release gives it back (once).
func (s *streamSlots) take(c client, max, perClient int) (release func(), refused slotRefusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.open >= max:
		return nil, slotServerFull
	case s.byClient[c.name] >= perClient:
		return nil, slotClientFull
	case s.byHost[c.host] >= hostShare(max, perClient):
		return nil, slotHostFull
	}
	if s.byClient == nil {
		s.byClient, s.byHost = map[string]int{}, map[string]int{}
	}
	s.open++
	s.byClient[c.name]++
	s.byHost[c.host]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.open--
			if s.byClient[c.name]--; s.byClient[c.name] <= 0 {
				delete(s.byClient, c.name)
			}
			if s.byHost[c.host]--; s.byHost[c.host] <= 0 {
				delete(s.byHost, c.host)
			}
		})
	}, slotTaken
}

// client is who holds an event stream: name for its own share, host for
// its address's.
type client struct{ host, name string }

// streamClient names the client of a request for its share of event
// streams: the host of its remote address (the port changes with every
// connection), and the requestor a holder of the API token names
// (RequestorHeader), so that named clients behind one proxy each get a
// share; all the names of one address together hold at most hostShare.
// Forwarded-for headers are not trusted: any client could send one to take
// another's share or a new one at every request.
func streamClient(r *http.Request) client {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if who, err := requestor(r); err == nil && who != "api" {
		return client{host: host, name: host + " " + who}
	}
	return client{host: host, name: host}
}
