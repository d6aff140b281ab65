package httpapi

import (
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Identity is who the service is on the network, beyond the loopback
// names and addresses it always answers to: the other hosts a request may
// name, and the origin its own pages may have besides the one they were
// loaded from.
//
// Without a token the API trusts whoever can reach it, which on a
// loopback address is meant to be the people using the machine. A web
// page they open can reach it too: its form or fetch can POST to
// 127.0.0.1 (cross-site request forgery), and a page whose DNS name is
// re-pointed at 127.0.0.1 after it loaded (DNS rebinding) is, to the
// browser, the API's own origin and may read every answer. The guard
// refuses both before any handler runs: a request naming a host the
// service does not answer to gets 421, one coming from another page gets
// 403, and a change under /api whose body is not declared JSON gets 415
// (a page can send text/plain or a form without asking the server first,
// but not application/json) — every POST, and a PUT, PATCH or DELETE
// that carries a body (see changesAPI).
type Identity struct {
	// PublicURL is the URL people open when it is neither a loopback
	// address nor the listen address, e.g. a reverse proxy's
	// (TASKLOOM_PUBLIC_URL): its host is answered to and its origin is
	// the service's own.
	PublicURL string
	// ListenAddr is where the service listens (TASKLOOM_HTTP_ADDR): its
	// host is answered to unless it is a wildcard (0.0.0.0, ::, empty),
	// which names no host. Whatever it is, a request naming the very
	// address its connection arrived on is answered: it cannot be a
	// rebound name.
	ListenAddr string
	// Hostname is the machine's own name (os.Hostname), by which its
	// neighbours reach it, e.g. Prometheus scraping taskloom-1:8080 in a
	// Compose network. Empty: none.
	Hostname string
}

// guard decides whether a request may reach a handler.
type guard struct {
	hosts  map[string]bool // canonical hosts answered to besides loopback ones
	public string          // canonical origin of the public URL; "" when none
}

func newGuard(id Identity) (*guard, error) {
	g := &guard{hosts: map[string]bool{}}
	if id.PublicURL != "" {
		u, err := url.Parse(id.PublicURL)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("public URL %q: want an http:// or https:// URL with a host", id.PublicURL)
		}
		origin, ok := canonicalOrigin(u.Scheme, u.Host)
		if !ok {
			return nil, fmt.Errorf("public URL %q: want an http:// or https:// URL with a host", id.PublicURL)
		}
		g.public = origin
		g.hosts[canonicalHost(u.Hostname())] = true
	}
	if id.ListenAddr != "" {
		host, _, err := net.SplitHostPort(id.ListenAddr)
		if err != nil {
			return nil, fmt.Errorf("listen address %q: %w", id.ListenAddr, err)
		}
		if !isWildcard(host) {
			g.hosts[canonicalHost(host)] = true
		}
	}
	if h := canonicalHost(id.Hostname); h != "" {
		g.hosts[h] = true
	}
	return g, nil
}

// admit answers a request it refuses and reports whether it let it
// through.
func (g *guard) admit(w http.ResponseWriter, r *http.Request, log *slog.Logger) bool {
	refuse := func(code int, msg string) bool {
		log.Warn("HTTP request refused", "status", code, "method", r.Method, "path", r.URL.Path,
			"host", r.Host, "origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"),
			"remote", r.RemoteAddr, "reason", msg)
		if code == http.StatusUnsupportedMediaType {
			w.Header().Set("Accept", "application/json") // RFC 9110 §15.5.16: what would have been taken
		}
		writeError(w, code, msg)
		return false
	}
	if !g.answersTo(r) {
		return refuse(http.StatusMisdirectedRequest, fmt.Sprintf(
			"this server does not answer to the name %q: use a loopback address, or the host of TASKLOOM_PUBLIC_URL or TASKLOOM_HTTP_ADDR", r.Host))
	}
	if vs, ok := r.Header["Origin"]; ok && (len(vs) != 1 || !g.ownOrigin(r, vs[0])) {
		return refuse(http.StatusForbidden, fmt.Sprintf(
			"requests from other web pages are refused: Origin %q is not this service's own", strings.Join(vs, ", ")))
	}
	// Sec-Fetch-Site is sent by browsers even where Origin is not (a GET
	// from an <img> or a no-cors fetch): such a request is not the
	// dashboard's. A link followed from elsewhere still opens a page.
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		if !isTopLevelNavigation(r) {
			return refuse(http.StatusForbidden, fmt.Sprintf("requests from other web pages are refused (Sec-Fetch-Site: %s)", site))
		}
	}
	if changesAPI(r) {
		ct := r.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return refuse(http.StatusUnsupportedMediaType, fmt.Sprintf("send the request with Content-Type: application/json, not %q", ct))
		}
	}
	return true
}

// answersTo reports whether the request's Host names this service: a
// loopback name or address, the address its connection arrived on, or a
// host of the Identity. The port is not compared: a name that reaches the
// listener on one port is the same machine on another.
func (g *guard) answersTo(r *http.Request) bool {
	host := canonicalHost(hostOf(r.Host))
	switch {
	case host == "":
		return false
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		// RFC 6761: always loopback, and browsers resolve it so
		// themselves, so no page can rebind it.
		return true
	case g.hosts[host]:
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	// A client that names the address it connected to reached this
	// process directly; only a name can be re-pointed. (Kubernetes probes
	// and scrapers name the pod's address.)
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(la.String()); err == nil && ap.Addr().Unmap().WithZone("") == ip {
			return true
		}
	}
	return false
}

// ownOrigin reports whether origin, an Origin header, is the one the
// request's own host gives (the host was accepted by answersTo) or the
// public URL's. "null", sent by sandboxed frames, files and redirected
// requests, is nobody's.
func (g *guard) ownOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Opaque != "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	o, ok := canonicalOrigin(u.Scheme, u.Host)
	if !ok {
		return false
	}
	if g.public != "" && o == g.public {
		return true
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	own, ok := canonicalOrigin(scheme, r.Host)
	return ok && o == own
}

// isTopLevelNavigation reports whether a browser is opening a page
// outside /api in a tab (a followed link or a bookmark), which reads
// nothing a page could see and changes nothing.
func isTopLevelNavigation(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document" &&
		!isAPIPath(r.URL.Path)
}

// changesAPI reports whether the request asks the API to change
// something in a way a page could forge: its body must then be declared
// JSON.
//
// A POST must always say so, with a body or without: an HTML form on any
// site can POST to the API with no preflight, its body empty or
// text/plain, so an empty POST (a pause, a resume) would be forgeable
// without it. A PUT, PATCH or DELETE is another matter: no form sends
// one, and a page's fetch of one to another origin needs a CORS
// preflight, which this server never grants (and the fetch carries an
// Origin, refused above). So one without a body — `curl -X DELETE
// …/api/schedules/1` — needs no Content-Type, and one with a body still
// declares JSON, which is what its handler reads. A body of unknown
// length (chunked) is a body.
func changesAPI(r *http.Request) bool {
	if !isAPIPath(r.URL.Path) {
		return false
	}
	switch r.Method {
	case http.MethodPost:
		return true
	case http.MethodPut, http.MethodPatch, http.MethodDelete:
		return r.ContentLength != 0
	}
	return false
}

func isAPIPath(p string) bool { return p == "/api" || strings.HasPrefix(p, "/api/") }

// hostOf strips the port from a Host header, and the brackets from an
// IPv6 address.
func hostOf(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// canonicalHost lower-cases a host name and drops its final dot, and
// writes an IP address the one way netip does (::ffff:127.0.0.1 is
// 127.0.0.1).
func canonicalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap().WithZone("").String()
	}
	return h
}

// canonicalOrigin writes scheme://host:port with the port always given,
// so that http://localhost and http://localhost:80 compare equal.
func canonicalOrigin(scheme, hostport string) (string, bool) {
	scheme = strings.ToLower(scheme)
	port := ""
	switch scheme {
	case "http":
		port = "80"
	case "https":
		port = "443"
	default:
		return "", false
	}
	host := hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	} else {
		host = hostOf(hostport)
	}
	host = canonicalHost(host)
	if host == "" || port == "" {
		return "", false
	}
	return scheme + "://" + net.JoinHostPort(host, port), true
}

// isWildcard reports whether a listen host listens on every address.
func isWildcard(host string) bool {
	if host == "" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsUnspecified()
}
