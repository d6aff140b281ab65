package httpapi

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

// The dashboard is plain HTML, CSS and JavaScript embedded in the binary:
// no build step, nothing fetched from elsewhere, so it works offline.
//
//go:embed dashboard
var dashboardFiles embed.FS

var dashboardFS, _ = fs.Sub(dashboardFiles, "dashboard")

// contentSecurityPolicy lets the page load only its own files and talk
// only to its own origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (a *API) dashboardPage(w http.ResponseWriter, r *http.Request) {
	serveAsset(w, r, "index.html")
}

func (a *API) dashboardAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if name == "index.html" || path.Base(name) != name {
		http.NotFound(w, r)
		return
	}
	serveAsset(w, r, name)
}

func serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	if _, err := fs.Stat(dashboardFS, name); err != nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, dashboardFS, name)
}
