package pages

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/option"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// The parts of the RFC 9700 checklist (authserver's rfc9700_test.go)
// that the pages keep: their forms, their headers, their secrets.

// RFC 9700 §4.7, §4.16: every form (consent, admin area) needs a valid CSRF token, and its page cannot be framed.
func TestRFC9700_CSRFAndAntiFramingOnEveryForm(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	appID, _ := f.newApp("Framed", "confidential", "openid")
	const docID = "https://agent.example/client.json"
	if err := f.store.PutClient(context.Background(), &store.Client{ID: docID, Name: "Doc Agent", Kind: store.KindMetadata, Audience: store.AudienceMember,
		RedirectURIs: []string{"https://agent.example/cb"}, Scopes: authserver.DefaultMemberScopes, AuthMethod: "none"}); err != nil {
		t.Fatal(err)
	}
	_, ch := pkce()

	// Every page with a form: framing refused, every form a CSRF-carrying POST.
	reForm := regexp.MustCompile(`(?s)<form\b[^>]*>.*?</form>`)
	reAction := regexp.MustCompile(`<form method="post" action="([^"]+)">`)
	actions := map[string]bool{}
	for name, get := range map[string]func() *httptest.ResponseRecorder{
		"consent":        func() *httptest.ResponseRecorder { return f.authorize(authParams(ch), "student") },
		"admin overview": func() *httptest.ResponseRecorder { return f.adminGet(sitepath.AdminApplications, "owner") },
		"admin new":      func() *httptest.ResponseRecorder { return f.adminGet(adminPathNew, "owner") },
		"admin edit":     func() *httptest.ResponseRecorder { return f.adminGet(adminPathEdit+"?client_id="+appID, "owner") },
		"admin delete":   func() *httptest.ResponseRecorder { return f.adminGet(adminPathDelete+"?client_id="+appID, "owner") },
		"admin review": func() *httptest.ResponseRecorder {
			return f.adminGet(adminPathReview+"?client_id="+url.QueryEscape(docID), "owner")
		},
	} {
		rec := get()
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", name, rec.Code)
		}
		bcpCheckFraming(t, name, rec)
		forms := reForm.FindAllString(rec.Body.String(), -1)
		if len(forms) == 0 {
			t.Errorf("%s: no form", name)
		}
		for _, form := range forms {
			am := reAction.FindStringSubmatch(form)
			cm := reCSRF.FindStringSubmatch(form)
			if am == nil || cm == nil || cm[1] == "" {
				t.Errorf("%s: a form that is not a CSRF-protected POST:\n%s", name, form)
				continue
			}
			actions[am[1]] = true
		}
	}

	// The consent form.
	consentPost := func(request, csrf, origin string) *httptest.ResponseRecorder {
		hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Cookie": "session=student"}
		if origin != "" {
			hdr["Origin"] = origin
		}
		form := url.Values{"request": {request}, "decision": {"approve"}}
		if csrf != "" {
			form.Set("csrf_token", csrf)
		}
		return f.serve("POST", sitepath.Consent, strings.NewReader(form.Encode()), hdr)
	}
	pending := func() (string, string) {
		page := f.authorize(authParams(ch), "student").Body.String()
		return reRequest.FindStringSubmatch(page)[1], reCSRF.FindStringSubmatch(page)[1]
	}
	_, otherCSRF := pending()
	for name, attempt := range map[string]func(id, csrf string) *httptest.ResponseRecorder{
		"missing token":             func(id, _ string) *httptest.ResponseRecorder { return consentPost(id, "", "") },
		"tampered token":            func(id, csrf string) *httptest.ResponseRecorder { return consentPost(id, bcpTamper(csrf), "") },
		"another request's token":   func(id, _ string) *httptest.ResponseRecorder { return consentPost(id, otherCSRF, "") },
		"right token, foreign site": func(id, csrf string) *httptest.ResponseRecorder { return consentPost(id, csrf, "https://evil.example") },
	} {
		t.Run("consent/"+name, func(t *testing.T) {
			rec := attempt(pending())
			if rec.Code != http.StatusForbidden || rec.Header().Get("Location") != "" {
				t.Errorf("got %d Location=%q", rec.Code, rec.Header().Get("Location"))
			}
			bcpCheckFraming(t, name, rec)
		})
	}
	if id, csrf := pending(); consentPost(id, csrf, "").Code != http.StatusSeeOther {
		t.Fatal("control: the genuine consent form was refused")
	}

	// The admin forms: each refused without a valid token, nothing changed.
	key, err := f.srv.FormKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now()
	app, _ := f.store.GetClient(context.Background(), appID)
	secretHash := app.SecretHash
	nonce := reFormNonce.FindStringSubmatch(f.adminGet(adminPathNew, "owner").Body.String())[1]
	adminForms := []struct {
		name, target string
		form         url.Values
		unchanged    func() bool
	}{
		{"MCP connections switch", adminPathSwitch, url.Values{"enabled": {"off"}},
			f.mcpOn},
		{"create application", adminPathNew, url.Values{"name": {"Forged"}, "redirect_uris": {appRedirect},
			"scope": {"openid"}, "client_type": {"public"}, "form_nonce": {nonce}},
			func() bool { n, _ := f.store.CountClientsByKind(context.Background(), store.KindApp); return n == 1 }},
		{"edit application", adminPathEdit, url.Values{"client_id": {appID}, "name": {"Forged"},
			"redirect_uris": {"https://evil.example/cb"}, "scope": {"openid"}},
			func() bool { c, _ := f.store.GetClient(context.Background(), appID); return c.Name == "Framed" }},
		{"regenerate secret", adminPathSecret, url.Values{"client_id": {appID}},
			func() bool { c, _ := f.store.GetClient(context.Background(), appID); return c.SecretHash == secretHash }},
		{"delete client", adminPathDelete, url.Values{"client_id": {appID}},
			func() bool { _, err := f.store.GetClient(context.Background(), appID); return err == nil }},
		{"review metadata client", adminPathReview, url.Values{"client_id": {docID}, "status": {"reviewed"},
			"scope": {"openid", "account:write"}},
			func() bool { c, _ := f.store.GetClient(context.Background(), docID); return !c.Reviewed }},
	}
	tested := map[string]bool{sitepath.Consent: true}
	for _, af := range adminForms {
		tested[af.target] = true
		for _, tok := range []struct{ name, value string }{
			{"missing token", ""},
			{"tampered token", bcpTamper(adminCSRFToken(key, "operator-1", now))},
			{"token of another operator", adminCSRFToken(key, "operator-2", now)},
			{"expired token", adminCSRFToken(key, "operator-1", now.Add(-13*time.Hour))},
			{"consent-form token", otherCSRF},
		} {
			t.Run(af.name+"/"+tok.name, func(t *testing.T) {
				form := url.Values{}
				for k, v := range af.form {
					form[k] = v
				}
				if tok.value != "" {
					form.Set("csrf_token", tok.value)
				}
				rec := f.adminPost(af.target, "owner", form, nil)
				if rec.Code != http.StatusForbidden {
					t.Errorf("got %d", rec.Code)
				}
				if !af.unchanged() {
					t.Fatal("a refused form changed something")
				}
				bcpCheckFraming(t, af.name, rec)
			})
		}
	}
	for a := range actions {
		if !tested[a] {
			t.Errorf("a form posts to %s, which this checklist does not cover", a)
		}
	}
	// Control: the genuine admin form works.
	rec := f.adminPost(adminPathSwitch, "owner", url.Values{"enabled": {"off"}, "csrf_token": {f.adminCSRF()}}, nil)
	if rec.Code != http.StatusSeeOther || f.mcpOn() {
		t.Errorf("control: the genuine switch form: %d", rec.Code)
	}
}

// RFC 9700 §4.2.4: every HTML page (consent, error pages, admin area) sends Referrer-Policy: no-referrer.
func TestRFC9700_ReferrerPolicyOnEveryHTMLPage(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	appID, _ := f.newApp("Referrer", "confidential", "openid")
	_, ch := pkce()
	page := f.authorize(authParams(ch), "student").Body.String()
	pendingID := reRequest.FindStringSubmatch(page)[1]
	form := func(v url.Values) *strings.Reader { return strings.NewReader(v.Encode()) }
	formHdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Cookie": "session=student"}

	pages := []struct {
		name   string
		status int
		do     func() *httptest.ResponseRecorder
	}{
		{"consent page", 200, func() *httptest.ResponseRecorder { return f.authorize(authParams(ch), "student") }},
		{"authorize: unknown client", 400, func() *httptest.ResponseRecorder {
			q := authParams(ch)
			q.Set("client_id", "nope")
			return f.authorize(q, "student")
		}},
		{"authorize: metadata document refused", 400, func() *httptest.ResponseRecorder {
			q := authParams(ch)
			q.Set("client_id", "https://127.0.0.1/client.json")
			return f.authorize(q, "student")
		}},
		{"authorize: wrong method", 405, func() *httptest.ResponseRecorder { return f.serve("POST", sitepath.Authorize, nil, nil) }},
		{"consent: wrong method", 405, func() *httptest.ResponseRecorder { return f.serve("GET", sitepath.Consent, nil, nil) }},
		{"consent: unknown request", 400, func() *httptest.ResponseRecorder {
			return f.serve("POST", sitepath.Consent, form(url.Values{"request": {"nope"}}), formHdr)
		}},
		{"consent: forged token", 403, func() *httptest.ResponseRecorder {
			return f.serve("POST", sitepath.Consent, form(url.Values{"request": {pendingID}, "csrf_token": {"x"}}), formHdr)
		}},
		{"admin overview", 200, func() *httptest.ResponseRecorder { return f.adminGet(sitepath.AdminApplications, "owner") }},
		{"admin new", 200, func() *httptest.ResponseRecorder { return f.adminGet(adminPathNew, "owner") }},
		{"admin edit", 200, func() *httptest.ResponseRecorder { return f.adminGet(adminPathEdit+"?client_id="+appID, "owner") }},
		{"admin delete", 200, func() *httptest.ResponseRecorder { return f.adminGet(adminPathDelete+"?client_id="+appID, "owner") }},
		{"admin secret shown once", 200, func() *httptest.ResponseRecorder {
			return f.adminPost(adminPathSecret, "owner", url.Values{"client_id": {appID}, "csrf_token": {f.adminCSRF()}}, nil)
		}},
		{"admin refused form", 400, func() *httptest.ResponseRecorder {
			return f.adminPost(adminPathEdit, "owner", url.Values{"client_id": {appID}, "name": {""}, "csrf_token": {f.adminCSRF()}}, nil)
		}},
		{"admin: not an operator", 403, func() *httptest.ResponseRecorder { return f.adminGet(sitepath.AdminApplications, "student") }},
		{"admin: no such page", 404, func() *httptest.ResponseRecorder { return f.adminGet(sitepath.Admin+"/nope", "owner") }},
		{"admin: no such client", 404, func() *httptest.ResponseRecorder { return f.adminGet(adminPathEdit+"?client_id=x", "owner") }},
		{"admin: wrong method", 405, func() *httptest.ResponseRecorder { return f.serve("PUT", sitepath.AdminApplications, nil, nil) }},
		{"admin: CSRF refused", 403, func() *httptest.ResponseRecorder {
			return f.adminPost(adminPathSwitch, "owner", url.Values{"enabled": {"off"}}, nil)
		}},
		{"admin: form too large", 413, func() *httptest.ResponseRecorder {
			return f.adminPost(adminPathNew, "owner", url.Values{"name": {strings.Repeat("x", 40<<10)}}, nil)
		}},
		{"rate limited", 429, func() *httptest.ResponseRecorder {
			g := newFixtureWith(t, func(c *authserver.Config) {
				c.RateLimits = &authserver.RateLimitOptions{Limits: map[string]option.Rate{"authorize": {Events: 1, Period: option.Duration(time.Hour), Burst: 1}}}
			})
			g.authorize(authParams(ch), "student")
			return g.authorize(authParams(ch), "student")
		}},
	}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			rec := p.do()
			if rec.Code != p.status || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
				t.Fatalf("want an HTML %d page, got %d %q", p.status, rec.Code, rec.Header().Get("Content-Type"))
			}
			if got := rec.Header().Get("Referrer-Policy"); got != "no-referrer" {
				t.Errorf("Referrer-Policy = %q", got)
			}
		})
	}
	// The redirect that carries the code suppresses it too.
	rec := f.authorize(authParams(ch), "owner")
	if rec.Code != http.StatusOK {
		t.Fatalf("consent page for the owner: %d", rec.Code)
	}
	if got := f.consent(rec, "owner", "approve").Header().Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("code redirect: Referrer-Policy = %q", got)
	}
}

// RFC 9700 §2.5 (RFC 6749 §10.10): the admin area's CSRF tokens are
// compared in constant time (authserver's test of the source guards
// this package's code too).
func TestRFC9700_SecretComparisonsAreConstantTime(t *testing.T) {
	t.Run("admin CSRF", func(t *testing.T) {
		key, now := []byte(strings.Repeat("k", 32)), time.Unix(1.8e9, 0)
		tok := adminCSRFToken(key, "op", now)
		for _, c := range []struct {
			token, subject string
			ok             bool
		}{
			{tok, "op", true},
			{tok[:len(tok)-1], "op", false},
			{tok, "other", false},
			{strings.SplitN(tok, ".", 2)[0] + ".", "op", false},
			{"", "op", false},
		} {
			if got := checkAdminCSRF(key, c.subject, c.token, now); got != c.ok {
				t.Errorf("checkAdminCSRF(%q, %q) = %v", c.token, c.subject, got)
			}
		}
	})
}

// RFC 9700 §4.2, §4.3: a secret the admin area shows, once, on a page
// (creating or regenerating a confidential application's) is in no log
// and no URL; the rest of the checklist is authserver's.
func TestRFC9700_NoCredentialsInURLsOrLogs(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	created := f.createApp(appForm("Logged App", "confidential", "openid", "account:read"))
	secret := reClientSecret.FindStringSubmatch(created.Body.String())
	id := reClientID.FindStringSubmatch(created.Body.String())
	if created.Code != http.StatusOK || secret == nil || id == nil {
		t.Fatalf("creating: %d\n%s", created.Code, created.Body)
	}
	regen := f.adminPost(adminPathSecret, "owner", url.Values{"client_id": {id[1]}, "csrf_token": {f.adminCSRF()}}, nil)
	again := reClientSecret.FindStringSubmatch(regen.Body.String())
	if regen.Code != http.StatusOK || again == nil || again[1] == secret[1] {
		t.Fatalf("regenerating: %d\n%s", regen.Code, regen.Body)
	}
	out := f.logs.String()
	if !strings.Contains(out, "admin: member application created") || !strings.Contains(out, "admin: client secret regenerated") {
		t.Fatalf("the logger did not capture the pages' logs:\n%s", out)
	}
	for _, s := range []string{secret[1], again[1]} {
		if strings.Contains(out, s) {
			t.Errorf("the logs hold a secret")
		}
		for _, rec := range []*httptest.ResponseRecorder{created, regen} {
			if strings.Contains(rec.Header().Get("Location"), s) || rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("a secret in a URL, or a page with one that may be kept: %v", rec.Header())
			}
		}
	}
}

func bcpCheckFraming(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	h := rec.Header()
	if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("%s: framing not refused: XFO %q CSP %q", what, h.Get("X-Frame-Options"), h.Get("Content-Security-Policy"))
	}
}

func bcpTamper(tok string) string {
	if strings.HasSuffix(tok, "A") {
		return tok[:len(tok)-1] + "B"
	}
	return tok[:len(tok)-1] + "A"
}
