package caddymodule

import (
	"context"
	"net/http/httptest"
	"net/textproto"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/policy"
)

func TestSetIdentity(t *testing.T) {
	tok := &policy.Token{Subject: "member-1", Email: "a@b.example", Name: "Ann", OrgID: "org-1",
		Roles: []string{"student", "admin"}, Scopes: []string{"openid", "account:read"}, ClientID: "c1",
		Audience: policy.AudienceMember}
	r := httptest.NewRequest("POST", "/account/graphql", nil)
	r.Header.Set("X-School-Subject", "forged")
	repl := caddy.NewReplacer()
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	setIdentity(r, tok)
	want := map[string]string{"X-School-Subject": "member-1", "X-School-Email": "a@b.example",
		"X-School-Name": "Ann", "X-School-Org-Id": "org-1", "X-School-Roles": "student,admin",
		"X-School-Scopes": "openid account:read", "X-School-Client-Id": "c1", "X-School-Audience": "member"}
	for h, v := range want {
		if got := r.Header.Values(h); len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", h, got, v)
		}
	}
	for _, h := range identityHeaders {
		if textproto.CanonicalMIMEHeaderKey(h.header) != h.header {
			t.Errorf("%s is not canonical: it would be invisible to Header.Get", h.header)
		}
		if got, _ := repl.GetString(h.placeholder); got != want[h.header] {
			t.Errorf("{%s} = %q, want %q", h.placeholder, got, want[h.header])
		}
	}
	if _, ok := repl.Get("http.auth.user.nope"); ok {
		t.Error("unknown placeholder answered")
	}
}
