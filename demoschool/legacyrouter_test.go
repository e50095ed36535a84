package demoschool

import (
	"encoding/json"
	"net/http"
	"testing"
)

// The legacy router must be as naive as the stacks it stands for, or the
// end-to-end tests that rely on it would prove nothing: these requests,
// sent straight to the school, reach the handler a prefix router picks.
func TestLegacyRouterIsNaive(t *testing.T) {
	h := New(Options{})
	operator := http.Header{"X-School-Audience": {"operator"}, "X-School-Subject": {"operator-1"}}
	tests := []struct{ method, target, handler string }{
		{"GET", "/admin/api/students/../courses", "admin:students"},
		{"GET", "/admin/api/students/%2e%2e/courses", "admin:students"},
		{"GET", "/ADMIN/API/students", "admin:students"},
		{"GET", "/admin/api/courses", "admin:courses"},
		{"POST", "/account/graphql%00", "account"},
		{"POST", "/account/graphql/../../", "account"},
		{"POST", "/Account/GraphQL", "account"},
	}
	for _, tt := range tests {
		call(t, h, tt.method, tt.target, nil, operator)
		rec := call(t, h, "GET", "/__demo/protected-log", nil, nil)
		var log struct{ Requests []ProtectedEntry }
		if err := json.Unmarshal(rec.Body.Bytes(), &log); err != nil || len(log.Requests) == 0 {
			t.Fatalf("%s %s: log %s", tt.method, tt.target, rec.Body)
		}
		if got := log.Requests[len(log.Requests)-1]; got.Handler != tt.handler {
			t.Errorf("%s %s reached %q, want %q", tt.method, tt.target, got.Handler, tt.handler)
		}
	}
	// Everything else still goes through the mux.
	if rec := call(t, h, "GET", "/healthz", nil, nil); rec.Code != http.StatusOK {
		t.Errorf("healthz: %d", rec.Code)
	}
}
