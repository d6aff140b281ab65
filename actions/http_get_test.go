package actions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// publicStandIn is a public address that the test dialer answers with a
// loopback httptest server: http_get's check sees a public address, and
// no packet leaves the machine.
const publicStandIn = "93.184.215.14"

// fakeResolver answers from a map; no real DNS.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host (fake resolver)", Name: host, IsNotFound: true}
}

// testDialer stands a loopback server in for publicStandIn, dials other
// loopback addresses for real (so a missing check shows as a leak), and
// refuses anything else: a test never sends traffic off the machine.
type testDialer struct {
	t      *testing.T
	public string // host:port of the server standing in for publicStandIn

	mu     sync.Mutex
	dialed []string
}

func (d *testDialer) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, address)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		d.t.Errorf("http_get dialed %q, not an IP literal and port", address)
		return nil, err
	}
	var target string
	switch {
	case ap.Addr() == netip.MustParseAddr(publicStandIn):
		target = d.public
	case ap.Addr().Unmap().IsLoopback():
		target = address
	default:
		d.t.Errorf("http_get dialed %s: the test dialer only reaches loopback", address)
		return nil, fmt.Errorf("test dialer: %s is off limits", address)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, target)
}

// Dialed returns the addresses dialled so far, other than publicStandIn's.
func (d *testDialer) Dialed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, a := range d.dialed {
		if !strings.HasPrefix(a, publicStandIn+":") {
			out = append(out, a)
		}
	}
	return out
}

func fetch(t *testing.T, a *actions.HTTPGet, url string) plugin.Result {
	t.Helper()
	raw, _ := json.Marshal(map[string]string{"url": url})
	res, err := a.Handle(context.Background(), &plugin.Call{Task: &domain.Task{Number: 1}, Params: raw})
	if err != nil {
		t.Fatalf("http_get %s: %v", url, err)
	}
	return res
}

func portOf(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func TestHTTPGetRefusesSpecialPurposeAddresses(t *testing.T) {
	t.Parallel()
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("internal admin panel"))
	}))
	defer secret.Close()
	port := portOf(t, secret)

	d := &testDialer{t: t}
	get := &actions.HTTPGet{
		Dial: d.Dial,
		Resolver: fakeResolver{
			"loopback.test": {netip.MustParseAddr("127.0.0.1")},
			"mapped.test":   {netip.MustParseAddr("::ffff:127.0.0.1")},
			"nat64.test":    {netip.MustParseAddr("64:ff9b::a9fe:a9fe")},
		},
	}
	cases := []struct{ url, want string }{
		{secret.URL, "127.0.0.1, which is not public: Loopback"},
		{"http://[::1]:" + port + "/", "::1, which is not public: Loopback Address"},
		{"http://[::ffff:127.0.0.1]:" + port + "/", "not public: Loopback"},
		{"http://loopback.test:" + port + "/", "127.0.0.1, which is not public: Loopback"},
		{"http://mapped.test:" + port + "/", "not public: Loopback"},
		{"http://nat64.test/", "64:ff9b::a9fe:a9fe, which is not public: IPv4-IPv6 Translation"},
		{"http://[64:ff9b::7f00:1]:" + port + "/", "NAT64"},
		{"http://[2002:7f00:1::1]/", "6to4"},
		{"http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "TEREDO"},
		{"http://169.254.169.254/latest/meta-data/", "Link Local"},
		{"http://10.0.0.1/", "Private-Use"},
		{"http://100.64.0.1/", "Shared Address Space"},
		{"http://0.0.0.0:" + port + "/", "This host on this network"},
		{"http://240.0.0.1/", "Reserved"},
		{"http://198.18.0.1/", "Benchmarking"},
		{"http://192.0.0.100/", "IETF Protocol Assignments"},
		{"http://[fd00::1]/", "Unique-Local"},
		{"http://[fe80::1%25lo]:" + port + "/", "fe80::1, which is not public: Link-Local"},
	}
	for _, c := range cases {
		res := fetch(t, get, c.url)
		if res.Success || !strings.Contains(res.Error, "not public") || !strings.Contains(res.Error, c.want) {
			t.Errorf("%s: success=%v %q, want a refusal naming %q", c.url, res.Success, res.Error, c.want)
		}
		if strings.Contains(res.Text, "internal admin panel") {
			t.Errorf("%s: the private server answered: %q", c.url, res.Text)
		}
	}
	if dialed := d.Dialed(); len(dialed) > 0 {
		t.Errorf("refused addresses were dialed: %v", dialed)
	}
}

// A public server redirects to private ones: each hop is checked where it
// is dialled, whether the redirect names an address or a host whose DNS
// answer is private.
func TestHTTPGetRefusesRedirectsToSpecialPurposeAddresses(t *testing.T) {
	t.Parallel()
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("internal admin panel"))
	}))
	defer secret.Close()
	port := portOf(t, secret)
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hello":
			_, _ = w.Write([]byte("hello from the public web"))
		case "/to-literal":
			http.Redirect(w, r, "http://127.0.0.1:"+port+"/", http.StatusFound)
		case "/to-name":
			http.Redirect(w, r, "http://loopback.test:"+port+"/", http.StatusFound)
		case "/to-mapped":
			http.Redirect(w, r, "http://[::ffff:127.0.0.1]:"+port+"/", http.StatusMovedPermanently)
		case "/to-nat64":
			http.Redirect(w, r, "http://[64:ff9b::7f00:1]:"+port+"/", http.StatusTemporaryRedirect)
		case "/to-public":
			http.Redirect(w, r, "/hello", http.StatusFound)
		}
	}))
	defer public.Close()

	d := &testDialer{t: t, public: public.Listener.Addr().String()}
	get := &actions.HTTPGet{
		Dial: d.Dial,
		Resolver: fakeResolver{
			"public.test":   {netip.MustParseAddr(publicStandIn)},
			"loopback.test": {netip.MustParseAddr("127.0.0.1")},
		},
	}
	// The stand-in works, redirects between public addresses too: the
	// refusals below are the check's, not a broken test dialer's.
	for _, path := range []string{"/hello", "/to-public"} {
		if res := fetch(t, get, "http://public.test"+path); !res.Success || !strings.Contains(res.Text, "hello from the public web") {
			t.Fatalf("%s through the public stand-in: %+v", path, res)
		}
	}
	for _, path := range []string{"/to-literal", "/to-name", "/to-mapped", "/to-nat64"} {
		res := fetch(t, get, "http://public.test"+path)
		if res.Success || !strings.Contains(res.Error, "not public") || strings.Contains(res.Text, "internal admin panel") {
			t.Errorf("redirect %s: success=%v text=%q error=%q", path, res.Success, res.Text, res.Error)
		}
	}
	if dialed := d.Dialed(); len(dialed) > 0 {
		t.Errorf("redirect targets were dialed: %v", dialed)
	}
}

func TestHTTPGetAllowPrivate(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = w.Write([]byte(strings.Repeat("z", 300<<10)))
			return
		}
		_, _ = w.Write([]byte("internal admin panel"))
	}))
	defer srv.Close()

	get := &actions.HTTPGet{AllowPrivate: true, MaxBytes: 1000}
	if res := fetch(t, get, srv.URL); !res.Success || !strings.Contains(res.Text, "internal admin panel") || !strings.HasPrefix(res.Text, "HTTP 200 OK") {
		t.Fatalf("with AllowPrivate: %+v", res)
	}
	if res := fetch(t, get, srv.URL+"/big"); !res.Success || !strings.Contains(res.Text, "[truncated at 1000 bytes]") || len(res.Text) > 1200 {
		t.Fatalf("size cap: %v, %d bytes", res.Success, len(res.Text))
	}
}

func TestHTTPGetRefusesOtherSchemes(t *testing.T) {
	t.Parallel()
	get := &actions.HTTPGet{Dial: (&testDialer{t: t}).Dial}
	for _, u := range []string{"file:///etc/passwd", "ftp://example.com/", "not a url"} {
		if res := fetch(t, get, u); res.Success || !strings.Contains(res.Error, "http:// or https://") {
			t.Errorf("%s: %+v", u, res)
		}
	}
}
