package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/schoolgate/schoolgate/schooltest"
)

// The upstream answers the assertion school's requests only with one
// X-School-Assertion of that school for the member and nothing else of
// X-School-*.
func TestAssertionCheck(t *testing.T) {
	key, other := schooltest.ES256Key(t, "k1"), schooltest.ES256Key(t, "k1")
	set := jwk.NewSet()
	pub, _ := key.PublicKey()
	_ = set.AddKey(pub)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(set)
	}))
	defer srv.Close()
	const audience = "http://127.0.0.1:9"
	c := newAssertionCheck(srv.URL, audience)
	claims := func(edit func(map[string]any)) map[string]any {
		m := map[string]any{"iss": srv.URL, "aud": audience, "sub": "member-1",
			"exp": time.Now().Add(5 * time.Minute).Unix()}
		if edit != nil {
			edit(m)
		}
		return m
	}
	valid := schooltest.SignJWS(t, key, "school-assertion+jwt", claims(nil))
	for _, tc := range []struct {
		name    string
		headers map[string][]string
		want    string // "" when the request passes
	}{
		{"valid", map[string][]string{assertionHeader: {valid}}, ""},
		{"none", nil, "exactly one"},
		{"two", map[string][]string{assertionHeader: {valid, valid}}, "exactly one"},
		{"beside the identity headers", map[string][]string{assertionHeader: {valid}, "X-School-Subject": {"member-1"}}, "X-School-Subject"},
		{"another key", map[string][]string{assertionHeader: {schooltest.SignJWS(t, other, "school-assertion+jwt", claims(nil))}}, "not valid"},
		{"an ID token's typ", map[string][]string{assertionHeader: {schooltest.SignJWS(t, key, "JWT", claims(nil))}}, "typ"},
		{"another issuer", map[string][]string{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt",
			claims(func(m map[string]any) { m["iss"] = "http://127.0.0.1:1" }))}}, "not valid"},
		{"another audience", map[string][]string{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt",
			claims(func(m map[string]any) { m["aud"] = "http://127.0.0.1:1" }))}}, "not valid"},
		{"expired", map[string][]string{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt",
			claims(func(m map[string]any) { m["exp"] = time.Now().Add(-time.Hour).Unix() }))}}, "not valid"},
		{"another person", map[string][]string{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt",
			claims(func(m map[string]any) { m["sub"] = "member-2" }))}}, "member-2"},
		{"not a JWS", map[string][]string{assertionHeader: {"x.y"}}, "compact JWS"},
		{"valid again", map[string][]string{assertionHeader: {valid}}, ""},
	} {
		r := httptest.NewRequest(http.MethodPost, "/account/graphql", nil)
		for k, vs := range tc.headers {
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
		err := c.check(r)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	// Only the assertion school's requests are checked, by their Host.
	r := httptest.NewRequest(http.MethodPost, "/account/graphql", nil)
	if r.Host = "127.0.0.1:2"; c.applies(r) {
		t.Error("a request of another site is checked")
	}
	if r.Host = strings.TrimPrefix(srv.URL, "http://"); !c.applies(r) {
		t.Error("a request of the assertion school is not checked")
	}
	if (*assertionCheck)(nil).applies(r) {
		t.Error("without the assertion school a request is checked")
	}
}
