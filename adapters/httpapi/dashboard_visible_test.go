package httpapi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/taskloom/taskloom/internal/render"
)

// harness runs the dashboard's visible.js under Node over the table of
// cases render's test holds render.Visible to, and prints each case's
// input and what the twin shows.
const harness = `
const fs = require("fs");
const { visible } = require(process.argv[1]);
const table = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = table.map((c) => {
  const input = c.in.map((p) => (typeof p === "string" ? p : p[0].repeat(p[1]))).join("");
  return { name: c.name, in: input, want: c.want, got: visible(input) };
});
process.stdout.write(JSON.stringify(out));
`

// TestDashboardVisibleIsRendersTwin: the dashboard shows a call to
// approve as chat and the CLI do, character for character, so that a
// person deciding there sees what runs. The test runs the twin under Node
// (installed by .ci/run, as for the MCP test); it fails without it.
func TestDashboardVisibleIsRendersTwin(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("the dashboard's twin of render.Visible is JavaScript and this test found no node on PATH: " +
			"install Debian's package (apt-get install nodejs), as .ci/run does")
	}
	cmd := exec.Command(node, "-e", harness, "./dashboard/visible.js", "../../internal/render/testdata/visible.json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var cases []struct{ Name, In, Want, Got string }
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 30 {
		t.Fatalf("the twin ran %d cases", len(cases))
	}
	for _, c := range cases {
		if c.Got != c.Want {
			t.Errorf("%s: the dashboard shows %q, want %q", c.Name, c.Got, c.Want)
		}
		if got := render.Visible(c.In); got != c.Got {
			t.Errorf("%s: render.Visible shows %q, the dashboard %q", c.Name, got, c.Got)
		}
	}
}

// The twin names scripts as Go's unicode package does, from a list of its
// own: the list is Go's.
func TestDashboardVisibleKnowsGosScripts(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("dashboard/visible.js")
	if err != nil {
		t.Fatal(err)
	}
	src := string(raw)
	start := strings.Index(src, "const scripts = [")
	if start < 0 {
		t.Fatal("visible.js has no list of scripts")
	}
	end := strings.Index(src[start:], "];")
	if end < 0 {
		t.Fatal("visible.js has no list of scripts")
	}
	var listed []string
	for _, f := range strings.Split(src[start+len("const scripts = ["):start+end], ",") {
		if f = strings.TrimSpace(f); f != "" {
			listed = append(listed, strings.Trim(f, `"`))
		}
	}
	var want []string
	for name := range unicode.Scripts {
		if name != "Common" && name != "Inherited" {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("visible.js lists the scripts\n%v\nGo knows\n%v", listed, want)
	}
}
