package pages

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store/storetest"
)

// send is a request prepared while the store works, sent once it fails.
type send func() *httptest.ResponseRecorder

// loopbackClient registers a public loopback client, which is kept in
// the store (unlike the configured vendors).
func (f *fixture) loopbackClient() string {
	f.t.Helper()
	rec := f.serve("POST", sitepath.Register, strings.NewReader(`{"client_name":"cli","redirect_uris":["`+opsRedirect+`"]}`),
		map[string]string{"Content-Type": "application/json"})
	m := regexp.MustCompile(`"client_id":"([^"]+)"`).FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusCreated || m == nil {
		f.t.Fatalf("registration: %d %s", rec.Code, rec.Body)
	}
	return m[1]
}

// Every page whose request the store fails is the unavailable page: 503
// with Retry-After, never a redirect to the client, kept by no cache,
// with the pages' headers; the store's error is logged and never shown.
// (authserver's test has every other answer the store fails.)
func TestStoreFailureIsUnavailable(t *testing.T) {
	cases := []struct {
		name string
		// prepare runs on a working store.
		prepare func(f *fixture) send
		// fail names the failing methods; none means every one.
		fail []string
	}{
		{name: "authorize: pending request cannot be stored", prepare: func(f *fixture) send {
			_, c := pkce()
			return func() *httptest.ResponseRecorder { return f.authorize(authParams(c), "student") }
		}, fail: []string{"PutPending"}},
		{name: "consent: pending request cannot be taken", prepare: func(f *fixture) send {
			_, c := pkce()
			page := f.authorize(authParams(c), "student")
			return func() *httptest.ResponseRecorder { return f.consent(page, "student", "approve") }
		}},
		{name: "consent: code cannot be stored", prepare: func(f *fixture) send {
			_, c := pkce()
			page := f.authorize(authParams(c), "student")
			return func() *httptest.ResponseRecorder { return f.consent(page, "student", "approve") }
		}, fail: []string{"PutCode"}},

		{name: "admin: overview", prepare: func(f *fixture) send {
			return func() *httptest.ResponseRecorder { return f.adminGet(sitepath.AdminApplications, "owner") }
		}},
		{name: "admin: overview, clients cannot be listed", prepare: func(f *fixture) send {
			f.enableMCP()
			return func() *httptest.ResponseRecorder { return f.adminGet(sitepath.AdminApplications, "owner") }
		}, fail: []string{"ListClients"}},
		{name: "admin: new application page, switch unreadable", prepare: func(f *fixture) send {
			f.enableMCP()
			return func() *httptest.ResponseRecorder { return f.adminGet(adminPathNew, "owner") }
		}, fail: []string{"GetSetting"}},
		{name: "admin: switching off", prepare: func(f *fixture) send {
			f.enableMCP()
			form := url.Values{"enabled": {"off"}, "csrf_token": {f.adminCSRF()}}
			return func() *httptest.ResponseRecorder { return f.adminPost(adminPathSwitch, "owner", form, nil) }
		}, fail: []string{"PutSettingRevoking"}},
		{name: "admin: creating an application", prepare: func(f *fixture) send {
			f.enableMCP()
			page := f.adminGet(adminPathNew, "owner").Body.String()
			form := appForm("Tool", "confidential", "openid")
			form.Set("csrf_token", reCSRF.FindStringSubmatch(page)[1])
			form.Set("form_nonce", reFormNonce.FindStringSubmatch(page)[1])
			return func() *httptest.ResponseRecorder { return f.adminPost(adminPathNew, "owner", form, nil) }
		}, fail: []string{"CreateClient"}},
		{name: "admin: deleting a client", prepare: func(f *fixture) send {
			f.enableMCP()
			form := url.Values{"client_id": {f.loopbackClient()}, "csrf_token": {f.adminCSRF()}}
			return func() *httptest.ResponseRecorder { return f.adminPost(adminPathDelete, "owner", form, nil) }
		}, fail: []string{"GetClient"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, fs := failingFixture(t)
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
			if h.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", h.Get("Cache-Control"))
			}
			if strings.Contains(rec.Body.String(), storetest.ErrStoreDown.Error()) {
				t.Errorf("the store's error reached the client:\n%s", rec.Body)
			}
			if !strings.Contains(f.logs.String(), storetest.ErrStoreDown.Error()) {
				t.Errorf("the store's error was not logged:\n%s", f.logs.String())
			}
			if !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(rec.Body.String(), "temporarily unavailable") {
				t.Errorf("not the unavailable page: %q\n%s", h.Get("Content-Type"), rec.Body)
			}
			checkPageHeaders(t, rec)
		})
	}
}
