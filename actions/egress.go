package actions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/taskloom/taskloom/internal/clock"
)

// Egress is Taskloom's HTTP proxy for sandboxes with a network: the only
// way out of a sandbox, whose network namespace has nothing but a
// loopback. It forwards plain http:// requests and tunnels CONNECT (for
// HTTPS), and dials through PublicDialer, so it refuses what http_get
// refuses — loopback, private and every other special-purpose address —
// checked on the address actually dialled after its own DNS lookup, plus
// the host's own addresses and whatever Refuse names (Taskloom's API).
// It never honours TASKLOOM_HTTP_GET_ALLOW_PRIVATE.
//
// Each sandbox gets a door of its own (Open): a Unix socket bound into
// that sandbox alone, through which the sandbox's helper hands over a
// socket listening on the sandbox's loopback (sandboxProxyAddr). The
// proxy then accepts the sandbox's connections on that socket itself, in
// Taskloom: no process of Taskloom's stays in the sandbox, and every
// connection is counted against the sandbox that made it (EgressLimits).
type Egress struct {
	dialer  PublicDialer
	log     *slog.Logger
	limits  EgressLimits
	clock   clock.Clock
	refusal *refusalLog

	forward *httputil.ReverseProxy
	life    context.Context
	end     context.CancelFunc
	slots   chan struct{} // one per connection the proxy may hold, across sandboxes

	mu     sync.Mutex
	doors  map[*EgressDoor]struct{}
	closed bool
}

// EgressOptions configure NewEgress.
type EgressOptions struct {
	// Resolver and Dial stand in for DNS and the network in tests; see
	// PublicDialer.
	Resolver Resolver
	Dial     func(ctx context.Context, network, address string) (net.Conn, error)
	// OwnHosts are host names or addresses of Taskloom's own (its public
	// URL's host, its listen address): their addresses are refused, on
	// any port. The host's interface addresses are refused too.
	OwnHosts []string
	// Timeout bounds a connection attempt; default DefaultHTTPTimeout.
	Timeout time.Duration
	// Limits bound what each sandbox, and all of them, may take of the
	// proxy; zero fields take their defaults.
	Limits EgressLimits
	Logger *slog.Logger
	// Clock paces the log of refusals; the wall clock when nil.
	Clock clock.Clock
}

// NewEgress makes the proxy; Start makes it ready to open doors.
func NewEgress(o EgressOptions) *Egress {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	limits := o.Limits.withDefaults(openFileLimit())
	e := &Egress{log: o.Logger, limits: limits, clock: o.Clock, doors: map[*EgressDoor]struct{}{},
		slots:   make(chan struct{}, limits.TotalConns),
		refusal: newRefusalLog(o.Logger, o.Clock, limits.LogBurst, limits.LogEvery)}
	e.life, e.end = context.WithCancel(context.Background())
	e.dialer = PublicDialer{Timeout: o.Timeout, Resolver: o.Resolver, Dial: o.Dial,
		Refuse: ownAddresses(o.Resolver, o.OwnHosts)}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	e.forward = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL = r.In.URL
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{
			Proxy:                  nil, // it dials itself, through the check
			DialContext:            e.dialer.DialContext,
			TLSHandshakeTimeout:    timeout,
			ResponseHeaderTimeout:  2 * DefaultCommandTimeout,
			MaxIdleConns:           16,
			IdleConnTimeout:        30 * time.Second,
			MaxResponseHeaderBytes: maxUpstreamHeader,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			e.refuse(w, r, err)
		},
	}
	return e
}

// ownAddresses refuses the host's interface addresses and those of hosts.
func ownAddresses(resolver Resolver, hosts []string) func(context.Context, netip.Addr) (string, bool) {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	return func(ctx context.Context, ip netip.Addr) (string, bool) {
		if ifaces, err := net.InterfaceAddrs(); err == nil {
			for _, a := range ifaces {
				if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == ip {
					return "an address of Taskloom's host", true
				}
			}
		}
		for _, h := range hosts {
			if h == "" {
				continue
			}
			addrs := []netip.Addr{}
			if a, err := netip.ParseAddr(h); err == nil {
				addrs = append(addrs, a)
			} else if got, err := resolver.LookupNetIP(ctx, "ip", h); err == nil {
				addrs = got
			}
			for _, a := range addrs {
				if a.Unmap() == ip {
					return "Taskloom's own address (" + h + ")", true
				}
			}
		}
		return "", false
	}
}

// Start checks that the proxy can make its doors (the staging directory
// where their sockets live), so that start-up fails rather than a
// sandbox's first run. Starting it again does nothing.
func (e *Egress) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("egress proxy: closed")
	}
	if _, err := stagingDir(); err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	return nil
}

// Close stops the proxy: it closes every door and ends every connection
// and tunnel, and opens no more doors.
func (e *Egress) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	doors := make([]*EgressDoor, 0, len(e.doors))
	for d := range e.doors {
		doors = append(doors, d)
	}
	e.mu.Unlock()
	e.end()
	for _, d := range doors {
		d.Close()
	}
	e.refusal.flush()
	return nil
}

// ServeHTTP proxies one request: CONNECT host:port, or a request for an
// absolute http:// URL. A door's connections come here too, through the
// door's own server, which holds them to the limits.
func (e *Egress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		e.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "Taskloom's egress proxy forwards http:// URLs, and https:// through CONNECT.", http.StatusBadRequest)
		return
	}
	e.forward.ServeHTTP(w, r)
}

// connect opens a tunnel to r.Host for the client. The tunnel ends when
// neither side has sent anything for the idle timeout, or when the proxy
// or the sandbox's door closes.
func (e *Egress) connect(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), max(e.dialer.Timeout, DefaultHTTPTimeout))
	upstream, err := e.dialer.DialContext(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		e.refuse(w, r, err)
		return
	}
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		upstream.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	life := e.life
	if d := doorOf(r.Context()); d != nil {
		life = d.life
	}
	stop := context.AfterFunc(life, func() {
		client.Close()
		upstream.Close()
	})
	defer stop()
	defer client.Close()
	defer upstream.Close()
	// The server's deadlines no longer apply to a hijacked connection.
	_ = client.SetDeadline(time.Time{})
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	// What the client sent after its request is already read.
	if n := buf.Reader.Buffered(); n > 0 {
		head, _ := buf.Reader.Peek(n)
		if _, err := upstream.Write(head); err != nil {
			return
		}
	}
	idle := newIdleWatch(e.limits.IdleTimeout)
	pipe(idle.wrap(client), idle.wrap(upstream))
}

// refuse answers a request the proxy would not or could not make: 403
// with the reason for an address the rules refuse, 502 otherwise. The
// log of refusals is paced (refusalLog).
func (e *Egress) refuse(w http.ResponseWriter, r *http.Request, err error) {
	host := r.Host
	var forbidden *ForbiddenAddressError
	if errors.As(err, &forbidden) {
		e.refusal.log("address", "egress proxy refused a sandbox's connection", "sandbox", doorName(r.Context()), "host", host, "addr", forbidden.Addr, "why", forbidden.Range)
		http.Error(w, fmt.Sprintf("Taskloom's egress proxy refused %s: %s is not a public address: %s.", host, forbidden.Addr, forbidden.Range), http.StatusForbidden)
		return
	}
	http.Error(w, fmt.Sprintf("Taskloom's egress proxy cannot reach %s: %s.", host, strings.ReplaceAll(err.Error(), "\n", "; ")), http.StatusBadGateway)
}
