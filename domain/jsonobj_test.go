package domain_test

import (
	"errors"
	"testing"

	"github.com/taskloom/taskloom/domain"
)

func TestDecodeJSONObject(t *testing.T) {
	t.Parallel()
	type v struct {
		A int `json:"a"`
	}
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{`{"a":1}`, 1, true},
		{"  {\"a\":2}\n", 2, true},
		{"```json\n{\"a\":3}\n```", 3, true},
		{"```\n{\"a\":4}\n```", 4, true},
		{"Here you go: {\"a\":5} hope that helps", 5, true},
		{`prose {not json} then {"a":6}`, 6, true},
		{`{"s":"}{","a":7}`, 7, true},
		{``, 0, false},
		{`no json here`, 0, false},
		{`{"a":`, 0, false},
		{`[1,2]`, 0, false},
	}
	for _, tt := range tests {
		var got v
		err := domain.DecodeJSONObject(tt.in, &got)
		if tt.ok && (err != nil || got.A != tt.want) {
			t.Errorf("%q: got %+v, %v", tt.in, got, err)
		}
		if !tt.ok && !errors.Is(err, domain.ErrNoJSON) {
			t.Errorf("%q: err = %v, want ErrNoJSON", tt.in, err)
		}
	}
}

func FuzzDecodeJSONObject(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{}\n```", `x{"a":{"b":"}"}}y`, `{{{{`, `"\"{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		_ = domain.DecodeJSONObject(s, &m) // must not panic or hang
	})
}
