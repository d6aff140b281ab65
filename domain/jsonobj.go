package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrNoJSON is returned when a model's reply holds no JSON object.
var ErrNoJSON = errors.New("no JSON object in the reply")

// DecodeJSONObject decodes the JSON object in a model's reply into v. It
// takes the reply as is, inside a ``` fence, or embedded in prose (the
// first balanced {...} that decodes). It never panics on any input.
func DecodeJSONObject(text string, v any) error {
	s := strings.TrimSpace(text)
	if s == "" {
		return fmt.Errorf("%w: the reply is empty", ErrNoJSON)
	}
	if err := json.Unmarshal([]byte(s), v); err == nil {
		return nil
	}
	if i := strings.Index(s, "```"); i >= 0 {
		rest := s[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 && !strings.HasPrefix(strings.TrimSpace(rest[:nl]), "{") {
			rest = rest[nl+1:] // drop the language tag
		}
		if j := strings.Index(rest, "```"); j >= 0 {
			if err := json.Unmarshal([]byte(strings.TrimSpace(rest[:j])), v); err == nil {
				return nil
			}
		}
	}
	var lastErr error
	for start := strings.IndexByte(s, '{'); start >= 0; {
		if end := matchBrace(s, start); end > start {
			err := json.Unmarshal([]byte(s[start:end+1]), v)
			if err == nil {
				return nil
			}
			lastErr = err
		}
		next := strings.IndexByte(s[start+1:], '{')
		if next < 0 {
			break
		}
		start += 1 + next
	}
	if lastErr != nil {
		return fmt.Errorf("%w: %v", ErrNoJSON, lastErr)
	}
	return ErrNoJSON
}

// matchBrace returns the index of the brace closing the one at start,
// skipping strings, or -1.
func matchBrace(s string, start int) int {
	depth, inStr, esc := 0, false, false
	for i := start; i < len(s); i++ {
		c := s[i]
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}
