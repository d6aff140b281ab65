package domain

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// idList lists events with the given IDs, in order: a stream with the
// gaps a sequence leaves.
type idList struct {
	ids   []int64
	reads int
	fail  bool
}

func (l *idList) EventsSince(_ context.Context, after int64, limit int) ([]TaskEvent, error) {
	l.reads++
	if l.fail {
		return nil, errors.New("store down")
	}
	i, _ := slices.BinarySearch(l.ids, after+1)
	var out []TaskEvent
	for ; i < len(l.ids) && (limit == 0 || len(out) < limit); i++ {
		out = append(out, TaskEvent{ID: l.ids[i]})
	}
	return out, nil
}

// TestLatestEventID: the search finds the latest ID from any starting
// point, across gaps of every size, in a few reads.
func TestLatestEventID(t *testing.T) {
	ctx := context.Background()
	var big []int64
	for id := int64(1); id < 5_000_000; id += 1 + id/3 {
		big = append(big, id)
	}
	for _, tc := range []struct {
		name string
		ids  []int64
	}{
		{"none", nil},
		{"one", []int64{7}},
		{"dense", []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"a gap of a thousand at the end", []int64{1, 2, 3, 1003}},
		{"gaps growing to millions", big},
	} {
		l := &idList{ids: tc.ids}
		var want int64
		if len(tc.ids) > 0 {
			want = tc.ids[len(tc.ids)-1]
		}
		starts := []int64{0}
		if len(tc.ids) > 0 {
			starts = append(starts, tc.ids[0], tc.ids[len(tc.ids)/2], want)
		}
		for _, from := range starts {
			l.reads = 0
			got, err := LatestEventID(ctx, l, from)
			if err != nil || got != want {
				t.Errorf("%s from %d: %d, %v; want %d", tc.name, from, got, err, want)
			}
			if l.reads > 80 {
				t.Errorf("%s from %d: %d reads", tc.name, from, l.reads)
			}
		}
	}
	if _, err := LatestEventID(ctx, &idList{ids: []int64{1}, fail: true}, 0); err == nil {
		t.Error("a store error was not returned")
	}
}
