package authserver

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

func TestAuthorizeErrorPageNeverRedirects(t *testing.T) {
	f := newFixture(t)
	_, c := pkce()
	for name, mutate := range schooltest.UntrustedRedirects {
		t.Run(name, func(t *testing.T) {
			q := authParams(c)
			mutate(q)
			rec := f.authorize(q, "student")
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
				t.Fatalf("want a 400 error page, got %d Location=%q", rec.Code, rec.Header().Get("Location"))
			}
			// The error page's own headers are package pages' test.
			if !strings.Contains(rec.Header().Get("Content-Type"), "text/html") || !strings.Contains(rec.Body.String(), `id="error"`) {
				t.Errorf("not the error page: %v\n%s", rec.Header(), rec.Body)
			}
		})
	}
}

func TestAuthorizeErrorsRedirectWithStateAndIss(t *testing.T) {
	f := newFixture(t)
	_, c := pkce()
	cases := []struct {
		name   string
		mutate func(url.Values)
		code   string
	}{
		{"response type token", func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type"},
		{"missing response type", func(q url.Values) { q.Del("response_type") }, "invalid_request"},
		{"missing PKCE", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, "invalid_request"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, "invalid_request"},
		{"missing method", func(q url.Values) { q.Del("code_challenge_method") }, "invalid_request"},
		{"unknown method", func(q url.Values) { q.Set("code_challenge_method", "S512") }, "invalid_request"},
		{"short challenge", func(q url.Values) { q.Set("code_challenge", "abc") }, "invalid_request"},
		{"missing scope", func(q url.Values) { q.Del("scope") }, "invalid_request"},
		{"unknown scope", func(q url.Values) { q.Set("scope", "openid wizardry") }, "invalid_scope"},
		{"operator scope for member client", func(q url.Values) { q.Set("scope", "courses:write") }, "invalid_scope"},
		{"missing resource", func(q url.Values) { q.Del("resource") }, "invalid_target"},
		{"foreign resource", func(q url.Values) { q.Set("resource", "https://other.example") }, "invalid_target"},
		{"resource with path", func(q url.Values) { q.Set("resource", issuer+"/mcp") }, "invalid_target"},
		{"two resources", func(q url.Values) { q.Add("resource", issuer) }, "invalid_target"},
		{"repeated scope", func(q url.Values) { q.Add("scope", "openid") }, "invalid_request"},
		{"request object", func(q url.Values) { q.Set("request", "eyJ...") }, "request_not_supported"},
		// The description names the scope, but only in the characters
		// RFC 6749 allows there.
		{"unknown scope in hostile characters", func(q url.Values) { q.Set("scope", "openid wiz\"ard\\\u00e9\x7f") }, "invalid_scope"},
		{"unknown scope of 10 KB", func(q url.Values) { q.Set("scope", strings.Repeat("w", 10<<10)) }, "invalid_scope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := authParams(c)
			tc.mutate(q)
			p := redirectParams(t, f.authorize(q, "student"), memberRedirect)
			desc := p.Get("error_description")
			if p.Get("error") != tc.code || p.Get("state") != "st-123" || p.Get("iss") != issuer ||
				desc == "" || !isErrorText(desc) || len(desc) > maxErrorText || p.Get("code") != "" {
				t.Errorf("got %v, want error %s with state and iss", p, tc.code)
			}
		})
	}
}

func TestOperatorClientRules(t *testing.T) {
	f := newFixture(t)
	_, c := pkce()
	q := authParams(c)
	q.Set("client_id", operatorClient)
	q.Set("redirect_uri", "http://127.0.0.1:61000/cb") // loopback: any port
	q.Del("resource")

	q.Set("scope", "account:read")
	if p := redirectParams(t, f.authorize(q, "owner"), "http://127.0.0.1:61000/cb"); p.Get("error") != "invalid_scope" {
		t.Errorf("account:read for an operator client: %v", p)
	}
	q.Set("scope", "courses:read openid")
	if p := redirectParams(t, f.authorize(q, "student"), "http://127.0.0.1:61000/cb"); p.Get("error") != "access_denied" {
		t.Errorf("a student authorizing an operator client: %v", p)
	}
	if rec := f.authorize(q, "owner"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "courses:read") {
		t.Errorf("an owner should see the consent page: %d", rec.Code)
	}
	q.Set("redirect_uri", "http://127.0.0.1:61000/other")
	if rec := f.authorize(q, "owner"); rec.Code != http.StatusBadRequest {
		t.Errorf("loopback path must still match exactly: %d", rec.Code)
	}
}

func TestAuthorizeSendsStrangersToLogin(t *testing.T) {
	f := newFixture(t)
	_, c := pkce()
	q := authParams(c)
	for _, person := range []string{"", "unknown-cookie"} {
		rec := f.authorize(q, person)
		loc := rec.Header().Get("Location")
		if rec.Code != http.StatusFound || !strings.HasPrefix(loc, issuer+"/login?return_to=") {
			t.Fatalf("want a login redirect, got %d %q", rec.Code, loc)
		}
		u, _ := url.Parse(loc)
		back := u.Query().Get("return_to")
		if !strings.HasPrefix(back, issuer+sitepath.Authorize+"?") || !strings.Contains(back, "code_challenge="+c) {
			t.Errorf("return_to does not come back to this request: %s", back)
		}
	}
	q.Set("prompt", "none")
	if p := redirectParams(t, f.authorize(q, ""), memberRedirect); p.Get("error") != "login_required" {
		t.Errorf("prompt=none without a session: %v", p)
	}
	if p := redirectParams(t, f.authorize(q, "nobody"), memberRedirect); p.Get("error") != "access_denied" {
		t.Errorf("a person without a role: %v", p)
	}
}

func TestConsentDenied(t *testing.T) {
	f := newFixture(t)
	_, c := pkce()
	rec := f.authorize(authParams(c), "student")
	if rec.Code != http.StatusOK {
		t.Fatalf("consent page: %d %s", rec.Code, rec.Body.String())
	}
	p := redirectParams(t, f.consent(rec, "student", "deny"), memberRedirect)
	if p.Get("error") != "access_denied" || p.Get("iss") != issuer || p.Get("state") != "st-123" {
		t.Errorf("deny: %v", p)
	}
}

func TestConsentFormIsProtected(t *testing.T) {
	f := newFixture(t)
	_, c := pkce()
	post := func(form url.Values, person, origin string) int {
		hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Cookie": "session=" + person}
		if origin != "" {
			hdr["Origin"] = origin
		}
		return f.serve("POST", sitepath.Consent, strings.NewReader(form.Encode()), hdr).Code
	}
	page := f.authorize(authParams(c), "student").Body.String()
	id, csrf := reRequest.FindStringSubmatch(page)[1], reCSRF.FindStringSubmatch(page)[1]

	if code := post(url.Values{"request": {id}, "csrf_token": {csrf}, "decision": {"approve"}}, "student", "https://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-site form: %d", code)
	}
	if code := post(url.Values{"request": {id}, "csrf_token": {"forged"}, "decision": {"approve"}}, "student", ""); code != http.StatusForbidden {
		t.Errorf("forged CSRF token: %d", code)
	}
	// The request was consumed by the forged attempt: it cannot be replayed.
	if code := post(url.Values{"request": {id}, "csrf_token": {csrf}, "decision": {"approve"}}, "student", ""); code != http.StatusBadRequest {
		t.Errorf("replayed request: %d", code)
	}
	// Another person cannot answer someone else's request.
	page = f.authorize(authParams(c), "student").Body.String()
	id, csrf = reRequest.FindStringSubmatch(page)[1], reCSRF.FindStringSubmatch(page)[1]
	if code := post(url.Values{"request": {id}, "csrf_token": {csrf}, "decision": {"approve"}}, "student2", ""); code != http.StatusForbidden {
		t.Errorf("another person's session: %d", code)
	}
	if rec := f.serve("GET", sitepath.Consent, nil, nil); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET consent: %d", rec.Code)
	}
}

func TestRememberedConsent(t *testing.T) {
	f := newFixture(t)
	_, c := pkce()
	q := authParams(c)
	q.Set("scope", "openid account:read")
	f.code(q, "")
	// Same scopes: no page.
	rec := f.authorize(q, "student")
	if p := redirectParams(t, rec, memberRedirect); p.Get("code") == "" || p.Get("iss") != issuer {
		t.Errorf("remembered consent should skip the page: %v", p)
	}
	// A new scope asks again.
	q.Set("scope", "openid account:read email")
	if rec := f.authorize(q, "student"); rec.Code != http.StatusOK {
		t.Errorf("a new scope must ask again, got %d", rec.Code)
	}
	// prompt=consent always asks.
	q.Set("scope", "openid")
	q.Set("prompt", "consent")
	if rec := f.authorize(q, "student"); rec.Code != http.StatusOK {
		t.Errorf("prompt=consent must ask, got %d", rec.Code)
	}
}

// TestMemberScopeHint: a self-registered loopback client asking for a
// member scope is told how a member client is had; other operator
// clients (configured by the operator) are not.
func TestMemberScopeHint(t *testing.T) {
	for _, tc := range []struct {
		kind string
		hint bool
	}{{store.KindLoopback, true}, {store.KindVendor, false}} {
		c := &store.Client{Kind: tc.kind, Audience: store.AudienceOperator, Scopes: policy.AllScopes}
		e := checkScopes(c, []string{"openid", "account:read"})
		if e == nil || e.Code != "invalid_scope" {
			t.Fatalf("%s: %v, want invalid_scope", tc.kind, e)
		}
		if got := strings.Contains(e.Description, "member application"); got != tc.hint {
			t.Errorf("%s: description %q, hint %v, want %v", tc.kind, e.Description, got, tc.hint)
		}
		if !isErrorText(e.Description) || len(e.Description) > maxErrorText {
			t.Errorf("%s: %q is no whole error_description", tc.kind, e.Description)
		}
	}
}
