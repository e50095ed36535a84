package school

import (
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"testing"

	"github.com/schoolgate/schoolgate/policy"
)

func TestSetIdentity(t *testing.T) {
	tok := &policy.Token{Subject: "member-1", Email: "a@b.example", Name: "Ann", OrgID: "org-1",
		Roles: []string{"student", "admin"}, Scopes: []string{"openid", "account:read"}, ClientID: "c1",
		Audience: policy.AudienceMember}
	var told []string
	s := &Site{cfg: Config{Identified: func(r *http.Request, id Identity) {
		for i := range IdentityHeaders {
			told = append(told, id.Value(i))
		}
	}}}
	r := httptest.NewRequest("POST", "/account/graphql", nil)
	r.Header.Set("X-School-Subject", "forged")
	s.setIdentity(r, tok)
	want := map[string]string{"X-School-Subject": "member-1", "X-School-Email": "a@b.example",
		"X-School-Name": "Ann", "X-School-Org-Id": "org-1", "X-School-Roles": "student,admin",
		"X-School-Scopes": "openid account:read", "X-School-Client-Id": "c1", "X-School-Audience": "member"}
	for h, v := range want {
		if got := r.Header.Values(h); len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", h, got, v)
		}
	}
	if len(told) != len(IdentityHeaders) {
		t.Fatalf("Identified was told %q", told)
	}
	for i, h := range IdentityHeaders {
		if textproto.CanonicalMIMEHeaderKey(h) != h {
			t.Errorf("%s is not canonical: it would be invisible to Header.Get", h)
		}
		if told[i] != want[h] {
			t.Errorf("Identified was told %q for %s, want %q", told[i], h, want[h])
		}
	}
}
