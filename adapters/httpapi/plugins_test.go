package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// TestPluginRoutesNeedTheToken: the routes a plugin mounts under
// /plugins/<name>/ are behind the same token check as /api; with no token
// configured they are as open as the API.
func TestPluginRoutesNeedTheToken(t *testing.T) {
	rt := plugin.New(plugin.Options{})
	stats := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "42 tasks") })
	if err := rt.Register(&plugin.Plugin{Name: "stats", Routes: []plugin.Route{
		{Method: "GET", Path: "summary", Handler: stats},
		{Path: "raw", Handler: stats},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })

	withToken := tokenFixture(t, teststore.SQLite)
	withToken.api.MountPlugins(withToken.srv, rt.Routes())
	open := newFixture(t, teststore.SQLite)
	open.api.MountPlugins(open.srv, rt.Routes())
	withToken.bearer = "" // each case says what it sends

	tests := []struct {
		name         string
		f            *fixture
		method, path string
		auth         string
		code         int
	}{
		{"no token", withToken, "GET", "/plugins/stats/summary", "", 401},
		{"a wrong token", withToken, "GET", "/plugins/stats/summary", "Bearer nope", 401},
		{"the token", withToken, "GET", "/plugins/stats/summary", "Bearer " + testToken, 200},
		{"any method, no token", withToken, "POST", "/plugins/stats/raw", "", 401},
		{"any method, the token", withToken, "POST", "/plugins/stats/raw", "Bearer " + testToken, 200},
		{"no token configured", open, "GET", "/plugins/stats/summary", "", 200},
	}
	for _, tt := range tests {
		var hdr []string
		if tt.auth != "" {
			hdr = []string{"Authorization", tt.auth}
		}
		r := tt.f.do(tt.method, tt.path, nil, hdr...)
		if r.code != tt.code {
			t.Errorf("%s: %s %s = %d %s, want %d", tt.name, tt.method, tt.path, r.code, r.raw, tt.code)
		}
		if tt.code == 200 && r.raw != "42 tasks" {
			t.Errorf("%s: the plugin answered %q", tt.name, r.raw)
		}
	}
}
