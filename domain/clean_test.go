package domain_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/taskloom/taskloom/domain"
)

func TestCleanText(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"plain":          "plain",
		"nul\x00byte":    "nul\uFFFDbyte",
		"bad \xff\xfe":   "bad \uFFFD\uFFFD",
		"émoji 🧵 fine":   "émoji 🧵 fine",
		"\xe2\x82 trunc": "\uFFFD\uFFFD trunc",
	}
	for in, want := range tests {
		if got := domain.CleanText(in); got != want {
			t.Errorf("CleanText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCleanJSON(t *testing.T) {
	t.Parallel()
	got, err := domain.CleanJSON(json.RawMessage(`{"a":"x\u0000y","b":[1,"\u0000"]}`))
	if err != nil || string(got) != `{"a":"x`+"\uFFFD"+`y","b":[1,"`+"\uFFFD"+`"]}` {
		t.Fatalf("got %s, %v", got, err)
	}
	if _, err := domain.CleanJSON(json.RawMessage("{\"a\":\"\xff\"")); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("broken JSON: %v", err)
	}
}

func TestCheckMutationRefusesBadMutations(t *testing.T) {
	t.Parallel()
	cur := domain.Task{Number: 3, Status: domain.StatusQueued, EventSeq: 2}
	good, err := domain.Paused(cur, "u", t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := domain.CheckMutation(cur, good); err != nil {
		t.Fatalf("a good mutation was refused: %v", err)
	}
	skip := good
	skip.Event.Sequence, skip.Task.EventSeq = 4, 4
	other := good
	other.Task.Number = 4
	ended := domain.Task{Number: 3, Status: domain.StatusCompleted, EventSeq: 2}
	changed, _ := domain.Change(ended, domain.Task{Number: 3, Status: domain.StatusQueued, EventSeq: 2}, "hack", "u", t0, nil)
	for name, m := range map[string]struct {
		cur domain.Task
		m   domain.Mutation
	}{"skipped sequence": {cur, skip}, "other task": {cur, other}, "ended task changed": {ended, changed}} {
		if err := domain.CheckMutation(m.cur, m.m); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
