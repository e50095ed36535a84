package school

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/policy"
)

// A school that could not be built answers 503 with the reason on
// everything the gateway owns or protects, and leaves the legacy site's
// public pages reachable, without the bearer token or a client's
// X-School-* headers.
func TestServeFailed(t *testing.T) {
	p := &policy.Policy{AdminPrefix: "/admin/api"}
	tests := []struct {
		path, auth string
		passed     bool
	}{
		{path: "/.well-known/oauth-authorization-server"},
		{path: "/oauth/authorize?client_id=x"},
		{path: "/api/oauth/token"},
		{path: "/mcp"},
		{path: "/llms.txt"},
		{path: "/account/graphql", auth: "Bearer sgat_x"},
		{path: "/admin/api/courses"},
		{path: "/ADMIN/api/courses"},
		{path: "/courses/portrait", auth: "Bearer sgat_x", passed: true},
		{path: "/", passed: true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			next := &recordingNext{assertions: map[string]bool{}}
			r := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			r.Header.Set("X-School-Subject", "forged")
			rec := httptest.NewRecorder()
			if err := ServeFailed(rec, r, next, NewLegacy(0, nil), p, "its store could not be opened", 7); err != nil {
				t.Fatal(err)
			}
			if tt.passed {
				if next.header == nil || next.header.Get("Authorization") != "" || next.header.Get("X-School-Subject") != "" {
					t.Fatalf("a public page goes to the legacy site, without the bearer token: %v", next.header)
				}
				return
			}
			if next.header != nil {
				t.Fatal("a gateway path of a failed school must not reach the legacy site")
			}
			var body map[string]string
			if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "7" ||
				json.Unmarshal(rec.Body.Bytes(), &body) != nil || body["error"] != "temporarily_unavailable" {
				t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
			}
			if !strings.HasSuffix(body["error_description"], ": its store could not be opened") {
				t.Fatalf("the reason: %s", body["error_description"])
			}
		})
	}
}
