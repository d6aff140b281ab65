package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestEventStreamShare: one client holds at most MaxStreamsPerClient
// event streams, however many the server could keep: one more gets 429
// with Retry-After and an {"error"} body, while other clients still get
// theirs; a client is its address and, for a holder of the API token,
// the requestor it names (without the token the name counts for nothing).
func TestEventStreamShare(t *testing.T) {
	for _, withToken := range []bool{true, false} {
		name := map[bool]string{true: "token", false: "no token"}[withToken]
		t.Run(name, func(t *testing.T) {
			share := func(o *httpapi.APIOptions) { o.MaxStreams, o.MaxStreamsPerClient = 10, 2 }
			var f *fixture
			if withToken {
				f = tokenFixture(t, teststore.SQLite, share)
			} else {
				f = newFixture(t, teststore.SQLite, share)
			}
			closed := make(chan struct{}, 16)
			ts := httptest.NewUnstartedServer(f.srv)
			ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateClosed {
					closed <- struct{}{}
				}
			}
			ts.Start()
			t.Cleanup(ts.Close)
			auth := []string{}
			if withToken {
				auth = []string{"Authorization", "Bearer " + testToken}
			}
			open := func(who string) *stream {
				h := auth
				if who != "" {
					h = append(append([]string{}, auth...), httpapi.RequestorHeader, who)
				}
				return openStream(t, ts.URL, "", h...)
			}

			first, second := open(""), open("")
			first.ready()
			second.ready()
			over := open("")
			if over.resp.StatusCode != http.StatusTooManyRequests || over.resp.Header.Get("Retry-After") != "5" {
				t.Fatalf("a third stream of one client = %d, Retry-After %q; want 429 and 5", over.resp.StatusCode, over.resp.Header.Get("Retry-After"))
			}
			var e struct{ Error string }
			if err := json.NewDecoder(over.resp.Body).Decode(&e); err != nil || !strings.Contains(e.Error, "2 event streams open") {
				t.Fatalf("429 body: %q, %v", e.Error, err)
			}

			// A client that names itself has a share of its own only when it
			// holds the token.
			alice := open("alice")
			if withToken {
				alice.ready()
			} else if alice.resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("a name without the token got %d, want 429: the same client", alice.resp.StatusCode)
			}

			// A slot of the client's is free again once a stream ends.
			first.close()
			deadline := time.After(wait)
			for {
				again := open("")
				if again.resp.StatusCode == http.StatusOK {
					again.ready()
					break
				}
				again.close()
				select {
				case <-closed:
				case <-deadline:
					t.Fatalf("a stream after one ended = %d", again.resp.StatusCode)
				}
			}
		})
	}
}

// TestRotatingNamesKeepToTheAddressShare: a holder of the token who names
// a new requestor at every request gets a share per name, but one address
// holds at most half of the server's streams in all, so a script rotating
// names cannot lock every dashboard and CLI out of their live view.
func TestRotatingNamesKeepToTheAddressShare(t *testing.T) {
	f := tokenFixture(t, teststore.SQLite, func(o *httpapi.APIOptions) { o.MaxStreams, o.MaxStreamsPerClient = 10, 2 })
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	open := func(who string) *stream {
		return openStream(t, ts.URL, "", "Authorization", "Bearer "+testToken, httpapi.RequestorHeader, who)
	}
	var held []*stream
	for i := range 5 { // half of 10, across three names
		s := open(fmt.Sprintf("name-%d", i/2))
		s.ready()
		held = append(held, s)
	}
	over := open("name-9")
	if over.resp.StatusCode != http.StatusTooManyRequests || over.resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a sixth stream from one address under a new name = %d, want 429 with Retry-After", over.resp.StatusCode)
	}
	var e struct{ Error string }
	if err := json.NewDecoder(over.resp.Body).Decode(&e); err != nil || !strings.Contains(e.Error, "5 event streams are open from your address") {
		t.Fatalf("429 body: %q, %v", e.Error, err)
	}
}
