package storetest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The stores import the task domain and not the plugin runtime
// (docs/architecture.md): a store can be read, tested and replaced
// without the runtime, and no change of the runtime reaches a store.
func TestStoresDoNotImportTheRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "../postgres", "../sqlite", "../sqlstore").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/taskloom/taskloom/"
	allowed := map[string]bool{"domain": true, "adapters/sqlstore": true, "adapters/postgres": true, "adapters/sqlite": true}
	for _, pkg := range strings.Fields(string(out)) {
		if rest, ok := strings.CutPrefix(pkg, module); ok && !allowed[rest] {
			t.Errorf("a store depends on %s; the stores may import only the task domain", pkg)
		}
	}
}
