package domain

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestDigestCodec: String writes what encoding/json writes, and
// ParseDigest reads any column as json.Unmarshal does — what String
// writes through its own reader, anything else through encoding/json.
func TestDigestCodec(t *testing.T) {
	digests := []Digest{
		{},
		{Steps: 3},
		{Steps: 2, Actions: map[string]ActionCount{"": {Runs: 1}, "write_file": {Runs: 1, Succeeded: 1}}},
		{Steps: 1, Actions: map[string]ActionCount{`a"b\c`: {Runs: 1}, "<b>&": {Runs: 2, Succeeded: 1}, "é": {Runs: 1}, "tab\t": {Runs: 1}}},
		{Steps: 0, Answers: []int64{4, 9, 1 << 40}},
		{Steps: -1, Actions: map[string]ActionCount{"x": {Runs: -2, Succeeded: 0}}, Answers: []int64{-3}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"post_message", "write_file", "read_file", "list_files", "http_get", "ask_user", "", "run_command"}
	for range 200 {
		d := Digest{Steps: rng.IntN(1000)}
		for range rng.IntN(5) {
			if d.Actions == nil {
				d.Actions = map[string]ActionCount{}
			}
			d.Actions[names[rng.IntN(len(names))]] = ActionCount{Runs: rng.IntN(100), Succeeded: rng.IntN(100)}
		}
		for range rng.IntN(DigestAnswers + 1) {
			d.Answers = append(d.Answers, rng.Int64N(1<<50))
		}
		digests = append(digests, d)
	}
	for _, d := range digests {
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.String(); got != string(want) {
			t.Fatalf("String() = %s, want %s", got, want)
		}
		sameAsJSON(t, d.String())
	}
	// What String never writes is read as encoding/json reads it.
	for _, s := range []string{
		`{"steps":3,"actions":{"a":{"runs":1,"ok":1}}}`,
		`{"steps": 3}`,
		`{"actions":{"a":{"runs":1,"ok":1}},"steps":3}`,
		`{"steps":03}`,
		`{"steps":-0}`,
		`{"steps":99999999999999999999}`,
		`{"steps":3,"actions":{"a\u0062":{"runs":1,"ok":1}}}`,
		`{"steps":3,"actions":{}}`,
		`{"steps":3,"answers":[]}`,
		`{"steps":3,"answers":[1,]}`,
		`{"steps":3,"actions":{"a":{"runs":1,"ok":1},}}`,
		`{"steps":3,"actions":{"a":{"runs":1,"ok":1},"a":{"runs":2,"ok":0}}}`,
		`{"steps":3}x`,
		`{"steps":3`,
		`{"steps":1.5}`,
		`{"steps":3,"other":1}`,
		`null`,
		`not json`,
		"{\"steps\":3,\"actions\":{\"\xff\":{\"runs\":1,\"ok\":1}}}",
	} {
		sameAsJSON(t, s)
	}
}

// sameAsJSON checks ParseDigest(s) against json.Unmarshal.
func sameAsJSON(t *testing.T, s string) {
	t.Helper()
	var want Digest
	wantOK := json.Unmarshal([]byte(s), &want) == nil
	if !wantOK {
		want = Digest{}
	}
	got, ok := ParseDigest(s)
	if ok != wantOK || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseDigest(%s) = %s, %v; json.Unmarshal gives %s, %v", s, show(got), ok, show(want), wantOK)
	}
}

func show(d Digest) string {
	return fmt.Sprintf("%+v (actions nil %v, answers nil %v)", d, d.Actions == nil, d.Answers == nil)
}
