package authserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/store"
)

// consentCase is one kind of client and redirect URI: how to build its
// authorization request, who signs in, and whether a remembered consent
// may answer without the page.
type consentCase struct {
	name   string
	setup  func(f *fixture) url.Values
	person string
	skips  bool
}

func consentCases(t *testing.T) []consentCase {
	app := func(redirect string) func(f *fixture) url.Values {
		return func(f *fixture) url.Values {
			f.enableMCP()
			created, err := f.srv.CreateApp(context.Background(), AppSpec{Name: "Planner", RedirectURIs: []string{appRedirect, appLoopback},
				Scopes: []string{"openid", "account:read"}}, "")
			if err != nil {
				t.Fatal(err)
			}
			_, ch := pkce()
			q := appAuthParams(created.ClientID, ch, "openid account:read")
			q.Set("redirect_uri", redirect)
			return q
		}
	}
	document := func(redirect func(host string) string) func(f *fixture) url.Values {
		return func(f *fixture) url.Values {
			d := newDocServer(t)
			host := strings.TrimPrefix(d.URL, "https://")
			d.docs["/client.json"] = `{"client_id":"%s","client_name":"Doc Agent","redirect_uris":["https://` + host +
				`/cb","http://127.0.0.1/cb"]}`
			f.useMetadata(d, MetadataDocumentsConfig{AllowPrivateNetworks: true})
			return metadataAuthParams(d.URL+"/client.json", redirect(host), "openid account:read")
		}
	}
	registered := func(authMethod string) func(f *fixture) url.Values {
		return func(f *fixture) url.Values {
			status, m := f.register("application/json", `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/cb"],`+
				`"token_endpoint_auth_method":"`+authMethod+`"}`)
			if status != http.StatusCreated {
				t.Fatalf("registration: %d %v", status, m)
			}
			return operatorParams(m["client_id"].(string), "http://127.0.0.1:40123/cb")
		}
	}
	return []consentCase{
		{"vendor, https redirect", func(*fixture) url.Values {
			_, ch := pkce()
			return authParams(ch)
		}, "student", true},
		{"vendor, loopback redirect", func(*fixture) url.Values {
			return operatorParams(operatorClient, opsRedirect)
		}, "owner", false},
		{"member application, https redirect", app(appRedirect), "student", true},
		{"member application, loopback redirect", app(appLoopback), "student", false},
		{"metadata document, https redirect on its host", document(func(h string) string { return "https://" + h + "/cb" }), "student", true},
		{"metadata document, loopback redirect", document(func(string) string { return "http://127.0.0.1:49152/cb" }), "student", false},
		{"loopback registration, public", registered("none"), "owner", false},
		{"loopback registration, client_secret_post", registered("client_secret_post"), "owner", false},
	}
}

// RFC 8252 §8.6: a remembered consent answers without the page only when
// the redirect URI proves the client; otherwise the page comes back every
// time, saying what was approved before, and prompt=none is refused.
func TestRememberedConsentNeedsAProvenClient(t *testing.T) {
	for _, tc := range consentCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			q := tc.setup(f)
			redirect := q.Get("redirect_uri")

			first := f.authorize(q, tc.person)
			if first.Code != http.StatusOK || strings.Contains(first.Body.String(), `id="approved-before"`) {
				t.Fatalf("first authorization: want the consent page without a past approval, got %d\n%s", first.Code, first.Body)
			}
			if p := redirectParams(t, f.consent(first, tc.person, "approve"), redirect); p.Get("code") == "" {
				t.Fatalf("approval: %v", p)
			}

			again := f.authorize(q, tc.person)
			if tc.skips {
				if p := redirectParams(t, again, redirect); p.Get("code") == "" || p.Get("iss") != issuer || p.Get("state") != "st-123" {
					t.Errorf("a proven client with remembered consent: want a code with iss and state, got %v", p)
				}
			} else {
				checkAskedAgain(t, again)
				p := redirectParams(t, f.consent(again, tc.person, "deny"), redirect)
				if p.Get("error") != "access_denied" || p.Has("code") || p.Get("iss") != issuer || p.Get("state") != "st-123" {
					t.Errorf("deny on the repeated page: want access_denied with iss and state, got %v", p)
				}
			}

			q.Set("prompt", "none")
			p := redirectParams(t, f.authorize(q, tc.person), redirect)
			switch {
			case tc.skips && (p.Get("code") == "" || p.Has("error")):
				t.Errorf("prompt=none, proven client: want a code, got %v", p)
			case !tc.skips && (p.Get("error") != "consent_required" || p.Has("code") ||
				p.Get("iss") != issuer || p.Get("state") != "st-123"):
				t.Errorf("prompt=none, unproven client: want consent_required with iss and state, got %v", p)
			}

			q.Set("prompt", "consent")
			if rec := f.authorize(q, tc.person); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `id="approved-before"`) {
				t.Errorf("prompt=consent must show the page with the past approval, got %d", rec.Code)
			}
		})
	}
}

// checkAskedAgain: the page is shown, says it was approved before and why
// it asks again, and marks each scope.
func checkAskedAgain(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("an unproven client with remembered consent: want the consent page, got %d %s", rec.Code, rec.Header().Get("Location"))
	}
	body := rec.Body.String()
	// The page's words for these are package pages' test.
	for _, want := range []string{`id="approved-before"`, "asked each time: true", "<li>openid (before)</li>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
}

// The rule itself, on the edges the flows above cannot reach: only a
// registered https redirect of a vendor, member application or (on its
// own host) metadata document proves the client.
func TestRedirectProvesClient(t *testing.T) {
	doc := "https://agent.example/client.json"
	tests := []struct {
		name     string
		client   store.Client
		redirect string
		want     bool
	}{
		{"vendor https", store.Client{Kind: store.KindVendor, RedirectURIs: []string{"https://v.example/cb"}}, "https://v.example/cb", true},
		{"vendor plain http off loopback", store.Client{Kind: store.KindVendor, RedirectURIs: []string{"http://v.example/cb"}}, "http://v.example/cb", false},
		{"vendor loopback", store.Client{Kind: store.KindVendor, RedirectURIs: []string{"http://127.0.0.1:1/cb"}}, "http://127.0.0.1:1/cb", false},
		{"vendor, redirect not registered", store.Client{Kind: store.KindVendor, RedirectURIs: []string{"https://v.example/cb"}}, "https://v.example/other", false},
		{"member app https", store.Client{Kind: store.KindApp, RedirectURIs: []string{"https://a.example/cb"}}, "https://a.example/cb", true},
		{"member app localhost", store.Client{Kind: store.KindApp, RedirectURIs: []string{"http://localhost:3000/cb"}}, "http://localhost:3000/cb", false},
		{"document, its host", store.Client{ID: doc, Kind: store.KindMetadata, RedirectURIs: []string{"https://AGENT.example/cb"}}, "https://AGENT.example/cb", true},
		{"document, another host", store.Client{ID: doc, Kind: store.KindMetadata, RedirectURIs: []string{"https://other.example/cb"}}, "https://other.example/cb", false},
		{"document, loopback", store.Client{ID: doc, Kind: store.KindMetadata, RedirectURIs: []string{"http://[::1]:5/cb"}}, "http://[::1]:5/cb", false},
		{"loopback registration, even with https", store.Client{Kind: store.KindLoopback, RedirectURIs: []string{"https://x.example/cb"}}, "https://x.example/cb", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redirectProvesClient(&tt.client, tt.redirect); got != tt.want {
				t.Errorf("redirectProvesClient = %v, want %v", got, tt.want)
			}
		})
	}
}
