package authserver

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store/storetest"
)

// send is a request prepared while the store works, sent once it fails.
type send func() *httptest.ResponseRecorder

func (f *fixture) postForm(target string, form url.Values) send {
	return func() *httptest.ResponseRecorder {
		return f.serve("POST", target, strings.NewReader(form.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	}
}

// loopbackClient registers a public loopback client, which is kept in
// the store (unlike the configured vendors).
func (f *fixture) loopbackClient() string {
	f.t.Helper()
	status, m := f.register("application/json", `{"client_name":"cli","redirect_uris":["`+opsRedirect+`"]}`)
	if status != http.StatusCreated {
		f.t.Fatalf("registration: %d %v", status, m)
	}
	return m["client_id"].(string)
}

// Every request the store fails is answered 503 with Retry-After: JSON
// temporarily_unavailable at the OAuth endpoints, the unavailable page
// (and never a redirect to the client) at authorize and consent (package
// pages' test has the admin area's, and the page's headers). No
// refusal that a client would act on (invalid_client, invalid_grant,
// active:false, consent_required, "not registered", "expired") and no
// 500. The store's error is logged and never sent.
func TestStoreFailureIsUnavailable(t *testing.T) {
	cases := []struct {
		name string
		// prepare runs on a working store.
		prepare func(f *fixture) send
		// fail names the failing methods; none means every one.
		fail []string
		html bool
	}{
		{name: "token: authorization_code", prepare: func(f *fixture) send {
			v, c := pkce()
			code := f.code(authParams(c), v)
			return f.postForm(sitepath.Token, url.Values{"grant_type": {"authorization_code"}, "code": {code},
				"redirect_uri": {memberRedirect}, "client_id": {memberClient}, "code_verifier": {v}, "resource": {issuer}})
		}},
		{name: "token: refresh_token", prepare: func(f *fixture) send {
			return f.postForm(sitepath.Token, refreshForm(f.tokens()["refresh_token"].(string)))
		}},
		{name: "token: a stored client cannot be looked up", prepare: func(f *fixture) send {
			return f.postForm(sitepath.Token, url.Values{"grant_type": {"refresh_token"},
				"refresh_token": {"sgrt_x"}, "client_id": {f.loopbackClient()}})
		}, fail: []string{"GetClient"}},
		{name: "token: member application, switch unreadable", prepare: func(f *fixture) send {
			f.enableMCP()
			id, _ := f.newApp("Tool", "public", "openid")
			return f.postForm(sitepath.Token, url.Values{"grant_type": {"refresh_token"},
				"refresh_token": {"sgrt_x"}, "client_id": {id}})
		}, fail: []string{"GetSetting"}},
		{name: "registration: public loopback", prepare: func(f *fixture) send {
			return func() *httptest.ResponseRecorder {
				return f.serve("POST", sitepath.Register, strings.NewReader(`{"client_name":"cli","redirect_uris":["`+opsRedirect+`"]}`),
					map[string]string{"Content-Type": "application/json"})
			}
		}},
		{name: "registration: confidential loopback", prepare: func(f *fixture) send {
			return func() *httptest.ResponseRecorder {
				return f.serve("POST", sitepath.Register, strings.NewReader(`{"redirect_uris":["`+opsRedirect+`"],`+
					`"token_endpoint_auth_method":"client_secret_post"}`), map[string]string{"Content-Type": "application/json"})
			}
		}, fail: []string{"CreateClient"}},
		{name: "revocation: lookup", prepare: func(f *fixture) send {
			return f.postForm(sitepath.Revoke, url.Values{"token": {f.tokens()["access_token"].(string)}, "client_id": {memberClient}})
		}},
		{name: "revocation: revoking", prepare: func(f *fixture) send {
			return f.postForm(sitepath.Revoke, url.Values{"token": {f.tokens()["refresh_token"].(string)}, "client_id": {memberClient}})
		}, fail: []string{"RevokeToken"}},
		{name: "introspection", prepare: func(f *fixture) send {
			return f.postForm(sitepath.Introspect, url.Values{"token": {f.tokens()["access_token"].(string)}, "client_id": {memberClient}})
		}},
		{name: "userinfo", prepare: func(f *fixture) send {
			at := f.tokens()["access_token"].(string)
			return func() *httptest.ResponseRecorder {
				return f.serve("GET", sitepath.UserInfo, nil, map[string]string{"Authorization": "Bearer " + at})
			}
		}},

		{name: "authorize: remembered consent unreadable", html: true, prepare: func(f *fixture) send {
			_, c := pkce()
			return func() *httptest.ResponseRecorder { return f.authorize(authParams(c), "student") }
		}},
		{name: "authorize prompt=none: remembered consent unreadable", html: true, prepare: func(f *fixture) send {
			v, c := pkce()
			f.code(authParams(c), v) // approved once
			q := authParams(c)
			q.Set("prompt", "none")
			return func() *httptest.ResponseRecorder { return f.authorize(q, "student") }
		}, fail: []string{"GetConsent"}},
		{name: "authorize: stored client unreadable", html: true, prepare: func(f *fixture) send {
			_, c := pkce()
			q := operatorParams(f.loopbackClient(), opsRedirect)
			q.Set("code_challenge", c)
			return func() *httptest.ResponseRecorder { return f.authorize(q, "owner") }
		}},
		{name: "authorize: member application, switch unreadable", html: true, prepare: func(f *fixture) send {
			f.enableMCP()
			id, _ := f.newApp("Tool", "public", "openid")
			_, c := pkce()
			q := appAuthParams(id, c, "openid")
			return func() *httptest.ResponseRecorder { return f.authorize(q, "student") }
		}, fail: []string{"GetSetting"}},
		{name: "authorize: metadata-document client unreadable", html: true, prepare: func(f *fixture) send {
			d := newDocServer(f.t.(*testing.T))
			host := strings.TrimPrefix(d.URL, "https://")
			d.docs["/client.json"] = `{"client_id":"%s","client_name":"Doc Agent","redirect_uris":["https://` + host + `/cb"]}`
			f.useMetadata(d, MetadataDocumentsConfig{AllowPrivateNetworks: true})
			q := metadataAuthParams(d.URL+"/client.json", "https://"+host+"/cb", "openid")
			return func() *httptest.ResponseRecorder { return f.authorize(q, "student") }
		}},
		{name: "authorize: pending request cannot be stored", html: true, prepare: func(f *fixture) send {
			_, c := pkce()
			return func() *httptest.ResponseRecorder { return f.authorize(authParams(c), "student") }
		}, fail: []string{"PutPending"}},
		{name: "authorize: remembered consent, code cannot be stored", html: true, prepare: func(f *fixture) send {
			v, c := pkce()
			f.code(authParams(c), v)
			return func() *httptest.ResponseRecorder { return f.authorize(authParams(c), "student") }
		}, fail: []string{"PutCode"}},
		{name: "consent: pending request cannot be taken", html: true, prepare: func(f *fixture) send {
			_, c := pkce()
			page := f.authorize(authParams(c), "student")
			return func() *httptest.ResponseRecorder { return f.consent(page, "student", "approve") }
		}},
		{name: "consent: code cannot be stored", html: true, prepare: func(f *fixture) send {
			_, c := pkce()
			page := f.authorize(authParams(c), "student")
			return func() *httptest.ResponseRecorder { return f.consent(page, "student", "approve") }
		}, fail: []string{"PutCode"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, fs := failingFixture(t)
			var logs bytes.Buffer
			f.srv.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			request := tc.prepare(f)
			fs.Fail(tc.fail...)
			rec := request()
			h := rec.Header()
			if rec.Code != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503; Location %q\n%s", rec.Code, h.Get("Location"), rec.Body)
			}
			if h.Get("Retry-After") != "5" {
				t.Errorf("Retry-After %q, want 5", h.Get("Retry-After"))
			}
			if h.Get("Location") != "" {
				t.Errorf("redirected to %s", h.Get("Location"))
			}
			// The page is the pages' (package pages' test checks its
			// headers); the OAuth endpoints' answers are the protocol's.
			if h.Get("Cache-Control") != "no-store" && !tc.html {
				t.Errorf("Cache-Control %q", h.Get("Cache-Control"))
			}
			if strings.Contains(rec.Body.String(), storetest.ErrStoreDown.Error()) {
				t.Errorf("the store's error reached the client:\n%s", rec.Body)
			}
			if !strings.Contains(logs.String(), storetest.ErrStoreDown.Error()) {
				t.Errorf("the store's error was not logged:\n%s", logs.String())
			}
			if tc.html {
				if !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(rec.Body.String(), "temporarily unavailable") ||
					!strings.Contains(rec.Body.String(), `class="unavailable"`) {
					t.Errorf("not the unavailable page: %q\n%s", h.Get("Content-Type"), rec.Body)
				}
				return
			}
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || h.Get("Content-Type") != "application/json" {
				t.Fatalf("not JSON (%q): %v\n%s", h.Get("Content-Type"), err, rec.Body)
			}
			if body["error"] != "temporarily_unavailable" || body["error_description"] == "" {
				t.Errorf("body %v", body)
			}
			if _, ok := body["active"]; ok {
				t.Errorf("an introspection verdict while the store failed: %v", body)
			}
		})
	}
}

// The switch reads as on, off or an error, never as off for an error.
func TestMCPConnectionsEnabledReportsStoreFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(f *fixture, fs *storetest.Failing)
		on      bool
		fails   bool
	}{
		{"on", func(f *fixture, _ *storetest.Failing) { f.enableMCP() }, true, false},
		{"off", func(*fixture, *storetest.Failing) {}, false, false},
		{"store down while on", func(f *fixture, fs *storetest.Failing) { f.enableMCP(); fs.Fail() }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, fs := failingFixture(t)
			tc.prepare(f, fs)
			on, err := f.srv.MCPConnectionsEnabled(t.Context())
			if on != tc.on || (err != nil) != tc.fails {
				t.Errorf("got %v, %v; want %v, failing %v", on, err, tc.on, tc.fails)
			}
		})
	}
}

// Approving while the earlier consent cannot be read still authorizes,
// and does not replace what was approved before with this request's
// scopes alone.
func TestConsentKeptWhenUnreadable(t *testing.T) {
	f, fs := failingFixture(t)
	v, c := pkce()
	f.code(authParams(c), v)
	before, err := f.store.GetConsent(t.Context(), memberClient, "member-1")
	if err != nil {
		t.Fatal(err)
	}
	q := authParams(c)
	q.Set("scope", "openid")
	q.Set("prompt", "consent")
	page := f.authorize(q, "student")
	fs.Fail("GetConsent")
	if p := redirectParams(t, f.consent(page, "student", "approve"), memberRedirect); p.Get("code") == "" {
		t.Fatalf("no code: %v", p)
	}
	after, err := f.store.GetConsent(t.Context(), memberClient, "member-1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(after.Scopes, " ") != strings.Join(before.Scopes, " ") {
		t.Errorf("remembered consent changed from %v to %v", before.Scopes, after.Scopes)
	}
}
