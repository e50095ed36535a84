package pages

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// TestPagesLoadOnlyTheStylesheet renders every page of the gateway: each
// links the one stylesheet, carries no inline style or script, and its
// Content-Security-Policy allows styles of this origin alone.
func TestPagesLoadOnlyTheStylesheet(t *testing.T) {
	f := newFixture(t)
	_, challenge := pkce()
	var appID string
	pages := []struct {
		name   string
		status int
		get    func() *http.Response
	}{
		{"consent", http.StatusOK, func() *http.Response { return f.authorize(authParams(challenge), "student").Result() }},
		{"sign-in error", http.StatusBadRequest, func() *http.Response {
			q := authParams(challenge)
			q.Set("client_id", "no-such-client")
			return f.authorize(q, "student").Result()
		}},
		{"admin overview, switch off", http.StatusOK, func() *http.Response {
			return f.adminGet(sitepath.AdminApplications, "owner").Result()
		}},
		{"admin error", http.StatusForbidden, func() *http.Response {
			return f.adminGet(sitepath.AdminApplications, "student").Result()
		}},
		{"admin overview", http.StatusOK, func() *http.Response {
			f.enableMCP()
			appID, _ = f.newApp("Pages App", "confidential", "openid", "account:read")
			return f.adminGet(sitepath.AdminApplications, "owner").Result()
		}},
		{"new application", http.StatusOK, func() *http.Response { return f.adminGet(adminPathNew, "owner").Result() }},
		{"secret", http.StatusOK, func() *http.Response {
			return f.createApp(appForm("Second App", "confidential", "openid")).Result()
		}},
		{"edit application", http.StatusOK, func() *http.Response {
			return f.adminGet(adminPathEdit+"?client_id="+url.QueryEscape(appID), "owner").Result()
		}},
		{"delete application", http.StatusOK, func() *http.Response {
			return f.adminGet(adminPathDelete+"?client_id="+url.QueryEscape(appID), "owner").Result()
		}},
		{"review", http.StatusOK, func() *http.Response {
			const doc = "https://agent.example/client.json"
			if err := f.store.PutClient(context.Background(), &store.Client{ID: doc, Name: "Doc Agent", Kind: store.KindMetadata,
				Audience: store.AudienceMember, RedirectURIs: []string{"https://agent.example/cb"},
				Scopes: authserver.DefaultMemberScopes, AuthMethod: "none", IssuedAt: f.clock.Now()}); err != nil {
				t.Fatal(err)
			}
			return f.adminGet(adminPathReview+"?client_id="+url.QueryEscape(doc), "owner").Result()
		}},
	}
	link := `<link rel="stylesheet" href="` + stylesheetPath + `">`
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			resp := p.get()
			raw, _ := io.ReadAll(resp.Body)
			body := string(raw)
			if resp.StatusCode != p.status {
				t.Fatalf("status %d, want %d:\n%s", resp.StatusCode, p.status, body)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "style-src 'self';") || strings.Contains(csp, "unsafe-inline") ||
				!strings.HasPrefix(csp, "default-src 'none';") {
				t.Errorf("CSP %q", csp)
			}
			if strings.Count(body, link) != 1 {
				t.Errorf("the page does not link the stylesheet once:\n%s", body)
			}
			for _, inline := range []string{"<style", " style=", "<script"} {
				if strings.Contains(body, inline) {
					t.Errorf("the page has %q:\n%s", inline, body)
				}
			}
		})
	}
}

func TestStylesheet(t *testing.T) {
	f := newFixture(t)
	if !strings.HasPrefix(stylesheetPath, sitepath.Assets+"pages-") || !sitepath.IsAuthServer(stylesheetPath) {
		t.Fatalf("stylesheet path %q is not the authorization server's", stylesheetPath)
	}
	if contentHash([]byte("a")) == contentHash([]byte("b")) {
		t.Fatal("the path does not follow the content")
	}
	tests := []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", stylesheetPath, http.StatusOK, string(stylesheet)},
		{"HEAD", stylesheetPath, http.StatusOK, ""},
		{"POST", stylesheetPath, http.StatusMethodNotAllowed, `"error"`},
		// Another build's stylesheet (a rolling upgrade): this one's, uncached.
		{"GET", sitepath.Assets + "pages-000000000000.css", http.StatusOK, string(stylesheet)},
		{"GET", sitepath.Assets + "pages-00000000000.css", http.StatusNotFound, `"not_found"`},
		{"GET", sitepath.Assets + "pages-00000000000g.css", http.StatusNotFound, `"not_found"`},
		{"GET", sitepath.Assets + "pages-00000000000A.css", http.StatusNotFound, `"not_found"`},
		{"GET", sitepath.Assets + "pages-000000000000.js", http.StatusNotFound, `"not_found"`},
		{"GET", sitepath.Assets + "other-000000000000.css", http.StatusNotFound, `"not_found"`},
		{"GET", sitepath.Assets, http.StatusNotFound, `"not_found"`},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := f.serve(tc.method, tc.path, nil, nil)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.body) {
				t.Fatalf("%d %q", rec.Code, rec.Body)
			}
			if tc.status != http.StatusOK {
				return
			}
			cache := "public, max-age=31536000, immutable"
			if tc.path != stylesheetPath {
				cache = "no-cache"
			}
			h := rec.Header()
			if h.Get("Content-Type") != "text/css; charset=utf-8" || h.Get("X-Content-Type-Options") != "nosniff" ||
				h.Get("Cache-Control") != cache {
				t.Errorf("headers %v", h)
			}
			if tc.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD with a body")
			}
		})
	}
	if !strings.Contains(string(stylesheet), "body.narrow") {
		t.Errorf("the embedded stylesheet is not the pages' one")
	}
}

// TestConsentNamesTheSchool: the consent page asks for the school by its
// name, with the origin beneath it, and for the origin alone when the
// school has no name.
func TestConsentNamesTheSchool(t *testing.T) {
	tests := []struct {
		name       string
		schoolName func() string
		want       []string
		not        []string
	}{
		{"catalog name", func() string { return "Demo School of <Photography>" },
			[]string{`to access <span id="school">Demo School of &lt;Photography&gt;</span>?</h1>`,
				`<p class="muted origin" id="origin">` + issuer + `</p>`},
			nil},
		{"no name", nil,
			[]string{`to access <span id="school">` + issuer + `</span>?</h1>`},
			[]string{`id="origin"`}},
		{"blank name", func() string { return "  " },
			[]string{`to access <span id="school">` + issuer + `</span>?</h1>`},
			[]string{`id="origin"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.pages.cfg.SchoolName = tc.schoolName
			_, challenge := pkce()
			rec := f.authorize(authParams(challenge), "student")
			body := rec.Body.String()
			if rec.Code != http.StatusOK {
				t.Fatalf("%d\n%s", rec.Code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("consent page lacks %q:\n%s", w, body)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(body, n) {
					t.Errorf("consent page has %q:\n%s", n, body)
				}
			}
		})
	}
}

// TestOneErrorPage: a refused sign-in request and a refusal in the admin
// area are the same page; only the admin area's leads back to it.
func TestOneErrorPage(t *testing.T) {
	f := newFixture(t)
	_, challenge := pkce()
	q := authParams(challenge)
	q.Set("redirect_uri", "https://evil.example/cb")
	signIn := f.authorize(q, "student").Body.String()
	admin := f.adminGet(sitepath.Admin+"/nope", "owner").Body.String()
	for _, c := range []struct {
		name, body, heading string
		back                bool
	}{
		{"sign-in", signIn, "<h1>This sign-in request cannot continue</h1>", false},
		{"admin", admin, "<h1>OAuth applications</h1>", true},
	} {
		if !strings.Contains(c.body, c.heading) || !strings.Contains(c.body, `<p id="error" role="alert">`) {
			t.Errorf("%s error page:\n%s", c.name, c.body)
		}
		if back := strings.Contains(c.body, `<a href="`+sitepath.AdminApplications+`">`); back != c.back {
			t.Errorf("%s error page leads back to the admin area: %v", c.name, back)
		}
	}
}

// The consent page says who vouches for the application: the school for
// one it set up, an operator's review for a reviewed metadata document,
// else a warning naming the host it comes from; every page links to
// where access can be removed later.
func TestConsentTrustCues(t *testing.T) {
	for _, c := range []struct {
		client    authserver.ClientInfo
		says, not string
		warns     bool
	}{
		{authserver.ClientInfo{ClientID: "vendor", Kind: store.KindVendor}, "Set up by Demo School.", "Not reviewed", false},
		{authserver.ClientInfo{ClientID: "app_x", Kind: store.KindApp}, "Set up by Demo School.", "Not reviewed", false},
		{authserver.ClientInfo{ClientID: "https://agent.example/client.json", Kind: store.KindMetadata, Reviewed: true}, "Reviewed by Demo School.", "Not reviewed", false},
		{authserver.ClientInfo{ClientID: "https://agent.example/client.json", Kind: store.KindMetadata},
			`Not reviewed by <strong>Demo School</strong>: this application registered itself and comes from <strong id="client-host">agent.example</strong>.`, "Set up by", true},
		{authserver.ClientInfo{ClientID: "sgc_cli", Kind: store.KindLoopback},
			`Not reviewed by <strong>Demo School</strong>: this application registered itself and comes from <strong id="client-host">127.0.0.1:4000</strong>.`, "Set up by", true},
	} {
		t.Run(c.client.Kind, func(t *testing.T) {
			v := consentView{School: "Demo School", Origin: "Demo School", ClientName: "Tool",
				ClientHost: clientHost(c.client, "http://127.0.0.1:4000/cb"), Trust: trustOf(c.client),
				Applications: sitepath.AccountApplications}
			page, err := renderPage(consentTmpl.in("en"), v)
			if err != nil {
				t.Fatal(err)
			}
			body := htmlUnescape(string(page))
			if !strings.Contains(body, c.says) || strings.Contains(body, c.not) ||
				strings.Contains(body, `class="error" id="trust"`) != c.warns {
				t.Errorf("%s, want %q and not %q:\n%s", c.client.Kind, c.says, c.not, body)
			}
			if !strings.Contains(body, `You can remove its access at any time on <a href="`+sitepath.AccountApplications+`" id="applications-link">your connected applications page</a>.`) {
				t.Errorf("no link to the applications page:\n%s", body)
			}
		})
	}
	// Through the authorization endpoint, for a vendor, and in German.
	f := newFixture(t)
	_, challenge := pkce()
	rec := f.serve("GET", "/oauth/authorize?"+authParams(challenge).Encode(), nil,
		map[string]string{"Cookie": "session=student", "Accept-Language": "de"})
	if body := htmlUnescape(rec.Body.String()); rec.Code != http.StatusOK || !strings.Contains(body, "Eingerichtet von") ||
		!strings.Contains(body, `href="`+sitepath.AccountApplications+`"`) {
		t.Errorf("the German consent page = %d\n%s", rec.Code, body)
	}
}
