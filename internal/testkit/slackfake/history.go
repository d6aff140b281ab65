package slackfake

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// History limits, as Slack documents them for conversations.history and
// conversations.replies.
const (
	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 999
)

// historyLocked answers conversations.history: a channel's top-level
// messages (not thread replies) newest first, between oldest and latest
// (exclusive unless inclusive), limit a page, with a cursor to the next
// page. Metadata is returned only with include_all_metadata. The fake knows
// only the app's own posts, so those are the history.
func (s *Server) historyLocked(p url.Values) apiResult {
	channel := p.Get("channel")
	if channel == "" {
		return fail("channel_not_found")
	}
	var msgs []*Message
	for _, m := range s.messages {
		if m.Kind == KindPost && m.Channel == channel && m.ThreadTS == "" && !m.Deleted {
			msgs = append(msgs, m)
		}
	}
	slices.Reverse(msgs) // newest first
	return s.pageLocked(p, msgs, nil)
}

// repliesLocked answers conversations.replies: the thread's parent first
// (when the fake knows it: it is one of the app's posts), then its replies
// oldest first, the replies filtered by oldest and latest, a page at a
// time. A thread the fake has no message of answers no messages: its
// parent may be someone else's message, which the fake does not keep.
func (s *Server) repliesLocked(p url.Values) apiResult {
	channel, ts := p.Get("channel"), p.Get("ts")
	switch {
	case channel == "":
		return fail("channel_not_found")
	case ts == "":
		return fail("invalid_arguments")
	}
	var parent *Message
	var replies []*Message
	for _, m := range s.messages {
		if m.Kind != KindPost || m.Channel != channel || m.Deleted {
			continue
		}
		switch {
		case m.TS == ts && m.ThreadTS == "":
			parent = m
		case m.ThreadTS == ts:
			replies = append(replies, m)
		}
	}
	return s.pageLocked(p, replies, parent)
}

// pageLocked filters msgs by oldest, latest and inclusive, and returns the
// page the cursor and limit select, after first when it is set.
func (s *Server) pageLocked(p url.Values, msgs []*Message, first *Message) apiResult {
	limit := DefaultHistoryLimit
	if l := p.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return fail("invalid_limit")
		}
		if n > 0 {
			limit = min(n, MaxHistoryLimit)
		}
	}
	inclusive := truthy(p.Get("inclusive"))
	oldest, latest := p.Get("oldest"), p.Get("latest")
	var kept []*Message
	for _, m := range msgs {
		if oldest != "" && (compareTS(m.TS, oldest) < 0 || (!inclusive && compareTS(m.TS, oldest) == 0)) {
			continue
		}
		if latest != "" && (compareTS(m.TS, latest) > 0 || (!inclusive && compareTS(m.TS, latest) == 0)) {
			continue
		}
		kept = append(kept, m)
	}
	start := 0
	if c := p.Get("cursor"); c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		next, found := strings.CutPrefix(string(raw), "next_ts:")
		if err != nil || !found {
			return fail("invalid_cursor")
		}
		start = slices.IndexFunc(kept, func(m *Message) bool { return m.TS == next })
		if start < 0 {
			return fail("invalid_cursor")
		}
	}
	withMetadata := truthy(p.Get("include_all_metadata"))
	out := []any{}
	if first != nil && start == 0 {
		out = append(out, s.wireMessage(first, withMetadata))
	}
	end := min(start+limit, len(kept))
	for _, m := range kept[start:end] {
		out = append(out, s.wireMessage(m, withMetadata))
	}
	cursor := ""
	if end < len(kept) {
		cursor = base64.StdEncoding.EncodeToString([]byte("next_ts:" + kept[end].TS))
	}
	return ok(map[string]any{
		"messages": out, "has_more": cursor != "", "pin_count": 0,
		"response_metadata": map[string]any{"next_cursor": cursor},
	})
}

// compareTS orders two message timestamps ("seconds.micros").
func compareTS(a, b string) int {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	ai, _ := strconv.ParseInt(as, 10, 64)
	bi, _ := strconv.ParseInt(bs, 10, 64)
	if ai != bi {
		if ai < bi {
			return -1
		}
		return 1
	}
	af = (af + "000000")[:6]
	bf = (bf + "000000")[:6]
	return strings.Compare(af, bf)
}

// truthy reads a boolean parameter as Slack does: "1" or "true".
func truthy(v string) bool { return v == "1" || v == "true" }
