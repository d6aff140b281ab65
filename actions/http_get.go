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
	"strings"
	"syscall"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// Defaults for http_get.
const (
	DefaultHTTPTimeout  = 15 * time.Second
	DefaultHTTPMaxBytes = 256 << 10
)

// HTTPGet fetches a URL for a task. Loopback, private, link-local and other
// non-public addresses are refused — checked on the address actually
// dialled, so neither a redirect nor a DNS answer can smuggle one in —
// unless AllowPrivate is set.
type HTTPGet struct {
	AllowPrivate bool
	Timeout      time.Duration // default 15s
	MaxBytes     int64         // default 256 KiB
}

var _ plugin.Action = (*HTTPGet)(nil)

func (*HTTPGet) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "http_get",
		Description: "Fetch a public http(s) URL and return the start of its body (at most 256 KiB, 15 seconds).",
		Examples:    []string{`{"url":"https://example.com/api/status"}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["url"],"properties":{"url":{"type":"string","format":"uri"}}}`),
		Tool:        true,
	}
}

// ErrForbiddenAddress is a dial to an address http_get may not reach.
var ErrForbiddenAddress = errors.New("address not allowed")

// forbidden reports whether ip is not a public unicast address.
func forbidden(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() ||
		ip.IsUnspecified() || cgnat.Contains(ip) || thisNet.Contains(ip)
}

var (
	cgnat   = netip.MustParsePrefix("100.64.0.0/10")
	thisNet = netip.MustParsePrefix("0.0.0.0/8")
)

func (a *HTTPGet) client() *http.Client {
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	dialer := &net.Dialer{Timeout: timeout}
	if !a.AllowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
			}
			if forbidden(ap.Addr()) {
				return fmt.Errorf("%w: %s is not a public address", ErrForbiddenAddress, ap.Addr())
			}
			return nil
		}
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:           dialer.DialContext,
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
		if errors.Is(err, ErrForbiddenAddress) {
			return fail("Refused to fetch %s: it resolves to an address that is not public.", u.Redacted())
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
