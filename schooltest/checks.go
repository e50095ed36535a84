package schooltest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// CheckUnavailable checks the JSON answer to a request the store failed:
// 503, Retry-After 5, no challenge, not cached, temporarily_unavailable
// with a description, and nothing of the store's own error ("database
// not open", what a closed bbolt store says).
func CheckUnavailable(tb testing.TB, rec *httptest.ResponseRecorder) {
	tb.Helper()
	h := rec.Header()
	if rec.Code != http.StatusServiceUnavailable {
		tb.Fatalf("status %d, want 503\n%s", rec.Code, rec.Body)
	}
	if h.Get("Retry-After") != "5" {
		tb.Errorf("Retry-After %q, want 5", h.Get("Retry-After"))
	}
	if h.Get("WWW-Authenticate") != "" {
		tb.Errorf("a 503 is no challenge: WWW-Authenticate %q", h.Get("WWW-Authenticate"))
	}
	if h.Get("Cache-Control") != "no-store" {
		tb.Errorf("Cache-Control %q", h.Get("Cache-Control"))
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || h.Get("Content-Type") != "application/json" {
		tb.Fatalf("not JSON (%q): %v\n%s", h.Get("Content-Type"), err, rec.Body)
	}
	if body["error"] != "temporarily_unavailable" || body["error_description"] == "" {
		tb.Errorf("body %v", body)
	}
	if strings.Contains(rec.Body.String(), "database not open") {
		tb.Errorf("the store's error reached the client: %s", rec.Body)
	}
}
