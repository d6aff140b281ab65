package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestKnowledgeEndpoints: a document is added (201, its id), listed,
// found by recall as a passage, and deleted; bad requests change nothing.
func TestKnowledgeEndpoints(t *testing.T) {
	f := tokenFixture(t, teststore.SQLite)
	body := `{"title": "Runbook", "text": "Restart the ingest queue with the drain flag.\n\nThe staging database is ORCA-7."}`
	resp := f.do("POST", "/api/knowledge", strings.NewReader(body))
	if resp.code != 201 || resp.body["id"] != float64(1) || resp.body["title"] != "Runbook" || resp.header.Get("Location") != "/api/knowledge/1" {
		t.Fatalf("add = %d %s", resp.code, resp.raw)
	}
	for _, bad := range []struct {
		body string
		code int
		want string
	}{
		{`{"text": "x"}`, 400, `the body needs a "title"`},
		{`{"title": "t"}`, 400, `the body needs a "text"`},
		{`{"title": "t", "text": "   "}`, 400, `the body needs a "text"`},
		{`{"title": "t", "text": "x", "room": "not a room"}`, 400, "is not a room"},
		{`{"title": "t", "text": "x", "color": "red"}`, 400, "unknown field"},
		{`{"title": "` + strings.Repeat("t", 201) + `", "text": "x"}`, 400, "the limit is 200"},
		{`{"title": "t", "text": "` + strings.Repeat("x", domain.MaxDocumentBytes+1) + `"}`, 413, "the limit is 4194304"},
	} {
		resp := f.do("POST", "/api/knowledge", strings.NewReader(bad.body))
		if resp.code != bad.code || !strings.Contains(fmt.Sprint(resp.body["error"]), bad.want) {
			t.Errorf("%.60s… = %d %.200s; want %d %q", bad.body, resp.code, resp.raw, bad.code, bad.want)
		}
	}
	// Over the usual 64 KiB, under 4 MiB: taken.
	big := `{"title": "Big", "text": "` + strings.Repeat("word ", 300000) + `"}`
	if resp := f.do("POST", "/api/knowledge", strings.NewReader(big)); resp.code != 201 {
		t.Fatalf("a 1.5 MB document = %d %.200s", resp.code, resp.raw)
	}
	list := f.do("GET", "/api/knowledge", nil)
	docs, _ := list.body["documents"].([]any)
	if list.code != 200 || len(docs) != 2 {
		t.Fatalf("list = %d %s", list.code, list.raw)
	}
	recs, err := f.store.Recall(f.ctx, domain.RecallQuery{Text: "staging database"})
	if err != nil || len(recs) == 0 || !strings.Contains(recs[0].Text, "ORCA-7") {
		t.Fatalf("recall = %+v, %v", recs, err)
	}
	if resp := f.do("DELETE", "/api/knowledge/1", nil); resp.code != 200 {
		t.Fatalf("delete = %d %s", resp.code, resp.raw)
	}
	if resp := f.do("DELETE", "/api/knowledge/1", nil); resp.code != 404 {
		t.Fatalf("delete again = %d %s", resp.code, resp.raw)
	}
	if resp := f.do("DELETE", "/api/knowledge/x", nil); resp.code != 400 {
		t.Fatalf("delete x = %d %s", resp.code, resp.raw)
	}
	if recs, _ := f.store.Recall(f.ctx, domain.RecallQuery{Text: "staging database"}); len(recs) != 0 {
		t.Fatalf("recalled after delete: %+v", recs)
	}
	if resp := f.do("GET", "/api/knowledge", nil, "Authorization", ""); resp.code != 401 {
		t.Fatalf("without the token = %d", resp.code)
	}
}

// TestMemoriesEndpoints: messages are listed and searched; DELETE with
// a person forgets them — what they wrote, the facts about them — and
// says how many; without the token, or with a malformed person, nothing
// is deleted.
func TestMemoriesEndpoints(t *testing.T) {
	f := tokenFixture(t, teststore.SQLite)
	for i, m := range []domain.Memory{
		{Platform: "discord", MessageID: "1", Room: "discord:C1", AuthorID: "U1", AuthorName: "ann", Text: "the staging database is ORCA-7"},
		{Platform: "discord", MessageID: "2", Room: "discord:C1", AuthorID: "U2", AuthorName: "bob", Text: "prod is ORCA-9"},
		{Platform: "discord", MessageID: "3", Room: "discord:D1", AuthorID: "U1", AuthorName: "ann", Text: "my secret is fluffy"},
	} {
		m.CreatedAt = f.clk.Now()
		if _, _, err := f.store.SaveMemory(f.ctx, m); err != nil {
			t.Fatal(i, err)
		}
	}
	if _, err := f.store.SaveFacts(f.ctx, []domain.Fact{{Room: "discord:C1", About: "discord:U1", Text: "ann runs staging", Sources: []int64{1}}}); err != nil {
		t.Fatal(err)
	}
	page := func(q string) []any {
		t.Helper()
		resp := f.do("GET", "/api/memories"+q, nil)
		if resp.code != 200 {
			t.Fatalf("GET %s = %d %s", q, resp.code, resp.raw)
		}
		list, _ := resp.body["memories"].([]any)
		return list
	}
	if got := page(""); len(got) != 3 {
		t.Fatalf("all = %v", got)
	}
	if got := page("?room=discord:C1&q=staging"); len(got) != 1 || got[0].(map[string]any)["author"] != "ann" {
		t.Fatalf("search = %v", got)
	}
	first := f.do("GET", "/api/memories?limit=2", nil)
	if next, _ := first.body["next"].(float64); next == 0 || len(page(fmt.Sprintf("?limit=2&before=%d", int(next)))) != 1 {
		t.Fatalf("paging: %s", first.raw)
	}
	for _, q := range []string{"?person=U1", "?person=discord:", "", "?person=%20discord:U1"} {
		if resp := f.do("DELETE", "/api/memories"+q, nil); resp.code != 400 {
			t.Errorf("DELETE %s = %d %s", q, resp.code, resp.raw)
		}
	}
	if resp := f.do("DELETE", "/api/memories?person=discord:U1", nil, "Authorization", "Bearer wrong"); resp.code != 401 {
		t.Fatalf("with a wrong token = %d", resp.code)
	}
	if got := page(""); len(got) != 3 {
		t.Fatalf("refused requests deleted: %v", got)
	}
	resp := f.do("DELETE", "/api/memories?person=discord:U1", nil)
	if resp.code != 200 || resp.body["messages"] != float64(2) || resp.body["facts"] != float64(1) {
		t.Fatalf("forget = %d %s", resp.code, resp.raw)
	}
	got := page("")
	raw, _ := json.Marshal(got)
	if len(got) != 1 || strings.Contains(string(raw), "ann") {
		t.Fatalf("left: %s", raw)
	}
}
