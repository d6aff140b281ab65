package sqlstore

import "testing"

// TestSameJSON: the claim's check compares the payload PostgreSQL built
// (jsonb: its own spacing, key order and escapes) with encoding/json's.
func TestSameJSON(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`{"changes":{"fence":2,"lease_owner":"w1"}}`, `{"changes": {"fence": 2, "lease_owner": "w1"}}`, true},
		{`{"changes":{"fence":2,"lease_owner":"w1"}}`, `{"changes": {"lease_owner": "w1", "fence": 2}}`, true},
		{`{"changes":{"lease_owner":"a\u003cb"}}`, `{"changes": {"lease_owner": "a<b"}}`, true},
		{`{"changes":{"fence":2.0}}`, `{"changes": {"fence": 2}}`, true},
		{`{"a":[1,2]}`, `{"a": [1, 2]}`, true},
		{`{"changes":{"fence":2}}`, `{"changes": {"fence": 3}}`, false},
		{`{"changes":{"fence":2}}`, `{"changes": {"fence": 2, "status": "running"}}`, false},
		{`{"changes":{"fence":2,"x":1}}`, `{"changes": {"fence": 2, "y": 1}}`, false},
		{`{"changes":{"lease_owner":"w1"}}`, `{"changes": {"lease_owner": "w2"}}`, false},
		{`{"a":[1,2]}`, `{"a": [2, 1]}`, false},
		{`{"a":{}}`, `{"a": null}`, false},
		{`{"s":"a\"}b","t":"[{"}`, `{"t": "[{", "s": "a\"}b"}`, true},
		{`{"s":"a\"}b"}`, `{"s": "a\"}c"}`, false},
		{`{"a":[{"b":"]"},2]}`, `{"a": [{"b": "]"}, 2]}`, true},
		{`{"a":[{"b":"]"},2]}`, `{"a": [{"b": "["}, 2]}`, false},
		{`{"k\u0065y":1}`, `{"key": 1}`, true},
		{`{"a":1,"b":2}`, `{"a": 1}`, false},
		{`{}`, `{ }`, true},
		{` {"a" : true} `, `{"a": true}`, true},
		{`{"a":true}`, `{"a": false}`, false},
		{`[1,{"a":2}]`, `[1, {"a": 2}]`, true},
	} {
		same, err := sameJSON([]byte(c.a), []byte(c.b))
		if err != nil || same != c.same {
			t.Errorf("sameJSON(%s, %s) = %v, %v; want %v", c.a, c.b, same, err, c.same)
		}
	}
	if _, err := sameJSON([]byte(`{"a":1}`), []byte(`{"a": `)); err == nil {
		t.Error("sameJSON of a cut payload: no error")
	}
}

// TestJSONMembers: the split sameJSON compares without decoding finds
// each member whole, strings with escaped quotes and brackets in them
// included.
func TestJSONMembers(t *testing.T) {
	got, ok := jsonMembers([]byte(`{"a": "x\"}y", "b":[{"c":"]"},2] , "d":{"e":1},"f":-1.5e3,"g":null}`))
	want := []string{`a="x\"}y"`, `b=[{"c":"]"},2]`, `d={"e":1}`, `f=-1.5e3`, `g=null`}
	if !ok || len(got) != len(want) {
		t.Fatalf("jsonMembers = %d members, %v; want %d", len(got), ok, len(want))
	}
	for i, m := range got {
		if s := string(m.key) + "=" + string(m.value); s != want[i] {
			t.Errorf("member %d = %s, want %s", i, s, want[i])
		}
	}
	for _, bad := range []string{`{"a":1`, `{"a" 1}`, `{"k\u0065y":1}`, `[1]`, `{"a":1,}`, `{"a":"1}`} {
		if _, ok := jsonMembers([]byte(bad)); ok {
			t.Errorf("jsonMembers(%s) split it", bad)
		}
	}
}
