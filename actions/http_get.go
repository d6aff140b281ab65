package actions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// Defaults for http_get.
const (
	DefaultHTTPTimeout  = 15 * time.Second
	DefaultHTTPMaxBytes = 256 << 10
)

// HTTPGet fetches a URL for a task. Every address in the IANA
// special-purpose registries (loopback, private, link-local, NAT64, 6to4,
// Teredo, documentation, multicast, …; see specialRanges) is refused —
// checked on the address actually dialled, after every DNS answer and
// every redirect — unless AllowPrivate is set.
type HTTPGet struct {
	AllowPrivate bool
	Timeout      time.Duration // default 15s
	MaxBytes     int64         // default 256 KiB

	// Resolver finds a host name's addresses; nil is net.DefaultResolver.
	Resolver Resolver
	// Dial connects to one address that has passed the check: always an
	// IP literal and a port, never a name. Nil is a net.Dialer. Tests set
	// it to stand a loopback server in for a public address.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// Resolver looks up a host's IP addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ plugin.Action = (*HTTPGet)(nil)

func (*HTTPGet) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "http_get",
		Description: "Fetch a public http(s) URL and return the start of its body (at most 256 KiB, 15 seconds).",
		Examples:    []string{`{"url":"https://example.com/api/status"}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["url"],"properties":{"url":{"type":"string","format":"uri"}}}`),
		Tool:        true,
		TaskOnly:    true,
	}
}

// ErrForbiddenAddress is a dial to an address http_get may not reach.
var ErrForbiddenAddress = errors.New("address not allowed")

// ForbiddenAddressError names the address refused and the special-purpose
// block it is in. It matches ErrForbiddenAddress.
type ForbiddenAddressError struct {
	Addr  netip.Addr
	Range string
}

func (e *ForbiddenAddressError) Error() string {
	return fmt.Sprintf("%s is not a public address: %s", e.Addr, e.Range)
}

func (e *ForbiddenAddressError) Is(target error) bool { return target == ErrForbiddenAddress }

// dial connects as PublicDialer does, with the action's settings.
func (a *HTTPGet) dial(ctx context.Context, network, address string) (net.Conn, error) {
	d := PublicDialer{AllowPrivate: a.AllowPrivate, Timeout: a.Timeout, Resolver: a.Resolver, Dial: a.Dial}
	return d.DialContext(ctx, network, address)
}

// PublicDialer connects only to public addresses: it resolves a host
// name itself, refuses every special-purpose address among the answers
// (loopback, private, link-local, …; see specialRanges) and those Refuse
// names, and connects to the first allowed one that answers. The check
// and the connection use the same IP literal, so no second lookup can
// swap in another address (DNS rebinding). http_get and the sandbox's
// egress proxy both dial through it.
type PublicDialer struct {
	// AllowPrivate turns the special-purpose check off (http_get's
	// TASKLOOM_HTTP_GET_ALLOW_PRIVATE); Refuse still applies.
	AllowPrivate bool
	// Timeout bounds one connection attempt; default DefaultHTTPTimeout.
	Timeout time.Duration
	// Resolver finds a host name's addresses; nil is net.DefaultResolver.
	Resolver Resolver
	// Dial connects to one address that has passed the check: always an
	// IP literal and a port, never a name. Nil is a net.Dialer.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Refuse, when set, names more addresses that may not be reached
	// (the host's own) and why.
	Refuse func(ctx context.Context, ip netip.Addr) (why string, refused bool)
}

// DialContext resolves address and connects to an allowed address of it.
// A refusal is a *ForbiddenAddressError among the errors returned.
func (d *PublicDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad port: %w", address, err)
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		resolver := d.Resolver
		if resolver == nil {
			resolver = net.DefaultResolver
		}
		ipNetwork := "ip"
		switch network {
		case "tcp4":
			ipNetwork = "ip4"
		case "tcp6":
			ipNetwork = "ip6"
		}
		if addrs, err = resolver.LookupNetIP(ctx, ipNetwork, host); err != nil {
			return nil, fmt.Errorf("look up %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("look up %s: no addresses", host)
		}
	}
	connect := d.Dial
	if connect == nil {
		timeout := d.Timeout
		if timeout <= 0 {
			timeout = DefaultHTTPTimeout
		}
		connect = (&net.Dialer{Timeout: timeout}).DialContext
	}
	var errs []error
	for _, ip := range addrs {
		if !d.AllowPrivate {
			if r, special := specialPurpose(ip); special {
				errs = append(errs, &ForbiddenAddressError{Addr: ip.WithZone(""), Range: r.Name})
				continue
			}
		}
		if d.Refuse != nil {
			if why, refused := d.Refuse(ctx, ip.WithZone("").Unmap()); refused {
				errs = append(errs, &ForbiddenAddressError{Addr: ip.WithZone(""), Range: why})
				continue
			}
		}
		conn, err := connect(ctx, network, netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func (a *HTTPGet) client() *http.Client {
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			// No Proxy: a proxy would dial for us, past the address check.
			DialContext:           a.dial,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConns:          4,
			IdleConnTimeout:       30 * time.Second,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to a %s URL", req.URL.Scheme)
			}
			return nil
		},
	}
}

func (a *HTTPGet) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	if _, refused := taskOf(call); refused != nil {
		return *refused, nil
	}
	var p struct {
		URL string `json:"url"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	u, err := url.Parse(strings.TrimSpace(p.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail("http_get takes an http:// or https:// URL, not %q.", p.URL)
	}
	max := a.MaxBytes
	if max <= 0 {
		max = DefaultHTTPMaxBytes
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fail("Cannot fetch %s: %v.", u, err)
	}
	req.Header.Set("User-Agent", "Taskloom/1 (+agent task tool)")
	resp, err := a.client().Do(req)
	if err != nil {
		var forbidden *ForbiddenAddressError
		if errors.As(err, &forbidden) {
			return fail("Refused to fetch %s: it leads to %s, which is not public: %s.", u.Redacted(), forbidden.Addr, forbidden.Range)
		}
		return fail("Cannot fetch %s: %v.", u.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return fail("Cannot read %s: %v.", u.Redacted(), err)
	}
	text := string(body)
	if int64(len(body)) > max {
		text = string(body[:max]) + fmt.Sprintf("\n[truncated at %d bytes]", max)
	}
	head := fmt.Sprintf("HTTP %d %s\nContent-Type: %s\n\n", resp.StatusCode, http.StatusText(resp.StatusCode), resp.Header.Get("Content-Type"))
	res := plugin.Result{Success: resp.StatusCode < 400, Text: head + text}
	if !res.Success {
		res.Error = fmt.Sprintf("%s answered HTTP %d.", u.Redacted(), resp.StatusCode)
	}
	return res, nil
}
