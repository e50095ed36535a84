package pages

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// What the server keeps, as these tests look for it in the store: the
// switch's setting, and a client secret's prefix (its hash is hashToken's).
const (
	settingMCPConnections = "mcp_connections"
	prefixSecret          = "sgcs_"
)

var (
	reFormNonce    = regexp.MustCompile(`name="form_nonce" value="([^"]+)"`)
	reClientID     = regexp.MustCompile(`id="client-id">([^<]+)<`)
	reClientSecret = regexp.MustCompile(`id="client-secret">([^<]+)<`)
)

const (
	appRedirect      = "https://tool.example/cb"
	appLoopback      = "http://127.0.0.1:7777/cb"
	appRedirectLines = appRedirect + "\r\n" + appLoopback + "\n"
)

func (f *fixture) adminGet(target, person string) *httptest.ResponseRecorder {
	hdr := map[string]string{}
	if person != "" {
		hdr["Cookie"] = "session=" + person
	}
	return f.serve("GET", target, nil, hdr)
}

// adminPost submits a form the way a browser on the site does; hdr
// overrides headers.
func (f *fixture) adminPost(target, person string, form url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": issuer,
		"Sec-Fetch-Site": "same-origin"}
	if person != "" {
		h["Cookie"] = "session=" + person
	}
	for k, v := range hdr {
		h[k] = v
	}
	return f.serve("POST", target, strings.NewReader(form.Encode()), h)
}

// adminCSRF returns the CSRF token of the owner's overview page.
func (f *fixture) adminCSRF() string {
	f.t.Helper()
	rec := f.adminGet(sitepath.AdminApplications, "owner")
	m := reCSRF.FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusOK || m == nil {
		f.t.Fatalf("no CSRF token on the overview: %d\n%s", rec.Code, rec.Body)
	}
	return m[1]
}

// mcpOn reads the MCP connections switch; the store must answer.
func (f *fixture) mcpOn() bool {
	f.t.Helper()
	on, err := f.srv.MCPConnectionsEnabled(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return on
}

func (f *fixture) enableMCP() {
	f.t.Helper()
	if err := f.srv.SetMCPConnections(context.Background(), true); err != nil {
		f.t.Fatal(err)
	}
}

// appForm is a valid creation form, without CSRF token and nonce.
func appForm(name, clientType string, scopes ...string) url.Values {
	return url.Values{"name": {name}, "redirect_uris": {appRedirectLines},
		"scope": scopes, "client_type": {clientType}}
}

// createApp fills in the creation form as the owner; it returns the
// response of the POST.
func (f *fixture) createApp(form url.Values) *httptest.ResponseRecorder {
	f.t.Helper()
	page := f.adminGet(adminPathNew, "owner")
	cm, nm := reCSRF.FindStringSubmatch(page.Body.String()), reFormNonce.FindStringSubmatch(page.Body.String())
	if page.Code != http.StatusOK || cm == nil || nm == nil {
		f.t.Fatalf("no creation form: %d\n%s", page.Code, page.Body)
	}
	form.Set("csrf_token", cm[1])
	form.Set("form_nonce", nm[1])
	return f.adminPost(adminPathNew, "owner", form, nil)
}

// newApp creates an application and returns its id and secret.
func (f *fixture) newApp(name, clientType string, scopes ...string) (string, string) {
	f.t.Helper()
	rec := f.createApp(appForm(name, clientType, scopes...))
	id := reClientID.FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusOK || id == nil {
		f.t.Fatalf("creating %s: %d\n%s", name, rec.Code, rec.Body)
	}
	secret := ""
	if m := reClientSecret.FindStringSubmatch(rec.Body.String()); m != nil {
		secret = m[1]
	}
	return id[1], secret
}

func appAuthParams(clientID, challenge, scope string) url.Values {
	q := authParams(challenge)
	q.Set("client_id", clientID)
	q.Set("redirect_uri", appRedirect)
	q.Set("scope", scope)
	return q
}

func checkPageHeaders(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	h := rec.Header()
	csp := h.Get("Content-Security-Policy")
	if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") ||
		!strings.Contains(csp, "form-action 'self'") || h.Get("Referrer-Policy") != "no-referrer" ||
		h.Get("Cache-Control") != "no-store" {
		t.Errorf("security headers missing: %v", h)
	}
	if h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("the admin area must not send CORS headers: %v", h)
	}
}

func TestAdminAccess(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, method, target, person string
		status                       int
		location                     string
		body                         string
	}{
		{"anonymous", "GET", sitepath.AdminApplications, "", http.StatusSeeOther,
			issuer + "/login?return_to=" + url.QueryEscape(issuer+sitepath.AdminApplications), ""},
		{"anonymous keeps the query", "GET", adminPathEdit + "?client_id=app_x", "", http.StatusSeeOther,
			issuer + "/login?return_to=" + url.QueryEscape(issuer+adminPathEdit+"?client_id=app_x"), ""},
		{"anonymous post", "POST", adminPathSwitch, "", http.StatusSeeOther,
			issuer + "/login?return_to=" + url.QueryEscape(issuer+sitepath.AdminApplications), ""},
		{"unknown session", "GET", sitepath.AdminApplications, "stranger", http.StatusSeeOther, issuer + "/login?", ""},
		{"student", "GET", sitepath.AdminApplications, "student", http.StatusForbidden, "", "operators"},
		{"no role", "GET", sitepath.AdminApplications, "nobody", http.StatusForbidden, "", "operators"},
		{"student post", "POST", adminPathSwitch, "student", http.StatusForbidden, "", "operators"},
		{"operator", "GET", sitepath.AdminApplications, "owner", http.StatusOK, "", `id="mcp-toggle"`},
		{"area root", "GET", sitepath.Admin, "owner", http.StatusSeeOther, sitepath.AdminApplications, ""},
		{"unknown page", "GET", sitepath.Admin + "/nope", "owner", http.StatusNotFound, "", "no such page"},
		{"method", "PUT", sitepath.AdminApplications, "owner", http.StatusMethodNotAllowed, "", ""},
		{"preflight gets no CORS", "OPTIONS", sitepath.AdminApplications, "owner", http.StatusMethodNotAllowed, "", ""},
		{"get on a form target", "GET", adminPathSwitch, "owner", http.StatusMethodNotAllowed, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rec *httptest.ResponseRecorder
			if tc.method == "POST" {
				rec = f.adminPost(tc.target, tc.person, url.Values{"enabled": {"on"}}, nil)
			} else {
				hdr := map[string]string{}
				if tc.person != "" {
					hdr["Cookie"] = "session=" + tc.person
				}
				rec = f.serve(tc.method, tc.target, nil, hdr)
			}
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d\n%s", rec.Code, tc.status, rec.Body)
			}
			if loc := rec.Header().Get("Location"); !strings.HasPrefix(loc, tc.location) || (tc.location == "") != (loc == "") {
				t.Errorf("Location %q, want %q", loc, tc.location)
			}
			if !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("body lacks %q:\n%s", tc.body, rec.Body)
			}
			checkPageHeaders(t, rec)
		})
	}
	if f.mcpOn() {
		t.Error("a refused request switched MCP connections on")
	}
	if !sitepath.IsAuthServer(adminPathReview) {
		t.Errorf("the admin area's pages are not routed to the authorization server")
	}
}

func TestAdminSwitch(t *testing.T) {
	f := newFixture(t)
	page := f.adminGet(sitepath.AdminApplications, "owner").Body.String()
	if !strings.Contains(page, `id="mcp-state">off<`) || strings.Contains(page, "apps-heading") ||
		strings.Contains(page, "metadata-heading") || !strings.Contains(page, "cannot authorize") {
		t.Fatalf("with the switch off the area shows only the switch:\n%s", page)
	}
	// Other pages are not there while off.
	if rec := f.adminGet(adminPathNew, "owner"); rec.Code != http.StatusSeeOther ||
		rec.Header().Get("Location") != sitepath.AdminApplications {
		t.Errorf("new while off: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	form := appForm("X", "public", "openid")
	form.Set("csrf_token", f.adminCSRF())
	form.Set("form_nonce", "n")
	if rec := f.adminPost(adminPathNew, "owner", form, nil); rec.Code != http.StatusConflict {
		t.Errorf("create while off: %d", rec.Code)
	}

	for _, step := range []struct {
		value, stored string
		on            bool
	}{{"on", "on", true}, {"on", "on", true}, {"off", "off", false}, {"on", "on", true}} {
		rec := f.adminPost(adminPathSwitch, "owner", url.Values{"enabled": {step.value}, "csrf_token": {f.adminCSRF()}}, nil)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != sitepath.AdminApplications+"?done="+step.value {
			t.Fatalf("switch %s: %d %q\n%s", step.value, rec.Code, rec.Header().Get("Location"), rec.Body)
		}
		v, err := f.store.GetSetting(context.Background(), settingMCPConnections)
		if err != nil || string(v) != step.stored || f.mcpOn() != step.on {
			t.Fatalf("after switching %s the store holds %q (%v)", step.value, v, err)
		}
	}
	page = f.adminGet(sitepath.AdminApplications+"?done=on", "owner").Body.String()
	for _, want := range []string{`id="mcp-state">on<`, "apps-heading", "metadata-heading", "loopback-heading",
		`id="notice"`, "Turn off MCP connections"} {
		if !strings.Contains(page, want) {
			t.Errorf("overview with the switch on lacks %q", want)
		}
	}
	if rec := f.adminPost(adminPathSwitch, "owner", url.Values{"enabled": {"maybe"}, "csrf_token": {f.adminCSRF()}}, nil); rec.Code != http.StatusBadRequest {
		t.Errorf("switch without a state: %d", rec.Code)
	}
	// The stored value wins over the Caddyfile's initial one on restart.
	again, err := authserver.New(t.Context(), authserver.Config{Issuer: issuer, SessionURL: issuer + "/session",
		Options: authserver.Options{MCPConnections: false}, Now: f.clock.Now}, f.store)
	if err != nil {
		t.Fatal(err)
	}
	if on, err := again.MCPConnectionsEnabled(t.Context()); err != nil || !on {
		t.Errorf("the switch did not survive a restart: %v %v", on, err)
	}
}

func TestAdminCreateApps(t *testing.T) {
	cases := []struct {
		kind, method string
	}{{"public", "none"}, {"confidential", "client_secret_post"}}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			f := newFixture(t)
			f.enableMCP()
			form := appForm("Study Buddy "+tc.kind, tc.kind, "openid", "profile", "account:read")
			rec := f.createApp(form)
			page := rec.Body.String()
			idm := reClientID.FindStringSubmatch(page)
			if rec.Code != http.StatusOK || idm == nil {
				t.Fatalf("create: %d\n%s", rec.Code, page)
			}
			checkPageHeaders(t, rec)
			id := idm[1]
			c, err := f.store.GetClient(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if c.Kind != store.KindApp || c.Audience != store.AudienceMember || c.AuthMethod != tc.method ||
				!strings.HasPrefix(id, "app_") || len(id) < 20 ||
				!slices.Equal(c.RedirectURIs, []string{appRedirect, appLoopback}) ||
				!slices.Equal(c.Scopes, []string{"openid", "profile", "account:read"}) {
				t.Errorf("stored client: %+v", c)
			}
			sm := reClientSecret.FindStringSubmatch(page)
			if tc.kind == "public" {
				if sm != nil || c.SecretHash != "" {
					t.Errorf("a public client got a secret: %v %q", sm, c.SecretHash)
				}
			} else {
				if sm == nil || !strings.HasPrefix(sm[1], prefixSecret) || len(sm[1]) < 40 {
					t.Fatalf("the secret is not shown once: %s", page)
				}
				raw, _ := json.Marshal(c)
				if c.SecretHash != hashToken(sm[1]) || strings.Contains(string(raw), sm[1]) {
					t.Errorf("the secret must be stored only as its hash: %s", raw)
				}
				if !strings.Contains(page, "shown only this once") {
					t.Error("the page does not say the secret is shown once")
				}
			}

			// Submitting the same form again creates nothing and reveals nothing.
			again := f.adminPost(adminPathNew, "owner", form, nil)
			if again.Code != http.StatusSeeOther || !strings.Contains(again.Header().Get("Location"), "done=resubmit") ||
				strings.Contains(again.Body.String(), prefixSecret) {
				t.Errorf("resubmission: %d %q", again.Code, again.Header().Get("Location"))
			}
			if n, _ := f.store.CountClientsByKind(context.Background(), store.KindApp); n != 1 {
				t.Errorf("%d applications after a resubmission", n)
			}
			edit := f.adminGet(again.Header().Get("Location"), "owner").Body.String()
			if !strings.Contains(edit, "already been submitted") || strings.Contains(edit, prefixSecret) {
				t.Errorf("edit page after resubmission:\n%s", edit)
			}

			// The overview lists it.
			over := f.adminGet(sitepath.AdminApplications, "owner").Body.String()
			if !strings.Contains(over, id) || !strings.Contains(over, "Study Buddy") || strings.Contains(over, `id="no-apps"`) {
				t.Errorf("overview does not list %s", id)
			}

			// Any member with a role may authorize it.
			for _, person := range []string{"student", "owner"} {
				verifier, challenge := pkce()
				q := appAuthParams(id, challenge, "openid account:read")
				auth := f.authorize(q, person)
				if auth.Code != http.StatusOK || !strings.Contains(auth.Body.String(), "Study Buddy") ||
					reCSRF.FindStringSubmatch(auth.Body.String()) == nil {
					t.Fatalf("authorize as %s: %d %s\n%s", person, auth.Code, auth.Header().Get("Location"), auth.Body)
				}
				code := redirectParams(t, f.consent(auth, person, "approve"), appRedirect).Get("code")
				tokenForm := url.Values{"grant_type": {"authorization_code"}, "code": {code},
					"redirect_uri": {appRedirect}, "client_id": {id}, "code_verifier": {verifier}, "resource": {issuer}}
				if sm != nil {
					tokenForm.Set("client_secret", sm[1])
				}
				if status, m := f.token(tokenForm); status != http.StatusOK || m["access_token"] == nil {
					t.Errorf("token for %s: %d %v", person, status, m)
				}
			}
			// Scopes it was not given are refused.
			_, challenge := pkce()
			p := redirectParams(t, f.authorize(appAuthParams(id, challenge, "openid account:write"), "student"), appRedirect)
			if p.Get("error") != "invalid_scope" {
				t.Errorf("a scope the operator did not choose: %v", p)
			}

			// With the switch off the application is unknown.
			f.adminPost(adminPathSwitch, "owner", url.Values{"enabled": {"off"}, "csrf_token": {f.adminCSRF()}}, nil)
			off := f.authorize(appAuthParams(id, challenge, "openid"), "student")
			if off.Code != http.StatusBadRequest || off.Header().Get("Location") != "" ||
				!strings.Contains(off.Body.String(), "not registered") {
				t.Errorf("authorize with the switch off: %d %q", off.Code, off.Header().Get("Location"))
			}
		})
	}
}

func TestAdminEditRegenerateDelete(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	id, secret := f.newApp("Planner", "confidential", "openid", "account:read")

	edit := f.adminGet(adminPathEdit+"?client_id="+id, "owner")
	if edit.Code != http.StatusOK || !strings.Contains(edit.Body.String(), `value="Planner"`) ||
		!strings.Contains(edit.Body.String(), `id="regenerate"`) {
		t.Fatalf("edit page: %d\n%s", edit.Code, edit.Body)
	}
	form := url.Values{"client_id": {id}, "name": {"Planner 2"}, "redirect_uris": {"https://planner.example/back"},
		"scope": {"email", "openid", "account:write"}, "csrf_token": {f.adminCSRF()}}
	rec := f.adminPost(adminPathEdit, "owner", form, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != sitepath.AdminApplications+"?done=saved" {
		t.Fatalf("save: %d %q\n%s", rec.Code, rec.Header().Get("Location"), rec.Body)
	}
	c, _ := f.store.GetClient(context.Background(), id)
	if c.Name != "Planner 2" || !slices.Equal(c.RedirectURIs, []string{"https://planner.example/back"}) ||
		!slices.Equal(c.Scopes, []string{"openid", "email", "account:write"}) || c.SecretHash != hashToken(secret) {
		t.Errorf("after edit: %+v", c)
	}

	// A token issued before the secret is regenerated and the client deleted.
	verifier, challenge := pkce()
	q := appAuthParams(id, challenge, "openid account:write")
	q.Set("redirect_uri", "https://planner.example/back")
	code := redirectParams(t, f.consent(f.authorize(q, "student"), "student", "approve"), "https://planner.example/back").Get("code")
	status, m := f.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_secret": {secret},
		"redirect_uri": {"https://planner.example/back"}, "client_id": {id}, "code_verifier": {verifier}, "resource": {issuer}})
	if status != http.StatusOK {
		t.Fatalf("token: %d %v", status, m)
	}
	access := m["access_token"].(string)

	rec = f.adminPost(adminPathSecret, "owner", url.Values{"client_id": {id}, "csrf_token": {f.adminCSRF()}}, nil)
	sm := reClientSecret.FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusOK || sm == nil || sm[1] == secret {
		t.Fatalf("regenerate: %d\n%s", rec.Code, rec.Body)
	}
	c, _ = f.store.GetClient(context.Background(), id)
	if c.SecretHash != hashToken(sm[1]) || c.SecretHash == hashToken(secret) {
		t.Error("the new secret is not the stored one, or the old one still matches")
	}
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {m["refresh_token"].(string)}, "client_id": {id}}
	refresh.Set("client_secret", secret)
	if status, _ := f.token(refresh); status == http.StatusOK {
		t.Error("the old secret still authenticates")
	}

	confirm := f.adminGet(adminPathDelete+"?client_id="+id, "owner")
	if confirm.Code != http.StatusOK || !strings.Contains(confirm.Body.String(), `id="confirm-delete"`) {
		t.Fatalf("delete confirmation: %d\n%s", confirm.Code, confirm.Body)
	}
	if _, err := f.srv.LookupAccessToken(t.Context(), access); err != nil {
		t.Fatalf("token before delete: %v", err)
	}
	rec = f.adminPost(adminPathDelete, "owner", url.Values{"client_id": {id}, "csrf_token": {f.adminCSRF()}}, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != sitepath.AdminApplications+"?done=deleted" {
		t.Fatalf("delete: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if _, err := f.store.GetClient(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("still stored: %v", err)
	}
	if _, err := f.srv.LookupAccessToken(t.Context(), access); !errors.Is(err, authserver.ErrInvalidToken) {
		t.Errorf("a deleted client's token still works: %v", err)
	}
	for _, target := range []string{adminPathEdit + "?client_id=" + id, adminPathDelete + "?client_id=" + id} {
		if rec := f.adminGet(target, "owner"); rec.Code != http.StatusNotFound {
			t.Errorf("%s after delete: %d", target, rec.Code)
		}
	}

	// A public application has no secret to regenerate; a vendor or an
	// unknown id cannot be edited here.
	pub, _ := f.newApp("Public", "public", "openid")
	if rec := f.adminPost(adminPathSecret, "owner", url.Values{"client_id": {pub}, "csrf_token": {f.adminCSRF()}}, nil); rec.Code != http.StatusBadRequest {
		t.Errorf("regenerate for a public client: %d", rec.Code)
	}
	for _, other := range []string{memberClient, "app_unknown", ""} {
		if rec := f.adminGet(adminPathEdit+"?client_id="+url.QueryEscape(other), "owner"); rec.Code != http.StatusNotFound {
			t.Errorf("edit %q: %d", other, rec.Code)
		}
	}
}

func TestAdminFormValidation(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	cases := []struct {
		name   string
		mutate func(url.Values)
		msg    string
	}{
		{"missing name", func(v url.Values) { v.Set("name", "  ") }, "Enter a name"},
		{"long name", func(v url.Values) { v.Set("name", strings.Repeat("n", 201)) }, "at most 200"},
		{"control in name", func(v url.Values) { v.Set("name", "a\x00b") }, "control characters"},
		{"no redirect", func(v url.Values) { v.Set("redirect_uris", "\n \n") }, "at least one redirect URI"},
		{"http redirect", func(v url.Values) { v.Set("redirect_uris", "http://tool.example/cb") }, "must use https"},
		{"relative redirect", func(v url.Values) { v.Set("redirect_uris", "/cb") }, "not an absolute URL"},
		{"fragment", func(v url.Values) { v.Set("redirect_uris", "https://tool.example/cb#x") }, "fragment"},
		{"empty fragment", func(v url.Values) { v.Set("redirect_uris", "https://tool.example/cb#") }, "fragment"},
		{"userinfo", func(v url.Values) { v.Set("redirect_uris", "https://u:p@tool.example/cb") }, "user name"},
		{"javascript", func(v url.Values) { v.Set("redirect_uris", "javascript:alert(1)") }, "not an absolute URL"},
		{"custom scheme", func(v url.Values) { v.Set("redirect_uris", "com.tool://cb") }, "must use https"},
		{"space inside", func(v url.Values) { v.Set("redirect_uris", "https://tool.example/a b") }, "spaces"},
		{"one bad among good", func(v url.Values) { v.Set("redirect_uris", appRedirect+"\nftp://x/y") }, "ftp://x/y"},
		{"too many", func(v url.Values) { v.Set("redirect_uris", strings.Join(manyURIs(21), "\n")) }, "at most 20"},
		{"unknown scope", func(v url.Values) { v.Add("scope", "wizardry") }, `"wizardry"`},
		{"operator scope", func(v url.Values) { v.Add("scope", "courses:read") }, `"courses:read"`},
		{"offline_access", func(v url.Values) { v.Add("scope", "offline_access") }, "every application may ask for it"},
		{"no scope", func(v url.Values) { v.Del("scope") }, "at least one scope"},
		{"no type", func(v url.Values) { v.Del("client_type") }, "public or confidential"},
		{"no nonce", func(v url.Values) { v.Set("form_nonce", "") }, "incomplete"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page := f.adminGet(adminPathNew, "owner").Body.String()
			form := appForm("Checker", "public", "openid")
			form.Set("csrf_token", reCSRF.FindStringSubmatch(page)[1])
			form.Set("form_nonce", reFormNonce.FindStringSubmatch(page)[1])
			tc.mutate(form)
			rec := f.adminPost(adminPathNew, "owner", form, nil)
			body := rec.Body.String()
			if rec.Code != http.StatusBadRequest || !strings.Contains(body, `id="error"`) ||
				!strings.Contains(body, `name="redirect_uris"`) || !strings.Contains(body, `name="csrf_token"`) {
				t.Fatalf("want the form again with 400, got %d\n%s", rec.Code, body)
			}
			msg := regexp.MustCompile(`id="error">([^<]*)<`).FindStringSubmatch(body)
			if msg == nil || !strings.Contains(htmlUnescape(msg[1]), tc.msg) {
				t.Errorf("message %q, want it to mention %q", msg, tc.msg)
			}
			checkPageHeaders(t, rec)
		})
	}
	if n, _ := f.store.CountClientsByKind(context.Background(), store.KindApp); n != 0 {
		t.Errorf("refused forms created %d applications", n)
	}

	// Editing validates the same way and keeps the record.
	id, _ := f.newApp("Keeper", "public", "openid")
	rec := f.adminPost(adminPathEdit, "owner", url.Values{"client_id": {id}, "name": {"Keeper"},
		"redirect_uris": {"http://evil.example/cb"}, "scope": {"openid"}, "csrf_token": {f.adminCSRF()}}, nil)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "must use https") {
		t.Errorf("edit with a bad redirect: %d", rec.Code)
	}
	if c, _ := f.store.GetClient(context.Background(), id); !slices.Equal(c.RedirectURIs, []string{appRedirect, appLoopback}) {
		t.Errorf("a refused edit changed the client: %v", c.RedirectURIs)
	}

	// Values are escaped.
	xid, _ := f.newApp(`<script>alert("x")</script>`, "public", "openid")
	over := f.adminGet(sitepath.AdminApplications, "owner").Body.String()
	if strings.Contains(over, "<script>") || !strings.Contains(over, "&lt;script&gt;") || !strings.Contains(over, xid) {
		t.Error("the application name is not escaped on the overview")
	}

	// Oversized bodies are refused.
	big := url.Values{"csrf_token": {f.adminCSRF()}, "name": {strings.Repeat("x", 40<<10)}}
	if rec := f.adminPost(adminPathNew, "owner", big, nil); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized form: %d", rec.Code)
	}
}

func manyURIs(n int) []string {
	var out []string
	for i := range n {
		out = append(out, appRedirect+"/"+strings.Repeat("a", i+1))
	}
	return out
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&#34;", `"`, "&quot;", `"`, "&#39;", "'", "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
}

func TestAdminCSRFAndOrigin(t *testing.T) {
	f := newFixture(t)
	token := f.adminCSRF()
	cases := []struct {
		name   string
		token  string
		hdr    map[string]string
		status int
	}{
		{"missing token", "", nil, http.StatusForbidden},
		{"wrong token", token[:len(token)-2] + "xx", nil, http.StatusForbidden},
		{"garbage token", "not-a-token", nil, http.StatusForbidden},
		{"cross-origin", token, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"other port", token, map[string]string{"Origin": issuer + ":8443"}, http.StatusForbidden},
		{"cross-site fetch", token, map[string]string{"Origin": "", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site fetch", token, map[string]string{"Origin": "", "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"same origin", token, nil, http.StatusSeeOther},
		{"origin null (no-referrer page)", token, map[string]string{"Origin": "null"}, http.StatusSeeOther},
		{"no origin headers", token, map[string]string{"Origin": "", "Sec-Fetch-Site": ""}, http.StatusSeeOther},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := f.srv.SetMCPConnections(context.Background(), false); err != nil {
				t.Fatal(err)
			}
			rec := f.adminPost(adminPathSwitch, "owner", url.Values{"enabled": {"on"}, "csrf_token": {tc.token}}, tc.hdr)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d\n%s", rec.Code, tc.status, rec.Body)
			}
			if on := f.mcpOn(); on != (tc.status == http.StatusSeeOther) {
				t.Errorf("switch is %v after a %d", on, rec.Code)
			}
			checkPageHeaders(t, rec)
		})
	}

	// A token is bound to the operator and expires.
	key, err := f.srv.FormKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now()
	tok := adminCSRFToken(key, "operator-1", now)
	for _, c := range []struct {
		name, subject string
		at            time.Time
		ok            bool
	}{
		{"same operator", "operator-1", now, true},
		{"another operator", "operator-2", now, false},
		{"an hour later", "operator-1", now.Add(time.Hour), true},
		{"next day", "operator-1", now.Add(13 * time.Hour), false},
		{"from the future", "operator-1", now.Add(-time.Hour), false},
	} {
		if got := checkAdminCSRF(key, c.subject, tok, c.at); got != c.ok {
			t.Errorf("%s: %v", c.name, got)
		}
	}
	f.clock.Advance(13 * time.Hour)
	if rec := f.adminPost(adminPathSwitch, "owner", url.Values{"enabled": {"off"}, "csrf_token": {token}}, nil); rec.Code != http.StatusForbidden {
		t.Errorf("expired form: %d", rec.Code)
	}
}

func TestAdminReviewMetadataClient(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	const docID = "https://agent.example/oauth/client.json?v=1&x=<y>"
	md := &store.Client{ID: docID, Name: "Doc Agent", Kind: store.KindMetadata, Audience: store.AudienceMember,
		RedirectURIs: []string{"https://agent.example/cb"}, Scopes: authserver.DefaultMemberScopes, AuthMethod: "none",
		IssuedAt: f.clock.Now()}
	if err := f.store.PutClient(context.Background(), md); err != nil {
		t.Fatal(err)
	}
	over := f.adminGet(sitepath.AdminApplications, "owner").Body.String()
	reviewLink := adminPathReview + "?client_id=" + url.QueryEscape(docID)
	if !strings.Contains(over, "not reviewed") || !strings.Contains(over, "Doc Agent") ||
		!strings.Contains(strings.ToLower(over), strings.ToLower(reviewLink)) {
		t.Fatalf("overview does not list the metadata client:\n%s", over)
	}
	page := f.adminGet(reviewLink, "owner")
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), `id="status-reviewed"`) {
		t.Fatalf("review page: %d\n%s", page.Code, page.Body)
	}

	mayRequest := func(scope string) bool {
		c, err := f.srv.KnownClient(context.Background(), docID)
		if err != nil || c == nil {
			t.Fatal(c, err)
		}
		return slices.Contains(c.AllowedScopes, scope)
	}
	if !mayRequest("account:read") || mayRequest("account:write") {
		t.Fatal("an unreviewed metadata client must get read and identity scopes only")
	}
	steps := []struct {
		name, status string
		scopes       []string
		code         int
		write, read  bool
	}{
		{"reviewed", "reviewed", []string{"openid", "account:read", "account:write"}, http.StatusSeeOther, true, true},
		{"reviewed, narrower", "reviewed", []string{"openid", "account:write"}, http.StatusSeeOther, true, false},
		{"unreviewed again", "unreviewed", []string{"openid", "account:read", "account:write"}, http.StatusSeeOther, false, true},
		{"operator scope refused", "reviewed", []string{"openid", "courses:write"}, http.StatusBadRequest, false, true},
		{"no scope refused", "reviewed", nil, http.StatusBadRequest, false, true},
		{"no status refused", "", []string{"openid"}, http.StatusBadRequest, false, true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			rec := f.adminPost(adminPathReview, "owner", url.Values{"client_id": {docID}, "status": {st.status},
				"scope": st.scopes, "csrf_token": {f.adminCSRF()}}, nil)
			if rec.Code != st.code {
				t.Fatalf("status %d, want %d\n%s", rec.Code, st.code, rec.Body)
			}
			if mayRequest("account:write") != st.write || mayRequest("account:read") != st.read {
				t.Errorf("after %s: write %v read %v", st.name, mayRequest("account:write"), mayRequest("account:read"))
			}
		})
	}
	// Only metadata clients are reviewed here.
	id, _ := f.newApp("App", "public", "openid")
	if rec := f.adminGet(adminPathReview+"?client_id="+id, "owner"); rec.Code != http.StatusNotFound {
		t.Errorf("review of an application: %d", rec.Code)
	}
	if rec := f.adminGet(adminPathDelete+"?client_id="+url.QueryEscape(docID), "owner"); rec.Code != http.StatusNotFound {
		t.Errorf("delete page for a metadata client: %d", rec.Code)
	}
}

func TestAdminLoopbackClients(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	rec := f.serve("POST", sitepath.Register, strings.NewReader(`{"client_name":"school-cli","redirect_uris":["http://127.0.0.1:9000/cb"]}`),
		map[string]string{"Content-Type": "application/json"})
	var reg map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &reg); err != nil || rec.Code != http.StatusCreated {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	id := reg["client_id"].(string)
	over := f.adminGet(sitepath.AdminApplications, "owner").Body.String()
	if !strings.Contains(over, "school-cli") || !strings.Contains(over, adminPathDelete+"?client_id="+id) {
		t.Fatalf("overview does not list the loopback client:\n%s", over)
	}
	if strings.Contains(over, adminPathEdit+"?client_id="+id) {
		t.Error("loopback clients are read-only")
	}
	// The operator sees which are public and which hold a secret.
	f.serve("POST", sitepath.Register, strings.NewReader(`{"client_name":"secret-cli","redirect_uris":["http://127.0.0.1:9001/cb"],`+
		`"token_endpoint_auth_method":"client_secret_post"}`), map[string]string{"Content-Type": "application/json"})
	over = f.adminGet(sitepath.AdminApplications, "owner").Body.String()
	if !regexp.MustCompile(`school-cli(?s:.)*?class="client-type">public</td>`).MatchString(over) ||
		!regexp.MustCompile(`secret-cli(?s:.)*?class="client-type">confidential`).MatchString(over) {
		t.Errorf("the overview does not tell public from confidential loopback clients:\n%s", over)
	}
	if rec := f.adminPost(adminPathEdit, "owner", url.Values{"client_id": {id}, "name": {"x"}, "redirect_uris": {appRedirect},
		"scope": {"openid"}, "csrf_token": {f.adminCSRF()}}, nil); rec.Code != http.StatusNotFound {
		t.Errorf("editing a loopback client: %d", rec.Code)
	}
	if rec := f.adminGet(adminPathDelete+"?client_id="+id, "owner"); rec.Code != http.StatusOK {
		t.Fatalf("delete confirmation: %d", rec.Code)
	}
	rec = f.adminPost(adminPathDelete, "owner", url.Values{"client_id": {id}, "csrf_token": {f.adminCSRF()}}, nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("delete: %d\n%s", rec.Code, rec.Body)
	}
	if _, err := f.store.GetClient(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("loopback client still stored: %v", err)
	}
}
