package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/services/schedules"
)

// scheduleFixture is a fixture whose API serves /api/schedules with a
// scheduler (not started: nothing fires here).
func scheduleFixture(t *testing.T) (*fixture, *schedules.Service) {
	t.Helper()
	var sched *schedules.Service
	f := tokenFixture(t, teststore.SQLite, func(o *httpapi.APIOptions) {
		sched = schedules.New(schedules.Options{Runtime: o.Runtime, MinInterval: time.Minute,
			Strategies: func() []string { return []string{"loop", "react"} }})
		o.Schedules = sched
	})
	return f, sched
}

func TestScheduleAPI(t *testing.T) {
	f, sched := scheduleFixture(t)
	r := f.do("POST", "/api/schedules", strings.NewReader(`{"cron":"0 9 * * 1-5","goal":"Summarise yesterday's alerts","room":"discord:42","strategy":"react"}`),
		httpapi.RequestorHeader, "ops")
	if r.code != 201 || r.body["id"] != 1.0 || r.body["next_run_at"] != "2026-05-06T09:00:00Z" || r.header.Get("Location") != "/api/schedules/1" ||
		r.body["requestor_id"] != "api:ops" || r.body["room"] != "discord:42" || r.body["overlap"] != "skip" || r.body["catch_up"] != "one" {
		t.Fatalf("create = %d %s", r.code, r.raw)
	}

	for _, c := range []struct{ body, want string }{
		{`{"cron":"0 25 * * *","goal":"x"}`, `the cron expression \"0 25 * * *\" is not valid`},
		{`{"cron":"* * * *","goal":"x"}`, "expected exactly 5 fields"},
		{`{"cron":"@every 30s","goal":"x"}`, "the shortest interval allowed is 1m0s"},
		{`{"cron":"@daily","goal":"x","overlap":"maybe"}`, "overlap"},
		{`{"cron":"@daily","goal":"x","strategy":"chaos"}`, `no \"chaos\" strategy`},
		{`{"cron":"@daily","goal":"x","room":"nowhere:1"}`, `no \"nowhere\" platform`},
		{`{"goal":"x"}`, `needs a \"cron\"`},
		{`{"cron":"@daily"}`, `needs a \"goal\"`},
	} {
		r := f.do("POST", "/api/schedules", strings.NewReader(c.body))
		if r.code != 400 || !strings.Contains(r.raw, c.want) || strings.Count(r.raw, "\n") != 1 {
			t.Errorf("POST %s = %d %s; want 400 saying %s", c.body, r.code, r.raw, c.want)
		}
	}
	if list, _ := sched.List(f.ctx, domain.ScheduleCaller{}); len(list) != 1 {
		t.Fatalf("refused requests created schedules: %d", len(list))
	}

	// ops has 1; 19 more reach the limit, the 21st is refused with 429.
	for i := range domain.MaxSchedulesPerRequestor - 1 {
		if r := f.do("POST", "/api/schedules", strings.NewReader(fmt.Sprintf(`{"cron":"@hourly","goal":"goal %d"}`, i)),
			httpapi.RequestorHeader, "ops"); r.code != 201 {
			t.Fatalf("schedule %d: %d %s", i+2, r.code, r.raw)
		}
	}
	if r := f.do("POST", "/api/schedules", strings.NewReader(`{"cron":"@hourly","goal":"one too many"}`), httpapi.RequestorHeader, "ops"); r.code != 429 ||
		!strings.Contains(r.raw, "limit is 20") {
		t.Errorf("21st = %d %s", r.code, r.raw)
	}
	if r := f.do("GET", "/api/schedules", nil); r.code != 200 || len(r.body["schedules"].([]any)) != 20 {
		t.Errorf("list = %d %s", r.code, r.raw[:min(len(r.raw), 200)])
	}

	// A chat user's schedule: the API's caller holds the token, an admin.
	mine, err := sched.Create(f.ctx, domain.NewSchedule{Cron: "@daily", Goal: "Chat's", RequestorID: "u1", WorkspaceID: "g1"})
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/api/schedules/%d", mine.ID)
	if r := f.do("POST", path+"/pause", nil); r.code != 200 || r.body["paused"] != true {
		t.Errorf("pause = %d %s", r.code, r.raw)
	}
	if r := f.do("POST", path+"/resume", strings.NewReader(`{}`)); r.code != 200 || r.body["paused"] != false {
		t.Errorf("resume = %d %s", r.code, r.raw)
	}
	r = f.do("GET", path, nil)
	// paused is always there, false too: a script asks "is it running?"
	// without treating a missing field as an answer.
	if r.code != 200 || r.body["goal"] != "Chat's" || r.body["paused"] != false || r.body["id"] != float64(mine.ID) ||
		r.body["next_run_at"] == nil || r.body["resumed_at"] == nil {
		t.Fatalf("get = %d %s", r.code, r.raw)
	}
	var types []string
	for _, e := range r.body["events"].([]any) {
		types = append(types, e.(map[string]any)["type"].(string))
	}
	if strings.Join(types, ",") != "resumed,paused,created" {
		t.Errorf("events %v", types)
	}
	// curl -X DELETE sends no body and no Content-Type: accepted, as no
	// web page can forge a DELETE (docs/security.md).
	if r := f.do("DELETE", path, nil, "Content-Type", ""); r.code != 200 {
		t.Errorf("delete without a Content-Type = %d %s", r.code, r.raw)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", path}, {"DELETE", path}, {"POST", path + "/pause"}, {"POST", path + "/resume"},
	} {
		if r := f.do(c.method, c.path, nil); r.code != 404 || !strings.Contains(r.raw, fmt.Sprintf("there is no schedule #%d", mine.ID)) {
			t.Errorf("%s %s after delete = %d %s", c.method, c.path, r.code, r.raw)
		}
	}
	if r := f.do("GET", "/api/schedules/zero", nil); r.code != 400 {
		t.Errorf("bad id = %d %s", r.code, r.raw)
	}
}

func TestScheduleAPIWithoutScheduler(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	if r := f.do("GET", "/api/schedules", nil); r.code != 503 {
		t.Errorf("GET /api/schedules without a scheduler = %d %s", r.code, r.raw)
	}
}
