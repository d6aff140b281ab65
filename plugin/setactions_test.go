package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/taskloom/taskloom/plugin"
)

func actionNames(rt *plugin.Runtime) []string {
	var names []string
	for _, a := range rt.Actions() {
		names = append(names, a.Info().Name)
	}
	return names
}

// TestSetActionsReplacesASourcesActions: a source's actions come, change
// and go while the plugins' own stay; a set that clashes changes nothing.
func TestSetActionsReplacesASourcesActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := plugin.New(plugin.Options{Logger: quietLogger()})
	if err := rt.Register(&plugin.Plugin{Name: "core", Actions: []plugin.Action{echo("help")}}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}

	if err := rt.SetActions("mcp:fs", []plugin.Action{echo("fs.read"), echo("fs.list")}); err != nil {
		t.Fatal(err)
	}
	if err := rt.SetActions("mcp:web", []plugin.Action{echo("web.get")}); err != nil {
		t.Fatal(err)
	}
	if got, want := actionNames(rt), []string{"help", "fs.read", "fs.list", "web.get"}; !slices.Equal(got, want) {
		t.Fatalf("actions = %q, want %q", got, want)
	}
	if res, err := rt.RunAction(ctx, "fs.read", &plugin.Call{}); err != nil || res.Text != "fs.read:" {
		t.Fatalf("run fs.read = %+v, %v", res, err)
	}

	// A new list for fs: read stays, list goes, write comes.
	if err := rt.SetActions("mcp:fs", []plugin.Action{echo("fs.read"), echo("fs.write")}); err != nil {
		t.Fatal(err)
	}
	if got, want := actionNames(rt), []string{"help", "web.get", "fs.read", "fs.write"}; !slices.Equal(got, want) {
		t.Fatalf("after the change: actions = %q, want %q", got, want)
	}
	if _, err := rt.RunAction(ctx, "fs.list", &plugin.Call{}); !errors.Is(err, plugin.ErrUnknownAction) {
		t.Fatalf("run of a removed action: err = %v, want ErrUnknownAction", err)
	}

	// Refusals change nothing.
	for _, tt := range []struct {
		source string
		acts   []plugin.Action
		want   string
	}{
		{"mcp:fs", []plugin.Action{echo("fs.read"), echo("help")}, `action "help" is already registered`},
		{"mcp:fs", []plugin.Action{echo("web.get")}, `action "web.get" is already registered`},
		{"mcp:fs", []plugin.Action{echo("fs.a"), echo("fs.a")}, `action "fs.a" is given twice`},
		{"mcp:fs", []plugin.Action{echo("")}, "an action has no name"},
		{" ", nil, "the source has no name"},
	} {
		err := rt.SetActions(tt.source, tt.acts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SetActions(%q) err = %v, want it to say %q", tt.source, err, tt.want)
		}
	}
	if got, want := actionNames(rt), []string{"help", "web.get", "fs.read", "fs.write"}; !slices.Equal(got, want) {
		t.Fatalf("after refusals: actions = %q, want %q", got, want)
	}

	// None removes them; the names are free again for anyone.
	if err := rt.SetActions("mcp:fs", nil); err != nil {
		t.Fatal(err)
	}
	if got, want := actionNames(rt), []string{"help", "web.get"}; !slices.Equal(got, want) {
		t.Fatalf("after removal: actions = %q, want %q", got, want)
	}
	if err := rt.SetActions("mcp:other", []plugin.Action{echo("fs.read")}); err != nil {
		t.Fatalf("a removed name taken by another source: %v", err)
	}
}

// TestSetActionsIsSafeWhileActionsRun changes a source's actions while
// other goroutines list, find and run them (run with -race).
func TestSetActionsIsSafeWhileActionsRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := plugin.New(plugin.Options{Logger: quietLogger()})
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				name := fmt.Sprintf("s%d.t%d", w, i%3)
				if err := rt.SetActions(fmt.Sprintf("src%d", w), []plugin.Action{echo(name)}); err != nil {
					t.Error(err)
					return
				}
				for _, a := range rt.Actions() {
					_ = a.Info()
				}
				if _, err := rt.RunAction(ctx, name, &plugin.Call{}); err != nil && !errors.Is(err, plugin.ErrUnknownAction) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := len(rt.Actions()); got != 4 {
		t.Fatalf("%d actions at the end, want one per source", got)
	}
}
