package render

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// visibleCase is a case of the table of testdata/visible.json: an input
// made of pieces, each a string or [string, n] for the string n times,
// and the form Visible shows it in.
type visibleCase struct {
	Name, In, Want string
}

// visibleCases reads the table.
func visibleCases(t *testing.T) []visibleCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/visible.json")
	if err != nil {
		t.Fatal(err)
	}
	var table []struct {
		Name string            `json:"name"`
		In   []json.RawMessage `json:"in"`
		Want string            `json:"want"`
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatalf("testdata/visible.json: %v", err)
	}
	cases := make([]visibleCase, 0, len(table))
	for _, c := range table {
		var in strings.Builder
		for _, p := range c.In {
			var s string
			if json.Unmarshal(p, &s) == nil {
				in.WriteString(s)
				continue
			}
			var rep []json.RawMessage
			var n int
			if json.Unmarshal(p, &rep) != nil || len(rep) != 2 || json.Unmarshal(rep[0], &s) != nil || json.Unmarshal(rep[1], &n) != nil {
				t.Fatalf("testdata/visible.json: %s: a piece is %s, want a string or [string, n]", c.Name, p)
			}
			in.WriteString(strings.Repeat(s, n))
		}
		cases = append(cases, visibleCase{Name: c.Name, In: in.String(), Want: c.Want})
	}
	return cases
}
