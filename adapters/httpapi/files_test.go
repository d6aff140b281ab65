package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestTaskFiles: a task's files are listed (no bytes) and each read back
// as bytes the browser will not interpret; unknown tasks and files are
// 404, a bad path 400.
func TestTaskFiles(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.create("Write the plan")
		f.model.Decide("write_file", map[string]string{"path": "notes/plan.md", "content": "# Plan\n<script>alert(1)</script>"}, 40, "continue")
		f.step()
		f.create("Nothing written")

		list := f.net("GET", "/api/tasks/1/files", "")
		var body struct {
			Files []struct {
				Path   string `json:"path"`
				Size   int64  `json:"size"`
				SHA256 string `json:"sha256"`
			} `json:"files"`
		}
		if list.code != 200 || json.Unmarshal([]byte(list.raw), &body) != nil || len(body.Files) != 1 ||
			body.Files[0].Path != "notes/plan.md" || body.Files[0].Size != 32 || len(body.Files[0].SHA256) != 64 {
			t.Fatalf("GET files = %d %s", list.code, list.raw)
		}
		if empty := f.net("GET", "/api/tasks/2/files", ""); empty.code != 200 || !strings.Contains(empty.raw, `"files":[]`) {
			t.Fatalf("GET files of a task with none = %d %s", empty.code, empty.raw)
		}

		file := f.net("GET", "/api/tasks/1/files/notes/plan.md", "")
		if file.code != 200 || file.raw != "# Plan\n<script>alert(1)</script>" ||
			file.header.Get("Content-Type") != "application/octet-stream" || file.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("GET a file = %d %q %v", file.code, file.raw, file.header)
		}
		for path, want := range map[string]int{
			"/api/tasks/9/files":               404,
			"/api/tasks/9/files/notes/plan.md": 404,
			"/api/tasks/1/files/notes/none.md": 404,
			"/api/tasks/1/files/notes%00x":     400,
			"/api/tasks/x/files":               400,
		} {
			if r := f.net("GET", path, ""); r.code != want || !strings.Contains(r.raw, `"error"`) {
				t.Errorf("GET %s = %d %s; want %d with an error", path, r.code, r.raw, want)
			}
		}
	})
}
