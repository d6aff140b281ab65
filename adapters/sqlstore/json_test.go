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
