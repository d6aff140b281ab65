package plugin_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/plugin"
)

// TestDecodeParamsCanonical: accepted parameters come back as the decoded
// value re-encoded — keys sorted, escapes undone, ">" "<" and "&" as they
// are, numbers as written — so what a person is shown is what the tool
// decodes, without \u003e standing in for ">".
func TestDecodeParamsCanonical(t *testing.T) {
	t.Parallel()
	info := plugin.ActionInfo{Name: "run_command", Parameters: json.RawMessage(
		`{"type":"object","additionalProperties":false,"properties":{"command":{"type":"string"},"n":{"type":"number"},"env":{"type":"object"}}}`)}
	for _, tt := range []struct{ in, want string }{
		{`{"command":"echo a \u003e b \u0026\u0026 echo \u003cc\u003e"}`, `{"command":"echo a > b && echo <c>"}`},
		{` { "n" : 1.50 , "command" : "x" } `, `{"command":"x","n":1.50}`},
		{`{"env":{"B":"2","A":"\u0041"}}`, `{"env":{"A":"A","B":"2"}}`},
		{``, `{}`},
		{`{"command":"line\nnext\t\"q\""}`, `{"command":"line\nnext\t\"q\""}`},
	} {
		got, err := info.DecodeParams(json.RawMessage(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("DecodeParams(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestDecodeParamsRefuses: what encoding/json would read otherwise than
// its text says (a key given twice, the last winning; a key in another
// case, folded onto the parameter) and fields the action does not take
// are refused, at any depth, each with one sentence: a person must never
// be asked about one call while another would run.
func TestDecodeParamsRefuses(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","additionalProperties":false,"required":["command"],"properties":{` +
		`"command":{"type":"string"},` +
		`"opts":{"type":"object","properties":{"mode":{"type":"string"}}},` +
		`"open":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true},` +
		`"list":{"type":"array","items":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string"}}}},` +
		`"free":{"type":"object"},` +
		`"either":{"anyOf":[{"type":"object","properties":{"x":{"type":"string"}}},{"type":"string"}]}}}`
	info := plugin.ActionInfo{Name: "t", Parameters: json.RawMessage(schema)}
	deep := strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70)
	for _, tt := range []struct{ name, in, says string }{
		{"repeated", `{"command":"a","command":"b"}`, `The key "command" is given twice`},
		{"repeated once escaped", `{"command":"a","\u0063ommand":"b"}`, `The key "command" is given twice`},
		{"case-folded", `{"command":"a","COMMAND":"b"}`, `The key "COMMAND" is spelled "command"; names are case-sensitive.`},
		{"case-folded alone", `{"Command":"a"}`, `The key "Command" is spelled "command"`},
		{"unknown", `{"command":"a","cwd":"/"}`, `There is no parameter "cwd"; it takes command, either, free, list, open, opts.`},
		{"nested repeated", `{"command":"a","opts":{"mode":"x","mode":"y"}}`, `The key "opts.mode" is given twice`},
		{"nested case-folded", `{"command":"a","opts":{"MODE":"y"}}`, `The key "opts.MODE" is spelled "opts.mode"`},
		{"nested unknown (closed by properties)", `{"command":"a","opts":{"force":true}}`, `There is no key "force" in "opts"; it takes mode.`},
		{"repeated in an array's object", `{"command":"a","list":[{"name":"x"},{"name":"x","name":"y"}]}`, `The key "list[1].name" is given twice`},
		{"unknown in an array's object", `{"command":"a","list":[{"nam":"x"}]}`, `There is no key "nam" in "list[0]"`},
		{"repeated in a free-form object", `{"command":"a","free":{"k":[{"z":1,"z":2}]}}`, `The key "free.k[0].z" is given twice`},
		{"case-folded where additional keys are allowed", `{"command":"a","open":{"A":"1"}}`, `The key "open.A" is spelled "open.a"`},
		{"repeated where additional keys are allowed", `{"command":"a","open":{"a":"1","a":"2"}}`, `The key "open.a" is given twice`},
		{"not an object", `["command"]`, `The parameters are not valid: they are not a JSON object.`},
		{"trailing data", `{"command":"a"} {"command":"b"}`, `something follows their JSON object`},
		{"not JSON", `{"command":}`, `The parameters are not valid JSON`},
		{"cut short", `{"command":"a"`, `they end too soon`},
		{"too deep", `{"free":` + deep + `}`, `nest more than 64 levels`},
	} {
		_, err := info.DecodeParams(json.RawMessage(tt.in))
		var pe *plugin.ParamsError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.says) || strings.Count(err.Error(), ". ") > 0 || !strings.HasSuffix(err.Error(), ".") {
			t.Errorf("%s: DecodeParams(%s) = %v; want one sentence saying %q", tt.name, tt.in, err, tt.says)
		}
	}
	// What the schema leaves open stays open: extra keys where additional
	// properties are allowed, in a free-form object, under a composed
	// schema.
	for _, in := range []string{
		`{"command":"a","open":{"b":"1"}}`,
		`{"command":"a","free":{"anything":{"Goes":1}}}`,
		`{"command":"a","either":{"y":1,"X":2}}`,
	} {
		if _, err := info.DecodeParams(json.RawMessage(in)); err != nil {
			t.Errorf("DecodeParams(%s) = %v; want it taken", in, err)
		}
	}
	// An action that declares no properties takes any keys, never one twice.
	free := plugin.ActionInfo{Name: "mcp.tool", Parameters: json.RawMessage(`{"type":"object"}`)}
	if _, err := free.DecodeParams(json.RawMessage(`{"Any":1,"any":2}`)); err != nil {
		t.Errorf("a free-form tool refused distinct keys: %v", err)
	}
	if _, err := free.DecodeParams(json.RawMessage(`{"a":1,"\u0061":2}`)); err == nil {
		t.Error("a free-form tool took a key given twice")
	}
	// One that declares an empty set of properties takes none.
	none := plugin.ActionInfo{Name: "list_tasks", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
	if _, err := none.DecodeParams(json.RawMessage(`{"x":1}`)); err == nil || !strings.Contains(err.Error(), "it takes none") {
		t.Errorf("DecodeParams of a field an action without parameters does not take = %v", err)
	}
}

type inner struct {
	Mode string `json:"mode"`
}

type Embedded struct {
	Shared string `json:"shared"`
}

type strictParams struct {
	Embedded
	Command string            `json:"command"`
	Limit   *int64            `json:"limit,omitempty"`
	Opts    *inner            `json:"opts"`
	List    []inner           `json:"list"`
	Env     map[string]string `json:"env"`
	Raw     json.RawMessage   `json:"raw"`
	Skip    string            `json:"-"`
	Plain   string
}

// TestDecodeStrict: a chat command's or tool's Go parameters are decoded
// as strictly as DecodeParams reads a schema, the field names being the
// struct's JSON names (embedded structs' promoted); what a map, a
// json.RawMessage or an interface takes stays open.
func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	var p strictParams
	in := `{"command":"a > b","limit":5,"opts":{"mode":"m"},"list":[{"mode":"x"}],"env":{"K":"v","k":"w"},"raw":{"Z":1,"z":2},"shared":"s","Plain":"p"}`
	if err := plugin.DecodeStrict(json.RawMessage(in), &p); err != nil {
		t.Fatal(err)
	}
	if p.Command != "a > b" || *p.Limit != 5 || p.Opts.Mode != "m" || p.List[0].Mode != "x" || p.Env["k"] != "w" || p.Shared != "s" || p.Plain != "p" || string(p.Raw) != `{"Z":1,"z":2}` {
		t.Fatalf("decoded %+v", p)
	}
	for _, tt := range []struct{ in, says string }{
		{`{"command":"a","COMMAND":"b"}`, `"COMMAND" is spelled "command"`},
		{`{"command":"a","\u0063ommand":"b"}`, `"command" is given twice`},
		{`{"command":"a","skip":"x"}`, `There is no parameter "skip"`},
		{`{"Skip":"x"}`, `There is no parameter "Skip"`},
		{`{"plain":"p"}`, `"plain" is spelled "Plain"`},
		{`{"opts":{"Mode":"m"}}`, `"opts.Mode" is spelled "opts.mode"`},
		{`{"list":[{"mode":"x","extra":1}]}`, `There is no key "extra" in "list[0]"`},
		{`{"SHARED":"s"}`, `"SHARED" is spelled "shared"`},
		{`{"raw":{"a":1,"a":2}}`, `"raw.a" is given twice`},
		{`{"limit":"five"}`, `The parameters are not valid: json: cannot unmarshal`},
	} {
		var p strictParams
		err := plugin.DecodeStrict(json.RawMessage(tt.in), &p)
		if err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("DecodeStrict(%s) = %v; want it refused saying %q", tt.in, err, tt.says)
		}
	}
}
