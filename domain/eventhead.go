package domain

import "context"

// EventLister is the part of a Store that lists every task's events in ID
// order.
type EventLister interface {
	EventsSince(ctx context.Context, after int64, limit int) ([]TaskEvent, error)
}

// LatestEventID finds the ID of the latest event, where a reader of the
// event stream that wants only what comes next starts; 0 when there is
// none. from is an ID known to exist (the latest one seen), or 0. The
// store can only list events after an ID, so it gallops up from from and
// then bisects: O(log n) indexed reads of one row, usually one.
func LatestEventID(ctx context.Context, s EventLister, from int64) (int64, error) {
	first := func(after int64) (int64, bool, error) {
		evs, err := s.EventsSince(ctx, after, 1)
		if err != nil || len(evs) == 0 {
			return 0, false, err
		}
		return evs[0].ID, true, nil
	}
	lo := from      // an event ID that exists, or 0
	hi := int64(-1) // no event is above hi; -1: not known yet
	for step := int64(64); hi < 0; step *= 2 {
		id, ok, err := first(lo)
		if err != nil {
			return 0, err
		}
		if !ok {
			return lo, nil
		}
		lo = id
		id, ok, err = first(lo + step)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = id
		} else {
			hi = lo + step
		}
	}
	// The latest ID is in [lo, hi] and lo exists.
	for lo < hi {
		mid := lo + (hi-lo)/2
		id, ok, err := first(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = id
		} else {
			hi = mid
		}
	}
	return lo, nil
}
