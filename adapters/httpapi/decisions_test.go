package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// call is one request of a table that runs in order: each sees what the
// ones before it did.
type call struct {
	name   string
	method string
	path   string
	body   string
	header []string
	code   int
	check  func(t *testing.T, r response)
}

// play sends each call over a real connection and checks its answer.
func (f *fixture) play(t *testing.T, calls []call) {
	t.Helper()
	for _, c := range calls {
		r := f.net(c.method, c.path, c.body, c.header...)
		if r.code != c.code {
			t.Errorf("%s: %s %s %s = %d, want %d: %s", c.name, c.method, c.path, c.body, r.code, c.code, r.raw)
			continue
		}
		if c.code >= 400 {
			if msg, _ := r.body["error"].(string); msg == "" {
				t.Errorf("%s: error body = %q, want {\"error\": \"...\"}", c.name, r.raw)
			}
		}
		if c.check != nil {
			t.Run(c.name, func(t *testing.T) { c.check(t, r) })
		}
	}
}

// task reads task n from the store.
func (f *fixture) task(n int64) domain.Task {
	f.t.Helper()
	t, err := f.store.GetTask(f.ctx, n)
	if err != nil {
		f.t.Fatalf("task #%d: %v", n, err)
	}
	return t
}

// unchanged fails unless task n is as it was: same event count (nothing
// was written) and same status and wait.
func (f *fixture) unchanged(t *testing.T, before domain.Task) {
	t.Helper()
	after := f.task(before.Number)
	if after.EventSeq != before.EventSeq || after.Status != before.Status || after.WaitingOn != before.WaitingOn ||
		after.ApprovalGranted != before.ApprovalGranted {
		t.Errorf("task #%d changed: %s on %q (event %d) → %s on %q (event %d)", before.Number,
			before.Status, before.WaitingOn, before.EventSeq, after.Status, after.WaitingOn, after.EventSeq)
	}
}

// lastEvent is the newest event of task n.
func (f *fixture) lastEvent(n int64) domain.TaskEvent {
	f.t.Helper()
	evs, err := f.store.TaskEvents(f.ctx, n, 0)
	if err != nil || len(evs) == 0 {
		f.t.Fatalf("events of #%d: %v %v", n, evs, err)
	}
	return evs[len(evs)-1]
}

// sameCount fails unless the store holds want tasks: a refused request
// created nothing.
func sameCount(f *fixture, want int) func(t *testing.T, r response) {
	return func(t *testing.T, r response) {
		t.Helper()
		if n := f.count(); n != want {
			t.Errorf("the store holds %d tasks after a refused request, want %d", n, want)
		}
	}
}

func both(checks ...func(t *testing.T, r response)) func(t *testing.T, r response) {
	return func(t *testing.T, r response) {
		t.Helper()
		for _, c := range checks {
			c(t, r)
		}
	}
}

// TestCreateWithATokenBudget: max_tokens is a whole number of at least 0
// (0 is no limit); absent or null, the service's default applies. Anything
// else is a 400 naming max_tokens, and nothing is created.
func TestCreateWithATokenBudget(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		budget := func(want float64) func(t *testing.T, r response) {
			return func(t *testing.T, r response) {
				if r.body["max_tokens"] != want {
					t.Errorf("max_tokens = %v, want %v", r.body["max_tokens"], want)
				}
				n := int64(r.body["number"].(float64))
				if got := f.task(n).MaxTokens; got != int64(want) {
					t.Errorf("stored max_tokens = %d, want %v", got, want)
				}
			}
		}
		f.play(t, []call{
			{name: "absent: the default", method: "POST", path: "/api/tasks", body: `{"goal": "g"}`, code: 201, check: budget(defaultBudget)},
			{name: "null: the default", method: "POST", path: "/api/tasks", body: `{"goal": "g", "max_tokens": null}`, code: 201, check: budget(defaultBudget)},
			{name: "0: no limit", method: "POST", path: "/api/tasks", body: `{"goal": "g", "max_tokens": 0}`, code: 201, check: budget(0)},
			{name: "a budget", method: "POST", path: "/api/tasks", body: `{"goal": "g", "max_tokens": 5000}`, code: 201, check: budget(5000)},
			{name: "negative", method: "POST", path: "/api/tasks", body: `{"goal": "g", "max_tokens": -1}`, code: 400,
				check: both(wantError("max_tokens"), sameCount(f, 4))},
			{name: "not a number", method: "POST", path: "/api/tasks", body: `{"goal": "g", "max_tokens": "a lot"}`, code: 400,
				check: both(wantError("max_tokens"), sameCount(f, 4))},
			{name: "not whole", method: "POST", path: "/api/tasks", body: `{"goal": "g", "max_tokens": 1.5}`, code: 400,
				check: both(wantError("max_tokens"), sameCount(f, 4))},
		})
	})
}

// TestAnswer: a task waiting on an answer goes on with it; anything else
// is refused and changes nothing.
func TestAnswer(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := tokenFixture(t, open)
		f.model.Decide("ask_user", map[string]string{"question": "Which database should the service use?"}, 10, "continue")
		f.create("Pick a database for the service")
		f.step() // #1 asks and waits
		f.create("Write the changelog")
		waiting, queued := f.task(1), f.task(2)
		if waiting.Status != domain.StatusWaiting || waiting.WaitingOn != domain.WaitAnswer {
			t.Fatalf("#1 is %s on %q; want waiting on an answer", waiting.Status, waiting.WaitingOn)
		}
		still := func(t *testing.T, r response) { f.unchanged(t, waiting) }
		f.play(t, []call{
			{name: "the task says what it waits on", method: "GET", path: "/api/tasks/1", code: 200, check: func(t *testing.T, r response) {
				if r.body["status"] != "waiting" || r.body["waiting_on"] != "answer" || r.body["approval"] != nil {
					t.Errorf("task = %v", r.body)
				}
			}},
			{name: "a task waiting on nothing", method: "POST", path: "/api/tasks/2/answer", body: `{"text": "PostgreSQL"}`, code: 409,
				check: both(wantError("not waiting for an answer"), func(t *testing.T, r response) { f.unchanged(t, queued) })},
			{name: "no text", method: "POST", path: "/api/tasks/1/answer", body: `{}`, code: 400, check: both(wantError(`"text"`), still)},
			{name: "no body", method: "POST", path: "/api/tasks/1/answer", code: 400, check: still},
			{name: "an empty text", method: "POST", path: "/api/tasks/1/answer", body: `{"text": " \n "}`, code: 400, check: both(wantError("empty"), still)},
			{name: "a text too long", method: "POST", path: "/api/tasks/1/answer", body: `{"text": "` + strings.Repeat("é", 4001) + `"}`, code: 400,
				check: both(wantError("4001 characters"), still)},
			{name: "a text that is a number", method: "POST", path: "/api/tasks/1/answer", body: `{"text": 42}`, code: 400, check: still},
			{name: "an unknown field", method: "POST", path: "/api/tasks/1/answer", body: `{"text": "x", "urgent": true}`, code: 400, check: still},
			{name: "an unknown task", method: "POST", path: "/api/tasks/99/answer", body: `{"text": "x"}`, code: 404, check: wantError("there is no task #99")},
			{name: "not a task number", method: "POST", path: "/api/tasks/x/answer", body: `{"text": "x"}`, code: 400},
			{name: "the answer", method: "POST", path: "/api/tasks/1/answer", body: `{"text": "  PostgreSQL, please "}`,
				header: []string{httpapi.RequestorHeader, "alice"}, code: 200, check: func(t *testing.T, r response) {
					if r.body["status"] != "queued" || r.body["waiting_on"] != "" {
						t.Errorf("task = %v", r.body)
					}
					ev := f.lastEvent(1)
					var p domain.EventPayload
					_ = json.Unmarshal(ev.Payload, &p)
					if ev.Type != domain.EventAnswered || ev.Actor != "api:alice" || p.Detail["answer"] != "PostgreSQL, please" {
						t.Errorf("event = %s by %s: %s", ev.Type, ev.Actor, ev.Payload)
					}
				}},
			{name: "answered already", method: "POST", path: "/api/tasks/1/answer", body: `{"text": "MySQL"}`, code: 409},
		})
	})
}

// TestRetry: an ended task is continued by a new one; a task that has not
// ended, or a requestor past their limit, is refused and nothing is
// created.
func TestRetry(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := tokenFixture(t, open)
		r := f.net("POST", "/api/tasks", `{"goal": "Build the auth pages", "name": "Auth pages", "room": "discord:123", "max_iterations": 7}`)
		if r.code != 201 {
			t.Fatalf("create = %d %s", r.code, r.raw)
		}
		f.play(t, []call{
			{name: "a live task", method: "POST", path: "/api/tasks/1/retry", body: `{}`, code: 409,
				check: both(wantError("has not ended"), sameCount(f, 1))},
			{name: "cancel it", method: "POST", path: "/api/tasks/1/cancel", code: 200},
			{name: "a context too long", method: "POST", path: "/api/tasks/1/retry", body: `{"context": "` + strings.Repeat("c", 4001) + `"}`, code: 400,
				check: both(wantError("context"), sameCount(f, 1))},
			{name: "a context that is not text", method: "POST", path: "/api/tasks/1/retry", body: `{"context": ["x"]}`, code: 400, check: sameCount(f, 1)},
			{name: "an unknown task", method: "POST", path: "/api/tasks/99/retry", code: 404, check: both(wantError("there is no task #99"), sameCount(f, 1))},
			{name: "the retry", method: "POST", path: "/api/tasks/1/retry", body: `{"context": "use JWT this time"}`,
				header: []string{httpapi.RequestorHeader, "bob"}, code: 201, check: func(t *testing.T, r response) {
					b := r.body
					if b["number"] != 2.0 || b["continues_number"] != 1.0 || b["goal"] != "Build the auth pages" || b["name"] != "Auth pages" ||
						b["status"] != "queued" || b["requestor_id"] != "api:bob" || b["room_id"] != "discord:123" || b["max_iterations"] != 7.0 {
						t.Errorf("task = %v", b)
					}
					if r.header.Get("Location") != "/api/tasks/2" {
						t.Errorf("Location = %q", r.header.Get("Location"))
					}
					if ev := f.lastEvent(2); ev.Type != domain.EventCreated || ev.Actor != "api:bob" || !strings.Contains(string(ev.Payload), "use JWT this time") {
						t.Errorf("created event = %s by %s: %s", ev.Type, ev.Actor, ev.Payload)
					}
				}},
			{name: "again, with no body", method: "POST", path: "/api/tasks/1/retry", code: 201, check: func(t *testing.T, r response) {
				if r.body["number"] != 3.0 || r.body["continues_number"] != 1.0 || r.body["requestor_id"] != "api" {
					t.Errorf("task = %v", r.body)
				}
			}},
		})

		// Past the requestor's limit of active tasks: 429, nothing created.
		for i := range 20 {
			if r := f.net("POST", "/api/tasks", `{"goal": "g"}`, httpapi.RequestorHeader, "carol"); r.code != 201 {
				t.Fatalf("create %d = %d %s", i, r.code, r.raw)
			}
		}
		f.play(t, []call{
			{name: "past the limit", method: "POST", path: "/api/tasks/1/retry", header: []string{httpapi.RequestorHeader, "carol"}, code: 429,
				check: both(wantError("limit"), sameCount(f, 23))},
		})
	})
}

// TestApproveAndDeny: a task waiting on an approval shows the exact call;
// approve lets it run, deny refuses it; a task waiting on none is refused
// and changes nothing.
func TestApproveAndDeny(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := tokenFixture(t, open)
		f.model.Decide("http_get", map[string]string{"url": "https://example.com/status"}, 20, "continue")
		f.create("Check the status page")
		f.step() // #1 asks to run http_get and waits
		f.create("Write the changelog")
		waiting, queued := f.task(1), f.task(2)
		if waiting.Status != domain.StatusWaiting || waiting.WaitingOn != domain.WaitApproval {
			t.Fatalf("#1 is %s on %q; want waiting on an approval", waiting.Status, waiting.WaitingOn)
		}
		still := func(t *testing.T, r response) { f.unchanged(t, waiting) }
		notQueued := func(t *testing.T, r response) { f.unchanged(t, queued) }
		f.play(t, []call{
			{name: "the task shows the call", method: "GET", path: "/api/tasks/1", code: 200, check: func(t *testing.T, r response) {
				a, _ := r.body["approval"].(map[string]any)
				params, _ := a["params"].(map[string]any)
				if r.body["waiting_on"] != "approval" || a["action"] != "http_get" || params["url"] != "https://example.com/status" || a["granted"] != false || a["role"] != domain.RoleAgent ||
					a["id"] != domain.ApprovalID(waiting) {
					t.Errorf("task = %v", r.body)
				}
			}},
			{name: "approve a task waiting on nothing", method: "POST", path: "/api/tasks/2/approve", code: 409,
				check: both(wantError("not waiting for an approval"), notQueued)},
			{name: "deny a task waiting on nothing", method: "POST", path: "/api/tasks/2/deny", body: `{"reason": "no"}`, code: 409, check: notQueued},
			{name: "a reason too long", method: "POST", path: "/api/tasks/1/deny", body: `{"reason": "` + strings.Repeat("r", 4001) + `"}`, code: 400,
				check: both(wantError("reason"), still)},
			{name: "an unknown field", method: "POST", path: "/api/tasks/1/deny", body: `{"why": "no"}`, code: 400, check: still},
			{name: "an unknown task", method: "POST", path: "/api/tasks/99/approve", code: 404, check: wantError("there is no task #99")},
			{name: "approve a call no longer pending", method: "POST", path: "/api/tasks/1/approve", body: `{"call": "0123456789abcdef"}`, code: 409,
				check: both(wantError("no longer pending"), still)},
			{name: "deny a call no longer pending", method: "POST", path: "/api/tasks/1/deny", body: `{"call": "0123456789abcdef", "reason": "x"}`, code: 409,
				check: both(wantError("no longer pending"), still)},
			{name: "a call id too long", method: "POST", path: "/api/tasks/1/approve", body: `{"call": "` + strings.Repeat("a", 65) + `"}`, code: 400, check: still},
			{name: "approve", method: "POST", path: "/api/tasks/1/approve", body: `{"call": "` + domain.ApprovalID(waiting) + `"}`, header: []string{httpapi.RequestorHeader, "alice"}, code: 200,
				check: func(t *testing.T, r response) {
					a, _ := r.body["approval"].(map[string]any)
					if r.body["status"] != "queued" || r.body["waiting_on"] != "" || a["action"] != "http_get" || a["granted"] != true {
						t.Errorf("task = %v", r.body)
					}
					if d, _ := r.body["decided"].(map[string]any); d["id"] != domain.ApprovalID(waiting) || d["action"] != "http_get" {
						t.Errorf("decided = %v; want the call approved", r.body["decided"])
					}
					if ev := f.lastEvent(1); ev.Type != domain.EventApproved || ev.Actor != "api:alice" {
						t.Errorf("event = %s by %s", ev.Type, ev.Actor)
					}
				}},
			{name: "approved already", method: "POST", path: "/api/tasks/1/approve", code: 409},
		})

		// #2, never served, goes next and asks too; this time it is denied.
		f.model.Decide("http_get", map[string]string{"url": "https://example.com/other"}, 20, "continue")
		f.step()
		if got := f.task(2); got.WaitingOn != domain.WaitApproval {
			t.Fatalf("#2 waits on %q; want approval", got.WaitingOn)
		}
		f.play(t, []call{
			{name: "deny", method: "POST", path: "/api/tasks/2/deny", body: `{"reason": "not that site"}`, header: []string{httpapi.RequestorHeader, "bob"}, code: 200,
				check: func(t *testing.T, r response) {
					if r.body["status"] != "queued" || r.body["waiting_on"] != "" || r.body["approval"] != nil {
						t.Errorf("task = %v", r.body)
					}
					if ev := f.lastEvent(2); ev.Type != domain.EventDenied || ev.Actor != "api:bob" || !strings.Contains(string(ev.Payload), "not that site") {
						t.Errorf("event = %s by %s: %s", ev.Type, ev.Actor, ev.Payload)
					}
				}},
			{name: "denied already", method: "POST", path: "/api/tasks/2/deny", code: 409},
		})
	})
}

// TestNotifications: the outbox by status, paged, and a dead letter sent
// back to be delivered again.
func TestNotifications(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		var ids []int64
		for i, room := range []string{"discord:1", "discord:2", "discord:2"} {
			n, err := f.store.Enqueue(f.ctx, domain.Notification{Room: room, TaskNumber: int64(i + 1), Category: domain.NotifyError,
				Payload: json.RawMessage(fmt.Sprintf(`{"text": "update %d"}`, i+1)), CreatedAt: f.clk.Now()})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, n.ID)
		}
		room, rows, err := f.store.ClaimRoom(f.ctx, domain.RoomClaim{Owner: "sender", Now: f.clk.Now(), Lease: time.Minute, Room: "discord:1"})
		if err != nil || room != "discord:1" || len(rows) != 1 {
			t.Fatalf("claim = %q %v %v", room, rows, err)
		}
		f.clk.Advance(time.Minute)
		if err := f.store.MarkFailed(f.ctx, "sender", []int64{ids[0]}, f.clk.Now(), "Unknown Channel"); err != nil {
			t.Fatal(err)
		}
		listed := func(want ...int64) func(t *testing.T, r response) {
			return func(t *testing.T, r response) {
				t.Helper()
				var got []int64
				for _, n := range r.body["notifications"].([]any) {
					got = append(got, int64(n.(map[string]any)["id"].(float64)))
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("notifications %v, want %v", got, want)
				}
			}
		}
		path := func(format string, id int64) string { return fmt.Sprintf(format, id) }
		f.play(t, []call{
			{name: "all", method: "GET", path: "/api/notifications", code: 200, check: listed(ids...)},
			{name: "dead letters", method: "GET", path: "/api/notifications?status=failed", code: 200, check: both(listed(ids[0]), func(t *testing.T, r response) {
				n := r.body["notifications"].([]any)[0].(map[string]any)
				if n["room"] != "discord:1" || n["task_number"] != 1.0 || n["category"] != "error" || n["payload"].(map[string]any)["text"] != "update 1" ||
					n["status"] != "failed" || n["last_error"] != "Unknown Channel" || n["failed_at"] == nil || n["created_at"] == nil || n["attempts"] == nil {
					t.Errorf("notification = %v", n)
				}
				if r.body["next"] != nil {
					t.Errorf("next = %v on the only page", r.body["next"])
				}
			})},
			{name: "pending", method: "GET", path: "/api/notifications?status=pending", code: 200, check: both(listed(ids[1:]...), func(t *testing.T, r response) {
				if n := r.body["notifications"].([]any)[0].(map[string]any); n["failed_at"] != nil || n["status"] != "pending" {
					t.Errorf("notification = %v", n)
				}
			})},
			{name: "a page", method: "GET", path: "/api/notifications?limit=2", code: 200, check: both(listed(ids[:2]...), func(t *testing.T, r response) {
				if r.body["next"] != float64(ids[1]) {
					t.Errorf("next = %v, want %d", r.body["next"], ids[1])
				}
			})},
			{name: "the next page", method: "GET", path: path("/api/notifications?limit=2&after=%d", ids[1]), code: 200, check: listed(ids[2])},
			{name: "a status in capitals", method: "GET", path: "/api/notifications?status=FAILED", code: 200, check: listed(ids[0])},
			{name: "an unknown status", method: "GET", path: "/api/notifications?status=sent", code: 400, check: wantError("use pending or failed")},
			{name: "a bad limit", method: "GET", path: "/api/notifications?limit=0", code: 400},
			{name: "a bad cursor", method: "GET", path: "/api/notifications?after=-1", code: 400},
			{name: "retry one that has not failed", method: "POST", path: path("/api/notifications/%d/retry", ids[1]), code: 409},
			{name: "retry an unknown one", method: "POST", path: "/api/notifications/999999/retry", code: 404},
			{name: "retry not an id", method: "POST", path: "/api/notifications/x/retry", code: 400},
			{name: "retry a dead letter", method: "POST", path: path("/api/notifications/%d/retry", ids[0]), code: 200, check: func(t *testing.T, r response) {
				b := r.body
				if b["id"] != float64(ids[0]) || b["status"] != "pending" || b["failed_at"] != nil || b["last_error"] != "" || b["attempts"] != 0.0 {
					t.Errorf("notification = %v", b)
				}
			}},
			{name: "no dead letters left", method: "GET", path: "/api/notifications?status=failed", code: 200, check: listed()},
			{name: "retried already", method: "POST", path: path("/api/notifications/%d/retry", ids[0]), code: 409},
		})
	})
}
