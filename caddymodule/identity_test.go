package caddymodule

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/school"
)

// A protected request forwarded through the gateway makes its identity
// Caddy placeholders, for operators' own header_up; each answers the value
// of its header.
func TestIdentityPlaceholders(t *testing.T) {
	if len(identityPlaceholders) != len(school.IdentityHeaders) {
		t.Fatalf("%d placeholders for %d identity headers", len(identityPlaceholders), len(school.IdentityHeaders))
	}
	ts := newTestSite(t, nil)
	r := httptest.NewRequest("POST", "/account/graphql", nil)
	r.Header.Set("Authorization", "Bearer "+ts.token)
	repl := caddy.NewReplacer()
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	if err := ts.g.ServeHTTP(httptest.NewRecorder(), r, ts.upstream); err != nil || ts.upstream.header == nil {
		t.Fatalf("not forwarded: %v", err)
	}
	want := map[string]string{"http.auth.user.id": "member-1", "http.auth.user.email": "student@demo.school",
		"http.auth.user.name": "Sam Student", "http.auth.user.org_id": "demo", "http.auth.user.roles": "student",
		"http.auth.user.scopes": "openid account:read", "http.auth.user.client_id": "member-app",
		"http.auth.user.audience": "member"}
	for i, p := range identityPlaceholders {
		got, _ := repl.GetString(p)
		if got != want[p] || got != ts.upstream.header.Get(school.IdentityHeaders[i]) {
			t.Errorf("{%s} = %q, want %q (%s)", p, got, want[p], school.IdentityHeaders[i])
		}
	}
	if _, ok := repl.Get("http.auth.user.nope"); ok {
		t.Error("unknown placeholder answered")
	}
}
