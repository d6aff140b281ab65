package actions_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
)

// TestEgressProxyRules drives the proxy's handler with a fake resolver
// and a dialer that stands a loopback server in for a public address: the
// allowed path is proven without the internet, and every refusal is
// checked on the address the proxy would dial.
func TestEgressProxyRules(t *testing.T) {
	t.Parallel()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "public says hi to %s %s", r.Host, r.URL.Path)
	}))
	defer backend.Close()
	dialer := &testDialer{t: t, public: backend.Listener.Addr().String()}
	const own = "93.184.215.99" // a public-looking address of Taskloom's own
	e := actions.NewEgress(actions.EgressOptions{
		Resolver: fakeResolver{
			"public.example":  {netip.MustParseAddr(publicStandIn)},
			"rebind.example":  {netip.MustParseAddr("127.0.0.1")},
			"private.example": {netip.MustParseAddr("10.1.2.3")},
			"mixed.example":   {netip.MustParseAddr("192.168.1.1"), netip.MustParseAddr(publicStandIn)},
			"taskloom.test":   {netip.MustParseAddr(own)},
		},
		Dial:     dialer.Dial,
		OwnHosts: []string{"taskloom.test"},
	})
	defer e.Close()
	proxy := httptest.NewServer(e)
	defer proxy.Close()
	proxyURL, _ := url.Parse(proxy.URL)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}

	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("http://public.example/path"); code != 200 || body != "public says hi to public.example /path" {
		t.Errorf("GET a public name: %d %q", code, body)
	}
	if code, body := get("http://" + publicStandIn + ":8080/x"); code != 200 || !strings.Contains(body, "public says hi") {
		t.Errorf("GET a public address: %d %q", code, body)
	}
	if code, body := get("http://mixed.example/"); code != 200 {
		t.Errorf("GET a name with a private and a public address: %d %q; want the public one", code, body)
	}
	for _, c := range []struct{ url, want string }{
		{"http://127.0.0.1:" + fmt.Sprint(backend.Listener.Addr().(*net.TCPAddr).Port) + "/", "127.0.0.1 is not a public address: Loopback"},
		{"http://localhost.:1/", "cannot reach"},
		{"http://rebind.example/", "127.0.0.1 is not a public address: Loopback"},
		{"http://private.example/", "10.1.2.3 is not a public address: Private-Use"},
		{"http://[::1]:80/", "::1 is not a public address"},
		{"http://169.254.169.254/latest/meta-data/", "Link Local"},
		{"http://[64:ff9b::7f00:1]/", "NAT64"},
		{"http://taskloom.test/api/tasks", "Taskloom's own address (taskloom.test)"},
	} {
		code, body := get(c.url)
		if (code != http.StatusForbidden && code != http.StatusBadGateway) || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d %q; want a refusal saying %q", c.url, code, body, c.want)
		}
	}

	connect := func(target string) (string, string) {
		t.Helper()
		c, err := net.Dial("tcp", proxyURL.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		// The request through the tunnel is sent at once, before the
		// proxy answers: the proxy must pass on what it read ahead.
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET /tunnel HTTP/1.1\r\nHost: public.example\r\nConnection: close\r\n\r\n", target, target)
		r := bufio.NewReader(c)
		status, _ := r.ReadString('\n')
		rest, _ := io.ReadAll(r)
		return strings.TrimSpace(status), string(rest)
	}
	if status, rest := connect("public.example:443"); status != "HTTP/1.1 200 Connection established" || !strings.Contains(rest, "public says hi to public.example /tunnel") {
		t.Errorf("CONNECT to a public name: %q %q", status, rest)
	}
	for _, target := range []string{"127.0.0.1:22", "rebind.example:443", "10.0.0.1:443", "[::1]:443", "taskloom.test:443"} {
		if status, rest := connect(target); !strings.HasPrefix(status, "HTTP/1.1 403") || !strings.Contains(rest, "is not a public address") {
			t.Errorf("CONNECT %s: %q %q; want 403", target, status, rest)
		}
	}
	if d := dialer.Dialed(); len(d) > 0 {
		t.Errorf("the proxy dialled %v; it may dial only public addresses", d)
	}

	resp, err := http.Get(proxy.URL + "/not-a-proxy-request")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an origin-form request: %d, want 400", resp.StatusCode)
	}
}

// TestSandboxNetworkOnlyThroughTheProxy: with the network allowed, the
// sandbox has the egress proxy in HTTP_PROXY and HTTPS_PROXY and nothing
// else. A listener on the host's loopback (where Taskloom's API is) is
// reached neither directly nor through the proxy, which refuses it with
// a clear answer; nor is a private address.
func TestSandboxNetworkOnlyThroughTheProxy(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	port, accepted := hostListener(t)
	e := actions.NewEgress(actions.EgressOptions{Timeout: 3 * time.Second})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := &actions.Sandbox{Timeout: 30 * time.Second, Network: true, Egress: e}
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check with the network: %v", err)
	}
	script := fmt.Sprintf(`env | grep -i proxy | sort
curl -sS -m 5 http://127.0.0.1:%[1]d/ ; echo " http=$?"
curl -sS -m 5 https://127.0.0.1:%[1]d/ ; echo " https=$?"
curl -sS -m 5 http://10.0.0.1/ ; echo " private=$?"
curl -sS -m 5 --noproxy '*' http://127.0.0.1:%[1]d/ ; echo " direct=$?"
curl -sS -m 5 --noproxy '*' http://127.0.0.1:3128/ >/dev/null; echo " forwarder=$?"`, port)
	out := run(t, s, workDir(t), script)
	for _, want := range []string{
		"HTTPS_PROXY=http://127.0.0.1:3128\nHTTP_PROXY=http://127.0.0.1:3128\nhttp_proxy=http://127.0.0.1:3128\nhttps_proxy=http://127.0.0.1:3128\n",
		"Taskloom's egress proxy refused 127.0.0.1:" + fmt.Sprint(port) + ": 127.0.0.1 is not a public address: Loopback (RFC 1122).",
		"CONNECT tunnel failed, response 403",
		"Taskloom's egress proxy refused 10.0.0.1: 10.0.0.1 is not a public address: Private-Use (RFC 1918).",
		"Failed to connect to 127.0.0.1 port " + fmt.Sprint(port),
		" forwarder=0",
	} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("the output lacks %q:\n%s", want, out.Text)
		}
	}
	select {
	case <-accepted:
		t.Error("the host's listener accepted a connection from the sandbox")
	default:
	}
}

// hostListener listens on the host's loopback for as long as t runs and
// returns its port and a channel that gets a value for each connection
// it accepted (and closed at once).
func hostListener(t *testing.T) (int, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}
