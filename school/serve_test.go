package school

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// Serve routes each kind of request where it belongs, on a school built
// from a plain Config: the authorization server's endpoints, /mcp and the
// documents are answered by the school; protected resources are checked
// and forwarded with the identity instead of the token; other paths pass
// to next without a bearer token or a client's X-School-* headers; a path
// that cannot be forwarded unambiguously is refused. The observer sees
// each protected outcome and /mcp caller.
func TestServeRoutes(t *testing.T) {
	ts := newTestSite(t)
	tests := []struct {
		name, method, path string
		bearer             bool
		status             int
		forwarded          bool
		body, counted      string
	}{
		{"discovery", "GET", "/.well-known/oauth-authorization-server", false, 200, false, `"issuer":"https://school.example"`, ""},
		{"document", "GET", "/llms.txt", false, 200, false, "https://school.example", ""},
		{"mcp anonymous", "POST", "/mcp", false, 0, false, "", "mcp anonymous"},
		{"mcp member", "POST", "/mcp", true, 0, false, "", "mcp member"},
		{"protected without a token", "POST", "/account/graphql", false, 401, false, "", "protected invalid_token"},
		{"protected with a token", "POST", "/account/graphql", true, 200, true, "", "protected allowed"},
		{"protected, a method the policy refuses", "DELETE", "/account/graphql", true, 405, false, "", "protected denied_by_policy"},
		{"protected preflight", "OPTIONS", "/account/graphql", false, 204, false, "", ""},
		{"public page", "GET", "/courses/light", true, 200, true, "", ""},
		{"ambiguous protected path", "GET", "/admin/api/students%2f..%2fcourses", false, 400, false, "invalid_request", "protected path_refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clear(ts.observed.counts)
			r := httptest.NewRequest(tt.method, tt.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			r.Header.Set("X-School-Email", "forged@example.com")
			if tt.bearer {
				r.Header.Set("Authorization", "Bearer "+ts.token)
			}
			if tt.method == "OPTIONS" {
				r.Header.Set("Access-Control-Request-Method", "POST")
			}
			rec := ts.serve(t, r)
			if forwarded := ts.upstream.header != nil; forwarded != tt.forwarded {
				t.Fatalf("forwarded %v, want %v: %d %s", forwarded, tt.forwarded, rec.Code, rec.Body)
			}
			if tt.forwarded {
				h := ts.upstream.header
				if h.Get("Authorization") != "" || h.Get("X-School-Email") == "forged@example.com" {
					t.Errorf("forwarded with the token or a forged identity: %v", h)
				}
				if protected := tt.bearer && strings.HasPrefix(tt.path, "/account/"); protected != (h.Get("X-School-Subject") == "member-1") {
					t.Errorf("identity headers %v", h)
				}
				return
			}
			if tt.status != 0 && rec.Code != tt.status {
				t.Errorf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if rec.Code >= 500 {
				t.Errorf("status %d: %s", rec.Code, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), tt.body) {
				t.Errorf("body %s, want %q in it", rec.Body, tt.body)
			}
			if tt.counted != "" && ts.observed.counts[tt.counted] != 1 {
				t.Errorf("counted %v, want %q once", ts.observed.counts, tt.counted)
			}
		})
	}
}
