package httpapi_test

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// openAPIRoutes reads "METHOD /path" pairs from docs/openapi.yaml.
//
// It is a deliberately small reader, not a YAML parser (the project takes
// no YAML dependency for one test): under the top-level "paths:" key, a
// path is a key indented two spaces that starts with "/", and its
// operations are the HTTP-method keys indented four. The test fails if the
// file stops having that shape, so the check cannot pass vacuously.
func openAPIRoutes(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	methods := map[string]bool{"get": true, "put": true, "post": true, "delete": true, "patch": true, "head": true, "options": true}
	var (
		routes  []string
		inPaths bool
		path    string
		version bool
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		key, _, isKey := strings.Cut(strings.TrimSpace(line), ":")
		if indent == 0 {
			inPaths = line == "paths:"
			version = version || strings.HasPrefix(line, "openapi: 3.")
			continue
		}
		if !inPaths || !isKey {
			continue
		}
		switch {
		case indent == 2 && strings.HasPrefix(key, "/"):
			path = key
		case indent == 2:
			t.Fatalf("%s: unexpected key %q under paths", file, key)
		case indent == 4 && methods[key]:
			routes = append(routes, strings.ToUpper(key)+" "+path)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !version || len(routes) == 0 {
		t.Fatalf("%s does not look like an OpenAPI 3 description with paths", file)
	}
	return routes
}

// TestOpenAPIMatchesRoutes compares docs/openapi.yaml with the routes the
// server really mounts: every route is described, and nothing described is
// missing.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	var mounted []string
	for _, p := range f.srv.Patterns() {
		method, path, ok := strings.Cut(p, " ")
		if !ok {
			continue // method-less catch-alls (JSON 404/405 under /api/) are not endpoints
		}
		path = strings.TrimSuffix(path, "{$}") // "GET /{$}" is the page at "/"
		// OpenAPI has no "rest of the path" parameter: {path...} is {path}.
		path = strings.ReplaceAll(path, "...}", "}")
		if path == "" {
			path = "/"
		}
		mounted = append(mounted, method+" "+path)
	}
	documented := openAPIRoutes(t, "../../docs/openapi.yaml")
	slices.Sort(mounted)
	slices.Sort(documented)
	for _, r := range mounted {
		if !slices.Contains(documented, r) {
			t.Errorf("%s is served but not in docs/openapi.yaml", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(mounted, r) {
			t.Errorf("%s is in docs/openapi.yaml but not served", r)
		}
	}
	if len(mounted) < 12 {
		t.Errorf("only %d routes mounted: %v", len(mounted), mounted)
	}

	// And each documented route reaches a handler of its own, not the
	// mux's or the API's "no such endpoint".
	f.create("a task to address")
	f.model.Decide("write_file", map[string]string{"path": "notes/plan.md", "content": "the plan"}, 10, "continue")
	f.step() // a file to address
	if _, err := f.store.Enqueue(f.ctx, domain.Notification{Room: "discord:1", TaskNumber: 1, Category: domain.NotifyProgress,
		Payload: json.RawMessage(`{}`), CreatedAt: f.clk.Now()}); err != nil {
		t.Fatal(err) // notification 1, to address
	}
	if _, err := f.store.AddDocument(f.ctx, domain.Document{Title: "Runbook", CreatedAt: f.clk.Now()}, "Restart the queue first."); err != nil {
		t.Fatal(err) // knowledge document 1, to address
	}
	for _, r := range documented {
		method, path, _ := strings.Cut(r, " ")
		path = strings.NewReplacer("{number}", "1", "{id}", "1", "{file}", "app.css", "{path}", "notes/plan.md").Replace(path)
		if path == "/api/events" {
			continue // a stream: TestEventStream* cover it
		}
		resp := f.do(method, path, nil)
		if resp.code == 404 || resp.code == 405 {
			t.Errorf("%s %s = %d: %s", method, path, resp.code, resp.raw)
		}
	}
}
