package config_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/internal/config"
)

// TestVarsAreWhatLoadReads checks that config.Vars, which serve's help
// lists, holds every variable Load reads and none it does not, except
// those marked as read elsewhere.
func TestVarsAreWhatLoadReads(t *testing.T) {
	t.Parallel()
	read := map[string]bool{}
	if _, err := config.Load(func(name string) string { read[name] = true; return "" }); err != nil {
		t.Fatal(err)
	}
	var help bytes.Buffer
	if err := config.WriteVars(&help); err != nil {
		t.Fatal(err)
	}
	for name := range read {
		if !strings.Contains(help.String(), "  "+name) {
			t.Errorf("Load reads %s, which the help does not list", name)
		}
	}
	var names []string
	for _, v := range config.Vars {
		names = append(names, v.Name)
		if v.Help == "" {
			t.Errorf("%s has no help", v.Name)
		}
		if read[v.Name] == v.Elsewhere {
			t.Errorf("%s: read by Load %v, marked as read elsewhere %v", v.Name, read[v.Name], v.Elsewhere)
		}
	}
	slices.Sort(names)
	if len(slices.Compact(names)) != len(config.Vars) {
		t.Error("config.Vars lists a variable twice")
	}
}

// TestLoadReadsOnlyListedVariables is the guard that keeps Vars complete
// as Load grows. It changes config.Vars, so it does not run in parallel.
func TestLoadReadsOnlyListedVariables(t *testing.T) {
	saved := config.Vars
	defer func() { config.Vars = saved }()
	config.Vars = slices.DeleteFunc(slices.Clone(saved), func(v config.Var) bool { return v.Name == "TASKLOOM_WORKERS" })
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "TASKLOOM_WORKERS") {
			t.Fatalf("Load read a variable Vars does not list without a word: %v", r)
		}
	}()
	_, _ = config.Load(func(string) string { return "" })
}
