package openai

import (
	"os"
	"syscall"
	"testing"

	"github.com/taskloom/taskloom/plugin"
)

func TestToolsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"Ollama", apiError(400, `{"error":{"message":"registry.ollama.ai/library/gemma3:4b does not support tools","type":"api_error","param":null,"code":null}}`), true},
		{"Ollama, native error body", requestError(400, `{"error":"registry.ollama.ai/library/llama2:13b does not support tools"}`), true},
		{"OpenAI, unsupported parameter", apiError(400, `{"error":{"message":"Unsupported parameter: 'tools' is not supported with this model.","type":"invalid_request_error","param":"tools","code":"unsupported_parameter"}}`), true},
		{"param alone", apiError(400, `{"error":{"message":"Unrecognized request argument supplied: tools","type":"invalid_request_error","param":"tools","code":null}}`), true},
		{"vLLM without tool parsing", requestError(400, `{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}`), true},
		{"llama.cpp without --jinja", requestError(500, `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`), true},
		{"wrapped as Generate wraps it", (&Model{model: "m"}).failure(400, apiError(400, `{"error":{"message":"qwen does not support tools","type":"api_error"}}`), 1), true},
		{"a bad function name is our request's fault", apiError(400, `{"error":{"message":"Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.","type":"invalid_request_error","param":"tools[0].function.name","code":"invalid_value"}}`), false},
		{"a 400 about the messages", apiError(400, `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`), false},
		{"401", apiError(401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`), false},
		{"503", requestError(503, `tools are down`), false},
		{"network error", dialError(os.NewSyscallError("connect", syscall.ECONNREFUSED)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := toolsRefused(tt.err); got != tt.want {
				t.Errorf("toolsRefused(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestToolNames: every action gets a function name the API takes, no two
// the same, and each maps back to its action.
func TestToolNames(t *testing.T) {
	t.Parallel()
	long := "server.a_very_long_tool_name_that_goes_on_and_on_past_the_limit_of_the_api"
	actions := []string{"write_file", "everything.get-env", "everything__get-env", "a.b.c", "weird name/ü", long, ""}
	var specs []plugin.ToolSpec
	for _, a := range actions {
		specs = append(specs, plugin.ToolSpec{Name: a})
	}
	n := newToolNames(specs)
	seen := map[string]bool{}
	for _, a := range actions {
		w := n.toWire(a)
		if len(w) == 0 || len(w) > maxToolName {
			t.Errorf("%q → %q: length %d", a, w, len(w))
		}
		for _, r := range w {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				t.Errorf("%q → %q holds %q", a, w, r)
			}
		}
		if seen[w] {
			t.Errorf("%q → %q, a name already given", a, w)
		}
		seen[w] = true
		if back := n.toAction(w); back != a {
			t.Errorf("%q → %q → %q", a, w, back)
		}
	}
	if w := n.toWire("write_file"); w != "write_file" {
		t.Errorf("a valid name changed: %q", w)
	}
	if w := n.toWire("everything.get-env"); w != "everything__get-env" {
		t.Errorf("everything.get-env → %q, want everything__get-env", w)
	}
	if a := n.toAction("made_up"); a != "made_up" {
		t.Errorf("an unknown name maps to %q, want it as is", a)
	}
}
