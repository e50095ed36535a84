package authserver

// The RFC 9700 (OAuth 2.0 Security Best Current Practice) checklist, as
// tests: one named test per item, each citing the section it proves, in
// the order a reviewer walks the flow. `go test -run RFC9700 ./authserver`
// runs exactly this list. Where another test file covers an item in more
// depth, the test here is the short, readable proof.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// RFC 9700 §2.1, §4.1.3: exact redirect URI matching; only a loopback registration may vary its port (RFC 8252 §7.3).
func TestRFC9700_RedirectURIExactMatchAndLoopbackPort(t *testing.T) {
	_, ch := pkce()
	member := func(redirect string) url.Values {
		q := authParams(ch)
		q.Set("redirect_uri", redirect)
		return q
	}
	ops := func(redirect string) url.Values { // registered: http://127.0.0.1:5555/cb
		q := authParams(ch)
		q.Set("client_id", operatorClient)
		q.Set("redirect_uri", redirect)
		q.Set("scope", "courses:read")
		q.Del("resource")
		return q
	}
	cases := []struct {
		name   string
		q      url.Values
		person string
		ok     bool
	}{
		{"registered URI", member(memberRedirect), "student", true},
		{"trailing slash", member(memberRedirect + "/"), "student", false},
		{"longer path", member(memberRedirect + "/x"), "student", false},
		{"path prefix", member("https://app.example/call"), "student", false},
		{"added query", member(memberRedirect + "?next=x"), "student", false},
		{"empty query", member(memberRedirect + "?"), "student", false},
		{"fragment", member(memberRedirect + "#x"), "student", false},
		{"upper-case host", member("https://APP.example/callback"), "student", false},
		{"upper-case path", member("https://app.example/Callback"), "student", false},
		{"explicit default port", member("https://app.example:443/callback"), "student", false},
		{"other port on an https registration", member("https://app.example:8443/callback"), "student", false},
		{"percent-encoded path", member("https://app.example/%63allback"), "student", false},
		{"dot segment", member("https://app.example/x/../callback"), "student", false},
		{"plain http", member("http://app.example/callback"), "student", false},
		{"userinfo trick", member("https://app.example@evil.example/callback"), "student", false},
		{"sub-domain", member("https://evil.app.example/callback"), "student", false},
		{"suffix domain", member("https://app.example.evil.example/callback"), "student", false},
		{"loopback for an https registration", member("http://127.0.0.1:5555/callback"), "student", false},

		{"loopback, registered port", ops(opsRedirect), "owner", true},
		{"loopback, any other port", ops("http://127.0.0.1:61000/cb"), "owner", true},
		{"loopback, no port", ops("http://127.0.0.1/cb"), "owner", true},
		{"loopback, other path", ops("http://127.0.0.1:61000/cb2"), "owner", false},
		{"loopback, added query", ops("http://127.0.0.1:61000/cb?x=1"), "owner", false},
		{"loopback, localhost for 127.0.0.1", ops("http://localhost:5555/cb"), "owner", false},
		{"loopback, ::1 for 127.0.0.1", ops("http://[::1]:5555/cb"), "owner", false},
		{"loopback, 127.0.0.2", ops("http://127.0.0.2:5555/cb"), "owner", false},
		{"loopback, https", ops("https://127.0.0.1:5555/cb"), "owner", false},
		{"loopback, userinfo", ops("http://x@127.0.0.1:5555/cb"), "owner", false},
		{"loopback, fragment", ops("http://127.0.0.1:5555/cb#x"), "owner", false},
		{"non-loopback for a loopback registration", ops("http://app.example:5555/cb"), "owner", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rec := f.authorize(tc.q, tc.person)
			if !tc.ok {
				if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" ||
					!strings.Contains(rec.Body.String(), "redirect_uri is not registered") {
					t.Fatalf("want the error page, got %d Location=%q", rec.Code, rec.Header().Get("Location"))
				}
				return
			}
			// Accepted: the person is asked, and the answer goes to the
			// URI the request named (the port it chose included).
			if rec.Code != http.StatusOK {
				t.Fatalf("want the consent page, got %d %q", rec.Code, rec.Header().Get("Location"))
			}
			p := redirectParams(t, f.consent(rec, tc.person, "approve"), tc.q.Get("redirect_uri")+"?")
			if p.Get("code") == "" {
				t.Errorf("no code: %v", p)
			}
		})
	}
}

// RFC 9700 §4.11.2: an unknown client or unregistered redirect URI gets an error page, never a redirect.
func TestRFC9700_NoRedirectForUnknownClientOrUnregisteredRedirectURI(t *testing.T) {
	f := newFixture(t)
	_, ch := pkce()
	cases := map[string]func(url.Values){
		"unknown client":        func(q url.Values) { q.Set("client_id", "evil-client") },
		"missing client_id":     func(q url.Values) { q.Del("client_id") },
		"empty client_id":       func(q url.Values) { q.Set("client_id", "") },
		"repeated client_id":    func(q url.Values) { q.Add("client_id", operatorClient) },
		"unregistered redirect": func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb") },
		"missing redirect":      func(q url.Values) { q.Del("redirect_uri") },
		"repeated redirect":     func(q url.Values) { q.Add("redirect_uri", "https://evil.example/cb") },
		"another client's URI":  func(q url.Values) { q.Set("redirect_uri", opsRedirect) },
		"refused metadata URL":  func(q url.Values) { q.Set("client_id", "http://evil.example/client.json") },
		"metadata URL, redirect": func(q url.Values) {
			q.Set("client_id", "https://evil.example/")
			q.Set("redirect_uri", "https://evil.example/cb")
		},
		"unknown client and a bad request": func(q url.Values) {
			q.Set("client_id", "evil-client")
			q.Set("response_type", "token")
			q.Set("redirect_uri", "https://evil.example/cb")
		},
	}
	for name, mutate := range cases {
		for _, person := range []string{"student", ""} {
			t.Run(name+"/signed in="+person, func(t *testing.T) {
				q := authParams(ch)
				mutate(q)
				rec := f.authorize(q, person)
				if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
					t.Fatalf("want a 400 error page, got %d Location=%q", rec.Code, rec.Header().Get("Location"))
				}
				if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") ||
					strings.Contains(rec.Body.String(), "evil.example") {
					t.Errorf("the error page must be HTML that links nowhere:\n%s", rec.Body)
				}
			})
		}
	}
}

// RFC 9700 §4.4.2.1 (RFC 9207 §2): iss, exactly once, on every authorization response, success or error.
func TestRFC9700_IssOnEveryAuthorizationResponse(t *testing.T) {
	brokenSession := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer brokenSession.Close()
	cases := []struct {
		name     string
		mutate   func(f *fixture, q url.Values)
		person   string
		decision string // "" = no consent page expected
		want     string // "code" or the error
	}{
		{"code after consent", nil, "student", "approve", "code"},
		{"code from remembered consent", func(f *fixture, q url.Values) {
			f.code(authParams(q.Get("code_challenge")), "")
		}, "student", "", "code"},
		{"access_denied by the person", nil, "student", "deny", "access_denied"},
		{"access_denied: no role", nil, "nobody", "", "access_denied"},
		{"access_denied: student for an operator client", func(_ *fixture, q url.Values) {
			q.Set("client_id", operatorClient)
			q.Set("redirect_uri", opsRedirect)
			q.Set("scope", "courses:read")
		}, "student", "", "access_denied"},
		{"invalid_scope", func(_ *fixture, q url.Values) { q.Set("scope", "openid courses:write") }, "student", "", "invalid_scope"},
		{"invalid_request", func(_ *fixture, q url.Values) { q.Set("code_challenge_method", "plain") }, "student", "", "invalid_request"},
		{"unsupported_response_type", func(_ *fixture, q url.Values) { q.Set("response_type", "token") }, "student", "", "unsupported_response_type"},
		{"invalid_target", func(_ *fixture, q url.Values) { q.Set("resource", "https://other.example") }, "student", "", "invalid_target"},
		{"request_not_supported", func(_ *fixture, q url.Values) { q.Set("request_uri", "urn:x") }, "student", "", "request_not_supported"},
		{"login_required", func(_ *fixture, q url.Values) { q.Set("prompt", "none") }, "", "", "login_required"},
		{"consent_required", func(_ *fixture, q url.Values) { q.Set("prompt", "none") }, "student", "", "consent_required"},
		{"temporarily_unavailable", func(f *fixture, _ url.Values) {
			f.srv.cfg.SessionURL = brokenSession.URL
		}, "student", "", "temporarily_unavailable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			_, ch := pkce()
			q := authParams(ch)
			if tc.mutate != nil {
				tc.mutate(f, q)
			}
			rec := f.authorize(q, tc.person)
			if tc.decision != "" {
				rec = f.consent(rec, tc.person, tc.decision)
			}
			p := redirectParams(t, rec, q.Get("redirect_uri")+"?")
			if got := p["iss"]; len(got) != 1 || got[0] != issuer {
				t.Errorf("iss = %q, want exactly [%s]", got, issuer)
			}
			if p.Get("state") != "st-123" {
				t.Errorf("state not echoed: %v", p)
			}
			switch {
			case tc.want == "code" && (p.Get("code") == "" || p.Has("error")):
				t.Errorf("want a code: %v", p)
			case tc.want != "code" && (p.Get("error") != tc.want || p.Has("code")):
				t.Errorf("want error %s and no code: %v", tc.want, p)
			}
		})
	}
}

// RFC 9700 §2.1.1, §4.8: PKCE required, S256 only, verifier syntax checked (RFC 7636 §4.1), no downgrade.
func TestRFC9700_PKCERequiredS256OnlyAndNoDowngrade(t *testing.T) {
	f := newFixture(t)
	s256 := func(v string) string {
		sum := sha256.Sum256([]byte(v))
		return base64.RawURLEncoding.EncodeToString(sum[:])
	}

	t.Run("authorize", func(t *testing.T) {
		verifier, ch := pkce()
		cases := map[string]func(url.Values){
			"no challenge, no method (downgrade)": func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") },
			"no challenge":                        func(q url.Values) { q.Del("code_challenge") },
			"no method":                           func(q url.Values) { q.Del("code_challenge_method") },
			"plain":                               func(q url.Values) { q.Set("code_challenge_method", "plain") },
			"plain with the verifier as challenge": func(q url.Values) {
				q.Set("code_challenge_method", "plain")
				q.Set("code_challenge", verifier)
			},
			"lower-case s256":           func(q url.Values) { q.Set("code_challenge_method", "s256") },
			"challenge of 42 chars":     func(q url.Values) { q.Set("code_challenge", ch[:42]) },
			"challenge of 44 chars":     func(q url.Values) { q.Set("code_challenge", ch+"A") },
			"challenge not base64url":   func(q url.Values) { q.Set("code_challenge", ch[:42]+"+") },
			"challenge padded":          func(q url.Values) { q.Set("code_challenge", ch[:42]+"=") },
			"challenge repeated":        func(q url.Values) { q.Add("code_challenge", ch) },
			"method repeated":           func(q url.Values) { q.Add("code_challenge_method", "S256") },
			"challenge with whitespace": func(q url.Values) { q.Set("code_challenge", " "+ch[:42]) },
		}
		for name, mutate := range cases {
			t.Run(name, func(t *testing.T) {
				q := authParams(ch)
				mutate(q)
				p := redirectParams(t, f.authorize(q, "student"), memberRedirect+"?")
				if p.Get("error") != "invalid_request" || p.Has("code") {
					t.Errorf("want invalid_request and no code: %v", p)
				}
			})
		}
	})

	base := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
	v43 := base[:39] + "-._~"
	v128 := (base + base)[:124] + "-._~"
	t.Run("token", func(t *testing.T) {
		goodVerifier, ch := pkce()
		cases := []struct {
			name, verifier string
			drop           bool
			status         int
			err            string
		}{
			{"no verifier (downgrade)", "", true, 400, "invalid_request"},
			{"empty verifier", "", false, 400, "invalid_request"},
			{"42 characters", strings.Repeat("a", 42), false, 400, "invalid_request"},
			{"129 characters", strings.Repeat("a", 129), false, 400, "invalid_request"},
			{"reserved character +", strings.Repeat("a", 42) + "+", false, 400, "invalid_request"},
			{"percent sign", strings.Repeat("a", 42) + "%", false, 400, "invalid_request"},
			{"space", strings.Repeat("a", 42) + " ", false, 400, "invalid_request"},
			{"non-ASCII", strings.Repeat("a", 42) + "é", false, 400, "invalid_request"},
			{"well-formed but wrong", strings.Repeat("a", 43), false, 400, "invalid_grant"},
			{"the challenge as verifier (plain)", ch, false, 400, "invalid_grant"},
			{"right verifier", goodVerifier, false, 200, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				form := url.Values{"grant_type": {"authorization_code"}, "code": {f.code(authParams(ch), "")},
					"redirect_uri": {memberRedirect}, "client_id": {memberClient}, "resource": {issuer}}
				if !tc.drop {
					form.Set("code_verifier", tc.verifier)
				}
				status, m := f.token(form)
				if status != tc.status || (tc.err != "" && m["error"] != tc.err) {
					t.Errorf("got %d %v, want %d %s", status, m, tc.status, tc.err)
				}
			})
		}
		for _, v := range []string{v43, v128} {
			t.Run(fmt.Sprintf("boundary length %d", len(v)), func(t *testing.T) {
				code := f.code(authParams(s256(v)), v)
				if status, m := f.exchange(code, v); status != 200 {
					t.Errorf("a %d-character verifier of every unreserved class: %d %v", len(v), status, m)
				}
			})
		}
	})

	// The reverse downgrade: a code without a challenge is never issued
	// (above), and even a planted one is useless with any verifier.
	t.Run("code without a challenge", func(t *testing.T) {
		raw, now := newToken(prefixCode), f.clock.Now()
		err := f.store.PutCode(context.Background(), hashToken(raw), &store.Code{Request: store.AuthRequest{ClientID: memberClient,
			RedirectURI: memberRedirect, Scopes: []string{"openid"}, Resource: issuer, Audience: store.AudienceMember},
			Identity: people["student"], AuthTime: now, ExpiresAt: now.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if status, m := f.exchange(raw, v43); status != 400 || m["error"] != "invalid_grant" {
			t.Errorf("got %d %v", status, m)
		}
	})
}

// RFC 9700 §4.5 (RFC 6749 §4.1.2): a code is single-use, and a replay revokes the tokens it issued.
func TestRFC9700_CodeSingleUseReplayRevokesTokens(t *testing.T) {
	f := newFixture(t)
	v, ch := pkce()
	code := f.code(authParams(ch), v)
	status, first := f.exchange(code, v)
	if status != 200 {
		t.Fatalf("first exchange: %d %v", status, first)
	}
	at, rt := first["access_token"].(string), first["refresh_token"].(string)
	for i := range 2 {
		if status, m := f.exchange(code, v); status != 400 || m["error"] != "invalid_grant" || m["access_token"] != nil {
			t.Fatalf("replay %d: %d %v", i+1, status, m)
		}
	}
	if _, err := f.srv.LookupAccessToken(t.Context(), at); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("the first exchange's access token survived the replay: %v", err)
	}
	if status, m := f.token(refreshForm(rt)); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("the first exchange's refresh token survived the replay: %d %v", status, m)
	}
	if got := bcpIntrospect(f, at, memberClient); got["active"] != false {
		t.Errorf("introspection after the replay: %v", got)
	}
}

// RFC 9700 §4.5.3, §2.3: a code is bound to its client, redirect URI and resource (RFC 6749 §4.1.3, RFC 8707).
func TestRFC9700_CodeBoundToClientRedirectURIAndResource(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		mutate func(url.Values)
		status int
		err    string
	}{
		{"another public client", func(v url.Values) { v.Set("client_id", operatorClient) }, 400, "invalid_grant"},
		{"another confidential client, authenticated", func(v url.Values) {
			v.Set("client_id", confidential)
			v.Set("client_secret", portalSecret)
		}, 400, "invalid_grant"},
		{"unknown client", func(v url.Values) { v.Set("client_id", "evil-client") }, 401, "invalid_client"},
		{"other redirect URI", func(v url.Values) { v.Set("redirect_uri", memberRedirect+"/") }, 400, "invalid_grant"},
		{"loopback redirect URI", func(v url.Values) { v.Set("redirect_uri", "http://127.0.0.1:5555/callback") }, 400, "invalid_grant"},
		{"no redirect URI", func(v url.Values) { v.Del("redirect_uri") }, 400, "invalid_request"},
		{"no resource", func(v url.Values) { v.Del("resource") }, 400, "invalid_target"},
		{"foreign resource", func(v url.Values) { v.Set("resource", "https://other.example") }, 400, "invalid_target"},
		{"resource with a path", func(v url.Values) { v.Set("resource", issuer+"/mcp") }, 400, "invalid_target"},
		{"resource over http", func(v url.Values) { v.Set("resource", "http://school.example") }, 400, "invalid_target"},
		{"a second resource", func(v url.Values) { v.Add("resource", "https://other.example") }, 400, "invalid_target"},
	}
	form := func() (url.Values, string) {
		v, ch := pkce()
		return url.Values{"grant_type": {"authorization_code"}, "code": {f.code(authParams(ch), v)},
			"redirect_uri": {memberRedirect}, "client_id": {memberClient}, "code_verifier": {v},
			"resource": {issuer}}, v
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := form()
			tc.mutate(v)
			if status, m := f.token(v); status != tc.status || m["error"] != tc.err || m["access_token"] != nil {
				t.Errorf("got %d %v, want %d %s", status, m, tc.status, tc.err)
			}
		})
	}
	// The bound exchange succeeds and the token carries the bindings.
	v, _ := form()
	status, m := f.token(v)
	if status != 200 {
		t.Fatalf("bound exchange: %d %v", status, m)
	}
	tok, err := f.srv.LookupAccessToken(t.Context(), m["access_token"].(string))
	if err != nil || tok.ClientID != memberClient || tok.Resource != issuer {
		t.Errorf("token bindings: %+v %v", tok, err)
	}
}

// RFC 9700 §2.2.2, §4.14.2: refresh tokens are client-bound and rotated; late reuse revokes the grant; scope never widens.
func TestRFC9700_RefreshTokenBoundRotatedReuseRevokesGrant(t *testing.T) {
	refresh := func(f *fixture, rt, client, secret, scope string) (int, map[string]any) {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {client}}
		if secret != "" {
			form.Set("client_secret", secret)
		}
		if scope != "" {
			form.Set("scope", scope)
		}
		return f.token(form)
	}

	t.Run("bound to the client", func(t *testing.T) {
		f := newFixture(t)
		rt := f.tokens()["refresh_token"].(string)
		for _, c := range []struct{ client, secret, err string }{
			{operatorClient, "", "invalid_grant"},
			{confidential, portalSecret, "invalid_grant"},
			{"evil-client", "", "invalid_client"},
		} {
			if status, m := refresh(f, rt, c.client, c.secret, ""); status == 200 || m["error"] != c.err {
				t.Errorf("%s: %d %v", c.client, status, m)
			}
		}
		if status, m := refresh(f, rt, memberClient, "", ""); status != 200 {
			t.Errorf("the owner's refresh after foreign attempts: %d %v", status, m)
		}
	})

	t.Run("rotated; reuse within grace; reuse after grace revokes the grant", func(t *testing.T) {
		f := newFixture(t)
		m1 := f.tokens()
		rt1 := m1["refresh_token"].(string)
		status, m2 := refresh(f, rt1, memberClient, "", "")
		rt2 := m2["refresh_token"].(string)
		if status != 200 || rt2 == rt1 || m2["access_token"] == m1["access_token"] {
			t.Fatalf("first rotation: %d %v", status, m2)
		}
		status, m3 := refresh(f, rt2, memberClient, "", "")
		rt3 := m3["refresh_token"].(string)
		if status != 200 || rt3 == rt2 {
			t.Fatalf("second rotation: %d %v", status, m3)
		}
		// Documented in token.go and boltstore/bolttokens.go: within RefreshGrace a
		// rotated token is treated as a concurrent retry and answered with
		// a fresh pair; the grant and its newest token stay valid.
		f.clock.Advance(DefaultRefreshGrace / 5)
		status, mg := refresh(f, rt2, memberClient, "", "")
		if status != 200 || mg["refresh_token"] == rt3 {
			t.Fatalf("reuse within the grace window: %d %v", status, mg)
		}
		if got := bcpIntrospect(f, rt3, memberClient); got["active"] != true {
			t.Fatalf("a retry within the grace window revoked the grant: %v", got)
		}
		// After the window, the same reuse is theft: the grant dies.
		f.clock.Advance(DefaultRefreshGrace)
		if status, m := refresh(f, rt2, memberClient, "", ""); status != 400 || m["error"] != "invalid_grant" {
			t.Fatalf("reuse after the grace window: %d %v", status, m)
		}
		for _, rt := range []string{rt3, mg["refresh_token"].(string)} {
			if status, m := refresh(f, rt, memberClient, "", ""); status != 400 || m["error"] != "invalid_grant" {
				t.Errorf("a refresh token of the revoked grant: %d %v", status, m)
			}
		}
		for _, m := range []map[string]any{m1, m2, m3, mg} {
			if _, err := f.srv.LookupAccessToken(t.Context(), m["access_token"].(string)); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("an access token of the revoked grant: %v", err)
			}
		}
	})

	t.Run("never widens scope", func(t *testing.T) {
		f := newFixture(t)
		v, ch := pkce()
		q := authParams(ch)
		q.Set("scope", "openid account:read")
		status, m := f.exchange(f.code(q, v), v)
		if status != 200 {
			t.Fatalf("exchange: %d %v", status, m)
		}
		rt := m["refresh_token"].(string)
		for _, scope := range []string{"openid account:write", "openid email", "courses:read", "wizardry", "account:read account:write"} {
			if status, m := refresh(f, rt, memberClient, "", scope); status != 400 || m["error"] != "invalid_scope" {
				t.Errorf("widening to %q: %d %v", scope, status, m)
			}
		}
		status, n := refresh(f, rt, memberClient, "", "account:read")
		if status != 200 || n["scope"] != "account:read" {
			t.Fatalf("narrowing: %d %v", status, n)
		}
		// The next refresh gets back the grant, never more.
		if status, n := refresh(f, n["refresh_token"].(string), memberClient, "", ""); status != 200 || n["scope"] != "openid account:read" {
			t.Errorf("refresh after narrowing: %d %v", status, n)
		}
	})

	t.Run("token types are not interchangeable", func(t *testing.T) {
		f := newFixture(t)
		m := f.tokens()
		if status, r := refresh(f, m["access_token"].(string), memberClient, "", ""); status != 400 || r["error"] != "invalid_grant" {
			t.Errorf("an access token as refresh token: %d %v", status, r)
		}
		if _, err := f.srv.LookupAccessToken(t.Context(), m["refresh_token"].(string)); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("a refresh token as access token: %v", err)
		}
	})
}

// RFC 9700 (updating RFC 6819 §5.1.4.1.3): no token, code or client secret is stored in clear.
func TestRFC9700_CredentialsHashedAtRest(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	var creds []bcpCred
	add := func(name, value string) { creds = append(creds, bcpCred{name, value}) }

	// A public client: authorize (consent CSRF), exchange, refresh.
	v, ch := pkce()
	page := f.authorize(authParams(ch), "student")
	add("consent CSRF token", reCSRF.FindStringSubmatch(page.Body.String())[1])
	code := redirectParams(t, f.consent(page, "student", "approve"), memberRedirect).Get("code")
	add("public client's code", code)
	add("PKCE verifier", v)
	_, m := f.exchange(code, v)
	add("public client's access token", m["access_token"].(string))
	add("public client's refresh token", m["refresh_token"].(string))
	_, m = f.token(refreshForm(m["refresh_token"].(string)))
	add("rotated access token", m["access_token"].(string))
	add("rotated refresh token", m["refresh_token"].(string))

	// A configured confidential client.
	add("vendor client secret", portalSecret)
	v, ch = pkce()
	q := authParams(ch)
	q.Set("client_id", confidential)
	code = f.code(q, v)
	add("confidential vendor's code", code)
	_, m = f.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {memberRedirect},
		"client_id": {confidential}, "client_secret": {portalSecret}, "code_verifier": {v}, "resource": {issuer}})
	add("confidential vendor's access token", m["access_token"].(string))

	// A confidential member application created by an operator.
	app, err := f.srv.CreateApp(context.Background(), AppSpec{Name: "Vault", RedirectURIs: []string{appRedirect},
		Scopes: []string{"openid", "account:read"}, Confidential: true}, "")
	if err != nil || app.ClientSecret == "" {
		t.Fatalf("CreateApp: %+v %v", app, err)
	}
	add("member application secret", app.ClientSecret)
	v, ch = pkce()
	code = f.code(appAuthParams(app.ClientID, ch, "openid account:read"), v)
	add("member application's code", code)
	status, m := f.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {appRedirect},
		"client_id": {app.ClientID}, "client_secret": {app.ClientSecret}, "code_verifier": {v}, "resource": {issuer}})
	if status != 200 {
		t.Fatalf("member application exchange: %d %v", status, m)
	}
	add("member application's access token", m["access_token"].(string))
	add("member application's refresh token", m["refresh_token"].(string))
	_, m = f.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {m["refresh_token"].(string)},
		"client_id": {app.ClientID}, "client_secret": {app.ClientSecret}})
	add("member application's rotated refresh token", m["refresh_token"].(string))
	// A loopback client registered with client_secret_post.
	_, reg := f.register("application/json", `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/cb"],`+
		`"token_endpoint_auth_method":"client_secret_post"}`)
	add("loopback client's registered secret", reg["client_secret"].(string))

	_, regenerated, err := f.srv.RegenerateSecret(context.Background(), app.ClientID)
	if err != nil {
		t.Fatal(err)
	}
	add("regenerated secret", regenerated)

	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	// The file is what we think it is: it holds the hashes.
	if !bytes.Contains(raw, []byte(hashToken(regenerated))) {
		t.Fatal("the store file holds no secret hash; is this the right file?")
	}
	for _, c := range creds {
		for _, form := range c.forms() {
			if bytes.Contains(raw, []byte(form)) {
				t.Errorf("the store file holds the %s in clear", c.name)
			}
		}
	}
}

// RFC 9700 §2.5 (RFC 6749 §10.10): secrets, PKCE verifiers and CSRF tokens are compared in constant time, never with ==.
func TestRFC9700_SecretComparisonsAreConstantTime(t *testing.T) {
	t.Run("client secrets", func(t *testing.T) {
		stored := hashSecret("sgcs_right")
		for _, c := range []struct {
			presented, stored string
			ok                bool
		}{
			{"sgcs_right", stored, true},
			{"sgcs_wrong", stored, false},
			{"sgcs_righ", stored, false},
			{"", stored, false},
			{stored, stored, false}, // the hash is not the secret
			{"sgcs_right", "", false},
			{"", "", false},
		} {
			if got := secretMatches(c.presented, c.stored); got != c.ok {
				t.Errorf("secretMatches(%q, %q) = %v", c.presented, c.stored, got)
			}
		}
	})
	t.Run("PKCE", func(t *testing.T) {
		v, ch := pkce()
		for _, c := range []struct {
			verifier, challenge string
			ok                  bool
		}{
			{v, ch, true},
			{v + "x", ch, false},
			{ch, ch, false}, // plain
			{v, "", false},
			{"", "", false},
		} {
			if got := pkceMatches(c.verifier, c.challenge); got != c.ok {
				t.Errorf("pkceMatches(%q, %q) = %v", c.verifier, c.challenge, got)
			}
		}
	})
	// A guard on the source: no == or != (nor bytes.Equal) on a value
	// named like a secret, outside comparisons with a literal ("", nil).
	t.Run("no == on secrets in production code", func(t *testing.T) {
		secretish := regexp.MustCompile(`(?i)secret|csrf|verifier|challenge|password|hmac|\bmac\b|hash`)
		var files []string
		for _, dir := range []string{".", "../policy", "../pages"} {
			m, err := filepath.Glob(filepath.Join(dir, "*.go"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range m {
				if !strings.HasSuffix(f, "_test.go") {
					files = append(files, f)
				}
			}
		}
		if len(files) < 10 {
			t.Fatalf("found only %v", files)
		}
		fset := token.NewFileSet()
		for _, name := range files {
			file, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				var x, y ast.Expr
				switch n := n.(type) {
				case *ast.BinaryExpr:
					if n.Op != token.EQL && n.Op != token.NEQ {
						return true
					}
					x, y = n.X, n.Y
				case *ast.CallExpr:
					if fn := types.ExprString(n.Fun); (fn == "bytes.Equal" || fn == "strings.EqualFold") && len(n.Args) == 2 {
						x, y = n.Args[0], n.Args[1]
					} else {
						return true
					}
				default:
					return true
				}
				if isLiteral(x) || isLiteral(y) {
					return true
				}
				if s := types.ExprString(x) + " " + types.ExprString(y); secretish.MatchString(s) {
					t.Errorf("%s: %s compared with a plain operator; use subtle.ConstantTimeCompare or hmac.Equal",
						fset.Position(n.Pos()), s)
				}
				return true
			})
		}
	})
}

func isLiteral(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.Ident:
		return e.Name == "nil" || e.Name == "true" || e.Name == "false"
	}
	return false
}

// RFC 9700 §4.2, §4.3 (RFC 6750 §5.3): no credential in logs or URLs, except the code in the callback.
func TestRFC9700_NoCredentialsInURLsOrLogs(t *testing.T) {
	var logs schooltest.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prev := slog.Default()
	slog.SetDefault(logger) // catches anything that bypasses the server's logger
	t.Cleanup(func() { slog.SetDefault(prev) })
	f := newFixture(t)
	f.srv.cfg.Logger = logger
	f.enableMCP()

	var seen []*httptest.ResponseRecorder
	keep := func(rec *httptest.ResponseRecorder) *httptest.ResponseRecorder {
		seen = append(seen, rec)
		return rec
	}
	post := func(path string, form url.Values) map[string]any {
		rec := keep(f.serve("POST", path, strings.NewReader(form.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}))
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return m
	}
	var creds []bcpCred
	var codes []string
	add := func(name, value string) {
		if value == "" {
			t.Fatalf("no %s", name)
		}
		creds = append(creds, bcpCred{name, value})
	}
	flow := func(clientID, secret, redirect, scope, person string) (map[string]any, url.Values) {
		v, ch := pkce()
		q := authParams(ch)
		q.Set("client_id", clientID)
		q.Set("redirect_uri", redirect)
		q.Set("scope", scope)
		rec := keep(f.authorize(q, person))
		if rec.Code == http.StatusOK {
			add("consent CSRF token", reCSRF.FindStringSubmatch(rec.Body.String())[1])
			rec = keep(f.consent(rec, person, "approve"))
		}
		code := redirectParams(t, rec, redirect+"?").Get("code")
		codes = append(codes, code)
		add("code", code)
		add("PKCE verifier", v)
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
			"client_id": {clientID}, "code_verifier": {v}, "resource": {issuer}}
		if secret != "" {
			form.Set("client_secret", secret)
		}
		m := post(sitepath.Token, form)
		add("access token", m["access_token"].(string))
		add("refresh token", m["refresh_token"].(string))
		return m, form
	}

	// Public member client: authorize, exchange, refresh, userinfo,
	// introspect, revoke.
	_, replayed := flow(memberClient, "", memberRedirect, "openid profile email account:read", "student")
	post(sitepath.Token, replayed) // a replayed code: refused, its grant revoked
	m, _ := flow(memberClient, "", memberRedirect, "openid profile email account:read", "student")
	r := post(sitepath.Token, refreshForm(m["refresh_token"].(string)))
	add("rotated access token", r["access_token"].(string))
	add("rotated refresh token", r["refresh_token"].(string))
	at, rt := r["access_token"].(string), r["refresh_token"].(string)
	keep(f.serve("GET", sitepath.UserInfo, nil, map[string]string{"Authorization": "Bearer " + at}))
	keep(f.serve("GET", sitepath.UserInfo, nil, map[string]string{"Authorization": "Bearer " + at + "x"}))
	post(sitepath.Introspect, url.Values{"token": {at}, "client_id": {memberClient}})
	post(sitepath.Introspect, url.Values{"token": {rt}, "client_id": {memberClient}})
	post(sitepath.Revoke, url.Values{"token": {at}, "client_id": {memberClient}})
	post(sitepath.Revoke, url.Values{"token": {rt}, "client_id": {memberClient}})
	// A refresh token reused after the grace window.
	f.clock.Advance(time.Minute)
	post(sitepath.Token, refreshForm(m["refresh_token"].(string)))

	// Confidential vendor.
	add("vendor client secret", portalSecret)
	flow(confidential, portalSecret, memberRedirect, "openid account:read", "student")
	post(sitepath.Token, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"sgrt_x"}, "client_id": {confidential},
		"client_secret": {portalSecret + "x"}})

	// Confidential member application, its secret regenerated (the
	// admin area's pages, which show both, are package pages' test).
	appID, secret := f.newApp("Logged App", "confidential", "openid", "account:read")
	add("member application secret", secret)
	m, _ = flow(appID, secret, appRedirect, "openid account:read", "student")
	post(sitepath.Token, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {m["refresh_token"].(string)},
		"client_id": {appID}, "client_secret": {secret}})
	_, regenerated, err := f.srv.RegenerateSecret(context.Background(), appID)
	if err != nil {
		t.Fatal(err)
	}
	add("regenerated secret", regenerated)

	// A failing session lookup is logged.
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer broken.Close()
	f.srv.cfg.SessionURL = broken.URL
	_, ch := pkce()
	keep(f.authorize(authParams(ch), "student"))

	// Tokens in a URL are refused outright.
	// (RFC 6750 §3.1: invalid_request, 400), even beside a valid header.
	for _, hdr := range []map[string]string{nil, {"Authorization": "Bearer " + at}} {
		rec := keep(f.serve("GET", sitepath.UserInfo+"?access_token="+url.QueryEscape(at), nil, hdr))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="invalid_request"`) {
			t.Errorf("access token in the query: %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
	}
	if rec := keep(f.serve("POST", sitepath.Token+"?grant_type=refresh_token&refresh_token="+url.QueryEscape(rt),
		strings.NewReader("client_id="+memberClient), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})); rec.Code != http.StatusBadRequest {
		t.Errorf("token request parameters in the query: %d", rec.Code)
	}

	out := logs.String()
	if !strings.Contains(out, "member application created") || !strings.Contains(out, "session lookup failed") {
		t.Fatalf("the logger did not capture the server's logs:\n%s", out)
	}
	for _, c := range creds {
		for _, form := range c.forms() {
			if strings.Contains(out, form) {
				t.Errorf("the logs hold a %s", c.name)
			}
		}
	}
	// Redirects: only the callback carries the code, in its code parameter.
	nLoc := 0
	for _, rec := range seen {
		loc := rec.Header().Get("Location")
		if loc == "" {
			continue
		}
		nLoc++
		u, err := url.Parse(loc)
		if err != nil {
			t.Fatalf("Location %q: %v", loc, err)
		}
		rest := loc
		if code := u.Query().Get("code"); code != "" {
			if !strings.HasPrefix(loc, memberRedirect+"?") && !strings.HasPrefix(loc, appRedirect+"?") {
				t.Errorf("a code sent somewhere other than a registered callback: %s", loc)
			}
			q := u.Query()
			q.Del("code")
			rest = u.Scheme + "://" + u.Host + u.Path + "?" + q.Encode()
		}
		for _, c := range creds {
			for _, form := range c.forms() {
				if strings.Contains(rest, form) || strings.Contains(rest, url.QueryEscape(form)) {
					t.Errorf("a %s travels in the Location %s", c.name, loc)
				}
			}
		}
	}
	if nLoc < len(codes) {
		t.Errorf("only %d redirects seen for %d codes", nLoc, len(codes))
	}
	// Nor is any token echoed in a header.
	for _, rec := range seen {
		for k, vs := range rec.Header() {
			for _, v := range vs {
				for _, c := range creds {
					if k != "Location" && strings.Contains(v, c.value) {
						t.Errorf("header %s carries a %s", k, c.name)
					}
				}
			}
		}
	}
}

// RFC 9700 §3 (attacker-chosen endpoints): metadata-document fetches never reach internal addresses (SSRF).
func TestRFC9700_MetadataDocumentFetchBlocksInternalAddresses(t *testing.T) {
	// The BCP has no SSRF section of its own; the Client ID Metadata
	// Document draft's security considerations ask for this. Blocked: by
	// address, by a DNS name resolving there, and by redirect.
	blocked := map[string]string{
		"loopback":              "127.0.0.1",
		"loopback, other":       "127.3.2.1",
		"unspecified":           "0.0.0.0",
		"RFC 1918 10/8":         "10.0.0.5",
		"RFC 1918 172.16/12":    "172.31.255.254",
		"RFC 1918 192.168/16":   "192.168.1.1",
		"link-local (cloud)":    "169.254.169.254",
		"CGNAT 100.64/10 start": "100.64.0.1",
		"CGNAT 100.64/10 end":   "100.127.255.254",
		"benchmark 198.18/15":   "198.18.0.1",
		"benchmark, upper half": "198.19.255.254",
		"IETF 192.0.0/24":       "192.0.0.8",
		"multicast":             "224.0.0.251",
		"broadcast":             "255.255.255.255",
		"IPv6 loopback":         "::1",
		"IPv6 unspecified":      "::",
		"IPv6 link-local":       "fe80::1",
		"IPv6 unique-local":     "fd00::1",
		"IPv4-mapped private":   "::ffff:10.0.0.1",
		"NAT64 of loopback":     "64:ff9b::7f00:1",
		"NAT64 of 10/8":         "64:ff9b::a00:5",
		"NAT64 local-use /48":   "64:ff9b:1::a00:5",
		"6to4 of 10/8":          "2002:a00:5::1",
		"6to4 of loopback":      "2002:7f00:1::1",
		"Teredo":                "2001:0:a00:5::1",
		"documentation IPv6":    "2001:db8::1",
	}
	public := []string{"8.8.8.8", "100.128.0.1", "100.63.255.255", "198.17.255.255", "198.20.0.1",
		"172.32.0.1", "2606:4700:4700::1111", "2a00:1450:4001::1"}

	t.Run("address classes", func(t *testing.T) {
		for name, s := range blocked {
			if publicAddress(netip.MustParseAddr(s)) {
				t.Errorf("%s (%s) is not blocked", name, s)
			}
		}
		for _, s := range public {
			if !publicAddress(netip.MustParseAddr(s)) {
				t.Errorf("public %s is blocked", s)
			}
		}
	})

	// The dialer's check runs on the address actually dialed, after DNS:
	// a fake DNS server maps a harmless-looking name to each class.
	t.Run("DNS names resolving there", func(t *testing.T) {
		table := map[string]netip.Addr{}
		names := map[string]string{}
		i := 0
		for name, s := range blocked {
			i++
			host := fmt.Sprintf("host%d.school-cdn.test", i)
			table[host] = netip.MustParseAddr(s)
			names[name] = host
		}
		resolver := bcpFakeDNS(t, table)
		for name, host := range names {
			t.Run(name, func(t *testing.T) {
				d := guardedDialer(false)
				d.Resolver = resolver
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
				defer cancel()
				conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, "443"))
				if conn != nil {
					conn.Close()
				}
				if errors.Is(err, syscall.EAFNOSUPPORT) {
					t.Skip("no IPv6 sockets here")
				}
				if !errors.Is(err, errBlockedAddress) {
					t.Errorf("dialing %s (→ %s): %v, want a blocked-address error", host, table[host], err)
				}
			})
		}
		// And the real resolver's localhost.
		if _, err := fetchClient(false, nil).Get("https://localhost:1/client.json"); !errors.Is(err, errBlockedAddress) {
			t.Errorf("localhost: %v", err)
		}
	})

	// Through the authorization endpoint: an IP-literal client_id, or the
	// loopback document server by name, is refused before any byte is sent.
	t.Run("authorize", func(t *testing.T) {
		d := newDocServer(t)
		port := d.URL[strings.LastIndex(d.URL, ":"):]
		d.docs["/client.json"] = `{"client_id":"%s","redirect_uris":["https://localhost` + port + `/cb"]}`
		ids := []string{"https://localhost" + port + "/client.json", d.URL + "/client.json"}
		for _, s := range []string{"10.0.0.5", "169.254.169.254", "100.64.0.1", "198.18.0.1", "[64:ff9b::a00:5]", "[2002:a00:5::1]", "[::ffff:127.0.0.1]"} {
			ids = append(ids, "https://"+s+"/client.json")
		}
		for _, id := range ids {
			t.Run(id, func(t *testing.T) {
				f := newFixture(t)
				f.useMetadata(d, MetadataDocumentsConfig{})
				rec := f.authorize(metadataAuthParams(id, "https://localhost"+port+"/cb", "openid"), "student")
				if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
					t.Fatalf("got %d Location=%q", rec.Code, rec.Header().Get("Location"))
				}
				if body := rec.Body.String(); !strings.Contains(body, "address this school does not fetch from") {
					if strings.HasPrefix(id, "https://[") && strings.Contains(body, "connection failed") {
						t.Skip("no IPv6 sockets here")
					}
					t.Errorf("not refused as an internal address:\n%s", body)
				}
			})
		}
		if n := d.hits.Load(); n != 0 {
			t.Errorf("the internal document server was reached %d times", n)
		}
	})

	// A document host (allowed here, standing in for a public one) that
	// redirects inward: redirects are not followed at all.
	t.Run("redirects", func(t *testing.T) {
		var internalHits atomic.Int64
		internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			internalHits.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{}`))
		}))
		defer internal.Close()
		for _, status := range []int{301, 302, 303, 307, 308} {
			front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, internal.URL+"/client.json", status)
			}))
			defer front.Close()
			f := newFixture(t)
			pool := x509.NewCertPool()
			pool.AddCert(front.Certificate())
			f.srv.metadata = newMetadataResolver(MetadataDocumentsConfig{AllowPrivateNetworks: true, RootCAs: pool}, f.clock.Now)
			id := front.URL + "/client.json"
			rec := f.authorize(metadataAuthParams(id, "https://evil.example/cb", "openid"), "student")
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "redirects are not followed") {
				t.Errorf("%d redirect: got %d\n%s", status, rec.Code, rec.Body)
			}
			if _, err := f.store.GetClient(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%d redirect left a client: %v", status, err)
			}
		}
		if n := internalHits.Load(); n != 0 {
			t.Errorf("the redirect target was fetched %d times", n)
		}
	})
}

// RFC 9700 §4.13, §4.4.2.1: the issuer is configuration; forged Host and forwarding headers change nothing.
func TestRFC9700_IssuerNeverTakenFromRequestHeaders(t *testing.T) {
	f := newFixture(t)
	const evil = "evil.example"
	forged := func(method, path string, body string, hdr map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "http://"+evil+":8443"+path, strings.NewReader(body))
		req.Host = evil + ":8443"
		for k, v := range map[string]string{
			"X-Forwarded-Host": evil, "X-Forwarded-Proto": "http", "X-Forwarded-Port": "8443",
			"X-Forwarded-Server": evil, "X-Original-Host": evil, "X-Host": evil,
			"Forwarded": "for=198.51.100.7;host=" + evil + ";proto=http",
		} {
			req.Header.Set(k, v)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		return rec
	}
	noEvil := func(what, s string) {
		t.Helper()
		if strings.Contains(s, evil) {
			t.Errorf("%s follows the forged headers: %s", what, s)
		}
	}

	for _, p := range []string{sitepath.ASMetadata, sitepath.OIDCConfig, sitepath.ProtectedResource} {
		rec := forged("GET", p, "", nil)
		var doc map[string]any
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
			t.Fatalf("%s: %d", p, rec.Code)
		}
		noEvil(p, rec.Body.String())
		if want := "issuer"; p == sitepath.ProtectedResource {
			if doc["resource"] != issuer {
				t.Errorf("%s resource = %v", p, doc["resource"])
			}
		} else if doc[want] != issuer {
			t.Errorf("%s issuer = %v", p, doc[want])
		}
	}

	// The login redirect, iss on the callback, the ID token, introspection
	// and the resource challenge.
	v, ch := pkce()
	q := authParams(ch)
	login := forged("GET", sitepath.Authorize+"?"+q.Encode(), "", nil)
	if loc := login.Header().Get("Location"); !strings.HasPrefix(loc, issuer+"/login?return_to="+url.QueryEscape(issuer+sitepath.Authorize)) {
		t.Errorf("login redirect: %q", loc)
	}
	page := forged("GET", sitepath.Authorize+"?"+q.Encode(), "", map[string]string{"Cookie": "session=student"})
	form := url.Values{"request": {reRequest.FindStringSubmatch(page.Body.String())[1]},
		"csrf_token": {reCSRF.FindStringSubmatch(page.Body.String())[1]}, "decision": {"approve"}}
	cb := forged("POST", sitepath.Consent, form.Encode(), map[string]string{"Cookie": "session=student",
		"Content-Type": "application/x-www-form-urlencoded", "Origin": issuer})
	p := redirectParams(t, cb, memberRedirect+"?")
	if p.Get("iss") != issuer {
		t.Errorf("iss = %q", p.Get("iss"))
	}
	tokenForm := url.Values{"grant_type": {"authorization_code"}, "code": {p.Get("code")}, "redirect_uri": {memberRedirect},
		"client_id": {memberClient}, "code_verifier": {v}, "resource": {issuer}}
	rec := forged("POST", sitepath.Token, tokenForm.Encode(), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	var m map[string]any
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &m) != nil {
		t.Fatalf("token: %d %s", rec.Code, rec.Body)
	}
	if claims := verifyIDToken(t, f, m["id_token"].(string)); claims["iss"] != issuer {
		t.Errorf("id_token iss = %v", claims["iss"])
	}
	rec = forged("POST", sitepath.Introspect, url.Values{"token": {m["access_token"].(string)}, "client_id": {memberClient}}.Encode(),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	noEvil("introspection", rec.Body.String())
	var intro map[string]any
	if json.Unmarshal(rec.Body.Bytes(), &intro) != nil || intro["iss"] != issuer || intro["aud"] != issuer {
		t.Errorf("introspection: %s", rec.Body)
	}
	rec = forged("GET", sitepath.UserInfo, "", nil)
	if wa := rec.Header().Get("WWW-Authenticate"); !strings.Contains(wa, `resource_metadata="`+issuer+sitepath.ProtectedResource+`"`) {
		t.Errorf("challenge: %q", wa)
	}
}

// RFC 9700 §4.14.2 (RFC 7009 §2.1): a revoked token is refused on the very next request.
func TestRFC9700_RevokedAccessTokenRefusedImmediately(t *testing.T) {
	f := newFixture(t)
	revoke := func(tok string) {
		t.Helper()
		rec := f.serve("POST", sitepath.Revoke, strings.NewReader(url.Values{"token": {tok}, "client_id": {memberClient}}.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		if rec.Code != 200 {
			t.Fatalf("revoke: %d %s", rec.Code, rec.Body)
		}
	}
	userinfo := func(at string) int {
		return f.serve("GET", sitepath.UserInfo, nil, map[string]string{"Authorization": "Bearer " + at}).Code
	}
	for _, which := range []string{"access_token", "refresh_token"} {
		t.Run("revoking the "+which, func(t *testing.T) {
			m := f.tokens()
			at := m["access_token"].(string)
			for range 2 { // the second lookup is a cache hit
				if _, err := f.srv.LookupAccessToken(t.Context(), at); err != nil {
					t.Fatal(err)
				}
			}
			if userinfo(at) != 200 {
				t.Fatal("the fresh token does not work")
			}
			revoke(m[which].(string)) // the clock does not move
			if _, err := f.srv.LookupAccessToken(t.Context(), at); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("LookupAccessToken right after revocation: %v", err)
			}
			if code := userinfo(at); code != http.StatusUnauthorized {
				t.Errorf("userinfo right after revocation: %d", code)
			}
			if got := bcpIntrospect(f, at, memberClient); got["active"] != false {
				t.Errorf("introspection right after revocation: %v", got)
			}
		})
	}
}

// --- helpers of the checklist ---

// bcpCred is a credential the tests look for where it must not be.
type bcpCred struct{ name, value string }

// forms are the strings that would betray the credential: itself and,
// for prefixed tokens, its random part alone.
func (c bcpCred) forms() []string {
	out := []string{c.value}
	for _, p := range []string{prefixAccess, prefixRefresh, prefixCode, prefixSecret} {
		if rest, ok := strings.CutPrefix(c.value, p); ok {
			out = append(out, rest)
		}
	}
	return out
}

func bcpIntrospect(f *fixture, tok, client string) map[string]any {
	rec := f.serve("POST", sitepath.Introspect, strings.NewReader(url.Values{"token": {tok}, "client_id": {client}}.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		f.t.Fatalf("introspection: %d %s", rec.Code, rec.Body)
	}
	return m
}

// bcpFakeDNS is a resolver backed by a tiny DNS server on loopback that
// answers A and AAAA queries from table (every other name: no records).
func bcpFakeDNS(t *testing.T, table map[string]netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := bcpDNSAnswer(buf[:n], table); resp != nil {
				_, _ = pc.WriteTo(resp, addr)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// bcpDNSAnswer builds the response to one DNS query (RFC 1035 §4.1).
func bcpDNSAnswer(q []byte, table map[string]netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	i := 12
	var labels []string
	for {
		if i >= len(q) {
			return nil
		}
		l := int(q[i])
		i++
		if l == 0 {
			break
		}
		if l > 63 || i+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i:i+l]))
		i += l
	}
	if i+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i:])
	question := q[12 : i+4]
	addr, known := table[strings.ToLower(strings.Join(labels, "."))]
	var rdata []byte
	switch {
	case known && qtype == 1 && addr.Is4():
		rdata = addr.AsSlice()
	case known && qtype == 28 && addr.Is6():
		rdata = addr.AsSlice()
	}
	resp := make([]byte, 12, 12+len(question)+16+len(rdata))
	copy(resp, q[:2])
	flags := uint16(0x8180) // response, recursion desired and available
	if !known {
		flags |= 3 // NXDOMAIN
	}
	binary.BigEndian.PutUint16(resp[2:], flags)
	binary.BigEndian.PutUint16(resp[4:], 1)
	if rdata != nil {
		binary.BigEndian.PutUint16(resp[6:], 1)
	}
	resp = append(resp, question...)
	if rdata != nil {
		resp = append(resp, 0xc0, 0x0c) // the name of the question
		resp = binary.BigEndian.AppendUint16(resp, qtype)
		resp = binary.BigEndian.AppendUint16(resp, 1) // IN
		resp = binary.BigEndian.AppendUint32(resp, 60)
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(rdata)))
		resp = append(resp, rdata...)
	}
	return resp
}

// TestDecisions pins the shared rules every store applies.
func TestDecisions(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	const grace = 30 * time.Second
	for _, c := range []struct {
		name string
		got  any
		want any
		err  error
	}{
		{"fresh code issues", store.DecideRedeem(&store.Code{}), store.RedeemIssue, nil},
		{"used code is a replay", store.DecideRedeem(&store.Code{Used: true, GrantID: "g"}), store.RedeemReplay, store.ErrCodeReuse},
		{"unrotated refresh rotates first", store.DecideRotate(&store.Token{}, now, grace), store.RotateFirst, nil},
		{"within grace rotates again", store.DecideRotate(&store.Token{RotatedAt: now.Add(-grace)}, now, grace), store.RotateAgain, nil},
		{"clock behind the first rotation rotates again", store.DecideRotate(&store.Token{RotatedAt: now.Add(time.Second)}, now, grace), store.RotateAgain, nil},
		{"after grace is a replay", store.DecideRotate(&store.Token{RotatedAt: now.Add(-grace - time.Nanosecond)}, now, grace), store.RotateReplay, store.ErrRefreshReuse},
		{"no grace: a second rotation later is a replay", store.DecideRotate(&store.Token{RotatedAt: now.Add(-time.Nanosecond)}, now, 0), store.RotateReplay, store.ErrRefreshReuse},
		{"no grace: at the same instant is a replay", store.DecideRotate(&store.Token{RotatedAt: now}, now, 0), store.RotateReplay, store.ErrRefreshReuse},
		{"no grace: a clock behind the first rotation is a replay", store.DecideRotate(&store.Token{RotatedAt: now.Add(time.Second)}, now, 0), store.RotateReplay, store.ErrRefreshReuse},
		{"access token revoked alone", store.DecideRevoke(&store.Token{Kind: store.TokenAccess}), store.RevokeOne, nil},
		{"refresh token ends its grant", store.DecideRevoke(&store.Token{Kind: store.TokenRefresh}), store.RevokeWholeGrant, nil},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
		var err error
		switch o := c.got.(type) {
		case store.RedeemOutcome:
			err = o.Err()
		case store.RotateOutcome:
			err = o.Err()
		}
		if err != c.err {
			t.Errorf("%s: Err() = %v, want %v", c.name, err, c.err)
		}
	}
}
