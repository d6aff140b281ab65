package actions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
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
// It listens on a Unix socket (SocketPath) that each sandbox has bound
// in; a forwarder inside the sandbox offers it on the sandbox's loopback.
type Egress struct {
	dialer PublicDialer
	log    *slog.Logger

	sock    string
	ln      net.Listener
	srv     *http.Server
	forward *httputil.ReverseProxy
	life    context.Context
	end     context.CancelFunc
	once    sync.Once
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
	Logger  *slog.Logger
}

// NewEgress makes the proxy; Start makes it listen.
func NewEgress(o EgressOptions) *Egress {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	e := &Egress{log: o.Logger}
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
			Proxy:                 nil, // it dials itself, through the check
			DialContext:           e.dialer.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: 2 * DefaultCommandTimeout,
			MaxIdleConns:          16,
			IdleConnTimeout:       30 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			e.refuse(w, r.Host, err)
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

// Start listens on a new Unix socket in the sandbox's staging directory,
// reachable by the sandbox's user, and serves until Close. Starting a
// started proxy does nothing.
func (e *Egress) Start() error {
	if e.ln != nil {
		return nil
	}
	dir, err := stagingDir()
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	e.sock = filepath.Join(dir, fmt.Sprintf("egress-%d-%s.sock", os.Getpid(), hex.EncodeToString(b[:])))
	ln, err := net.Listen("unix", e.sock)
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	// The sandbox's user connects to it; the staging directory above
	// keeps other users from finding it.
	if err := os.Chmod(e.sock, 0o666); err != nil {
		ln.Close()
		return fmt.Errorf("egress proxy: %w", err)
	}
	e.ln = ln
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(e.log.Handler(), slog.LevelDebug)}
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("egress proxy stopped", "err", err)
		}
	}()
	return nil
}

// SocketPath is the Unix socket the proxy listens on.
func (e *Egress) SocketPath() string { return e.sock }

// Close stops the proxy and ends its tunnels.
func (e *Egress) Close() error {
	var err error
	e.once.Do(func() {
		e.end()
		if e.srv != nil {
			err = e.srv.Close()
		}
		if e.sock != "" {
			os.Remove(e.sock)
		}
	})
	return err
}

// ServeHTTP proxies one request: CONNECT host:port, or a request for an
// absolute http:// URL.
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

// connect opens a tunnel to r.Host for the client.
func (e *Egress) connect(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), max(e.dialer.Timeout, DefaultHTTPTimeout))
	upstream, err := e.dialer.DialContext(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		e.refuse(w, r.Host, err)
		return
	}
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		upstream.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	stop := context.AfterFunc(e.life, func() {
		client.Close()
		upstream.Close()
	})
	defer stop()
	defer client.Close()
	defer upstream.Close()
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
	pipe(client, upstream)
}

// refuse answers a request the proxy would not or could not make: 403
// with the reason for an address the rules refuse, 502 otherwise.
func (e *Egress) refuse(w http.ResponseWriter, host string, err error) {
	var forbidden *ForbiddenAddressError
	if errors.As(err, &forbidden) {
		e.log.Info("egress proxy refused a sandbox's connection", "host", host, "addr", forbidden.Addr, "why", forbidden.Range)
		http.Error(w, fmt.Sprintf("Taskloom's egress proxy refused %s: %s is not a public address: %s.", host, forbidden.Addr, forbidden.Range), http.StatusForbidden)
		return
	}
	http.Error(w, fmt.Sprintf("Taskloom's egress proxy cannot reach %s: %s.", host, strings.ReplaceAll(err.Error(), "\n", "; ")), http.StatusBadGateway)
}
