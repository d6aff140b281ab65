package config_test

import (
	"os"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/internal/config"
)

// configurationGuide is the operator's list of variables, which must
// agree with config.Vars (the list serve's help prints).
const configurationGuide = "../../docs/configuration.md"

// guideRows reads the variable table of docs/configuration.md: each row
// whose first cell is one backquoted name, from that name to its cells.
func guideRows(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(configurationGuide)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		name := cells[0]
		if len(cells) < 3 || strings.Count(name, "`") != 2 || !strings.HasSuffix(name, "`") {
			continue
		}
		name = strings.Trim(name, "`")
		if _, dup := rows[name]; dup {
			t.Errorf("%s: %s has two rows", configurationGuide, name)
		}
		rows[name] = cells
	}
	return rows
}

// TestEveryVarIsInTheConfigurationGuide checks that every variable in
// config.Vars has a row of its own in docs/configuration.md whose
// default cell says its default (in backquotes, or first), and that the guide lists no variable
// serve does not read.
func TestEveryVarIsInTheConfigurationGuide(t *testing.T) {
	t.Parallel()
	rows := guideRows(t)
	known := map[string]bool{}
	for _, v := range config.Vars {
		known[v.Name] = true
		cells, ok := rows[v.Name]
		if !ok {
			t.Errorf("%s is in config.Vars but has no row `%s` in %s", v.Name, v.Name, configurationGuide)
			continue
		}
		if d := v.Default; d != "" && !strings.Contains(cells[1], "`"+d+"`") && !strings.HasPrefix(cells[1], d) {
			t.Errorf("%s: the default of %s is %q in config.Vars, the guide says %q", configurationGuide, v.Name, v.Default, cells[1])
		}
	}
	for name := range rows {
		if !known[name] {
			t.Errorf("%s has a row for %s, which config.Vars does not list", configurationGuide, name)
		}
	}
}
