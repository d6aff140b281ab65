package tasks_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/services/tasks"
)

func TestParseDecision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       string
		action   string
		params   string
		progress int
		status   domain.Verdict
		bad      bool
	}{
		{"plain", `{"thought":"t","action":"write_file","params":{"path":"a","content":"b"},"progress":30,"status":"continue","summary":""}`, "write_file", `{"path":"a","content":"b"}`, 30, "continue", false},
		// Kept as written: folding the keys here would hide from Turn.Act's
		// strict reading the call a person could be shown one way and run
		// another.
		{"params keep repeated keys", `{"action":"run_command","params":{"command":"a","COMMAND":"b","\u0063ommand":"c"},"progress":1}`, "run_command", `{"command":"a","COMMAND":"b","\u0063ommand":"c"}`, 1, "continue", false},
		{"fenced", "```json\n{\"action\":\"list_files\",\"params\":{},\"progress\":5,\"status\":\"continue\"}\n```", "list_files", `{}`, 5, "continue", false},
		{"embedded in prose", `I'll list files. {"action":"list_files","progress":"12%"} ok?`, "list_files", `{}`, 12, "continue", false},
		{"clamped high", `{"action":"x","progress":250}`, "x", `{}`, 100, "continue", false},
		{"clamped low", `{"action":"x","progress":-4}`, "x", `{}`, 0, "continue", false},
		{"float rounds", `{"action":"x","progress":33.6}`, "x", `{}`, 34, "continue", false},
		{"params as a string", `{"action":"read_file","params":"{\"path\":\"a\"}","progress":1}`, "read_file", `{"path":"a"}`, 1, "continue", false},
		{"done without action", `{"action":"none","progress":100,"status":"completed","summary":"all set"}`, "", `{}`, 100, "done", false},
		{"stuck synonym", `{"action":"","progress":10,"status":"blocked"}`, "", `{}`, 10, "stuck", false},
		{"empty", ``, "", "", 0, "", true},
		{"not json", `I think we should write the file next.`, "", "", 0, "", true},
		{"truncated", `{"action":"write_file","params":{"path":`, "", "", 0, "", true},
		{"no progress", `{"action":"x"}`, "", "", 0, "", true},
		{"progress not a number", `{"action":"x","progress":"lots"}`, "", "", 0, "", true},
		{"unknown status", `{"action":"x","progress":1,"status":"maybe"}`, "", "", 0, "", true},
		{"params an array", `{"action":"x","params":[1],"progress":1}`, "", "", 0, "", true},
		{"continue without action", `{"progress":20,"status":"continue"}`, "", "", 0, "", true},
		{"action not a string", `{"action":{"name":"x"},"progress":1}`, "", "", 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := tasks.ParseDecision(tt.in)
			if tt.bad {
				if !errors.Is(err, tasks.ErrBadDecision) {
					t.Fatalf("err = %v, want ErrBadDecision", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Action != tt.action || string(d.Params) != tt.params || d.Progress != tt.progress || d.Status != tt.status {
				t.Fatalf("got %+v (params %s)", d, d.Params)
			}
		})
	}
}

func FuzzParseDecision(f *testing.F) {
	for _, s := range []string{
		`{"thought":"t","action":"write_file","params":{"path":"a"},"progress":30,"status":"continue"}`,
		"```json\n{\"action\":\"x\",\"progress\":\"40%\"}\n```",
		`{"action":null,"progress":1e309,"status":"done"}`,
		`{"params":"{\"a\":1}","progress":-0,"action":"x"}`,
		`}{`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := tasks.ParseDecision(s)
		if err != nil {
			if !errors.Is(err, tasks.ErrBadDecision) {
				t.Fatalf("error %v is not ErrBadDecision", err)
			}
			return
		}
		if d.Progress < 0 || d.Progress > 100 {
			t.Fatalf("progress %d outside 0–100", d.Progress)
		}
		switch d.Status {
		case domain.VerdictContinue, domain.VerdictDone, domain.VerdictStuck:
		default:
			t.Fatalf("status %q", d.Status)
		}
		var obj map[string]any
		if err := json.Unmarshal(d.Params, &obj); err != nil || obj == nil {
			t.Fatalf("params %s is not an object", d.Params)
		}
		if d.Action == "" && d.Status == domain.VerdictContinue {
			t.Fatal("continue without an action")
		}
	})
}
