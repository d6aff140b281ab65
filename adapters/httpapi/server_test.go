package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/taskloom/taskloom/adapters/httpapi"
)

func get(t *testing.T, h http.Handler, path string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = "localhost" // a probe on the same machine
	h.ServeHTTP(rec, req)
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: body %q is not JSON: %v", path, rec.Body.String(), err)
	}
	return rec.Code, body
}

func TestProbes(t *testing.T) {
	t.Parallel()
	var dbErr error
	s := httpapi.New(nil, map[string]httpapi.Checker{"store": func(context.Context) error { return dbErr }})
	if code, _ := get(t, s, "/healthz"); code != 200 {
		t.Fatalf("healthz = %d", code)
	}
	if code, body := get(t, s, "/readyz"); code != 503 || body["status"] != "not ready" {
		t.Fatalf("readyz before start = %d %v", code, body)
	}
	s.SetReady(true)
	if code, _ := get(t, s, "/readyz"); code != 200 {
		t.Fatalf("readyz when ready = %d", code)
	}
	dbErr = errors.New("connection refused")
	code, body := get(t, s, "/readyz")
	if code != 503 || body["checks"].(map[string]any)["store"] != "failing" {
		t.Fatalf("readyz with failing store = %d %v", code, body)
	}
	if code, _ := get(t, s, "/healthz"); code != 200 {
		t.Fatalf("healthz must not depend on the store, got %d", code)
	}
}

// TestReadyzSaysTheModelState: what SetInfo names is in the body of
// /readyz, and it never changes the status code — a replica whose model
// is on hold is still ready while its store answers.
func TestReadyzSaysTheModelState(t *testing.T) {
	t.Parallel()
	var dbErr error
	state := "ok"
	s := httpapi.New(nil, map[string]httpapi.Checker{"store": func(context.Context) error { return dbErr }})
	s.SetInfo("model", func() string { return state })
	s.SetReady(true)
	for _, tc := range []struct {
		state string
		dbErr error
		code  int
	}{
		{"ok", nil, 200},
		{"degraded", nil, 200},
		{"on hold: the model refused the request (401: invalid key)", nil, 200},
		{"on hold: the model refused the request (401: invalid key)", errors.New("connection refused"), 503},
		{"ok", errors.New("connection refused"), 503},
	} {
		state, dbErr = tc.state, tc.dbErr
		code, body := get(t, s, "/readyz")
		if code != tc.code || body["model"] != tc.state || body["checks"] == nil {
			t.Errorf("model %q, store error %v: readyz = %d %v; want %d with the model's state", tc.state, tc.dbErr, code, body, tc.code)
		}
	}
}
