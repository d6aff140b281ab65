package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
)

// sameJSON says whether a and b are the same JSON value, however each is
// spaced, escaped and its objects' keys ordered. Objects are split into
// their members without decoding them, and compared member by member, so
// that the values that are the same bytes on both sides — most of them —
// are never decoded; the others are.
func sameJSON(a, b []byte) (bool, error) {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if bytes.Equal(a, b) {
		return true, nil
	}
	if ma, ok := jsonMembers(a); ok {
		if mb, ok := jsonMembers(b); ok {
			if len(ma) != len(mb) {
				return false, nil
			}
			for _, x := range ma {
				i := slices.IndexFunc(mb, func(y jsonMember) bool { return string(y.key) == string(x.key) })
				if i < 0 {
					return false, nil
				}
				if same, err := sameJSON(x.value, mb[i].value); err != nil || !same {
					return false, err
				}
			}
			return true, nil
		}
	}
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		return false, fmt.Errorf("payload: %w", err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		return false, fmt.Errorf("payload written: %w", err)
	}
	return reflect.DeepEqual(va, vb), nil
}

// jsonMember is a member of a JSON object: its key as written (between
// the quotes) and its value's text.
type jsonMember struct{ key, value []byte }

// jsonMembers splits the text of a JSON object into its members, without
// checking the values beyond finding where each ends. It says false for
// anything else, and for an object with a key that has an escape in it
// (which the caller then decodes).
func jsonMembers(b []byte) ([]jsonMember, bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	var out []jsonMember
	i := skipSpace(b, 1)
	if b[i] == '}' {
		return out, i == len(b)-1
	}
	for {
		if b[i] != '"' {
			return nil, false
		}
		end := stringEnd(b, i)
		if end < 0 || bytes.IndexByte(b[i+1:end], '\\') >= 0 {
			return nil, false
		}
		key := b[i+1 : end]
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		v := valueEnd(b, i)
		if v < 0 {
			return nil, false
		}
		out = append(out, jsonMember{key, b[i:v]})
		i = skipSpace(b, v)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case '}':
			return out, i == len(b)-1
		case ',':
			i = skipSpace(b, i+1)
		default:
			return nil, false
		}
	}
}

// skipSpace returns the index of the first byte of b from i on that is
// not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index of the quote that ends the string that
// starts at b[i], or -1.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

// valueEnd returns the index just after the value that starts at b[i], or
// -1: a string, an object or array (its brackets matched, strings in it
// skipped), or a number or literal.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		if e := stringEnd(b, i); e >= 0 {
			return e + 1
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j = stringEnd(b, j); j < 0 {
					return -1
				}
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
