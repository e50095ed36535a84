package pages

import (
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/sitepath"
)

// The consent page and the error page of an authorization, as the
// authorization server shows them (its tests hold what it decides).

func TestConsentPage(t *testing.T) {
	f := newFixture(t)
	_, c := pkce()
	rec := f.authorize(authParams(c), "student")
	if rec.Code != http.StatusOK {
		t.Fatalf("consent page: %d %s", rec.Code, rec.Body.String())
	}
	h := rec.Header()
	for k, want := range map[string]string{
		"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
	} {
		if h.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, h.Get(k), want)
		}
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("CSP: %q", h.Get("Content-Security-Policy"))
	}
	body := rec.Body.String()
	for _, want := range []string{"Member App", "app.example", "Sam Student", "account:read", "csrf_token"} {
		if !strings.Contains(body, want) {
			t.Errorf("consent page lacks %q", want)
		}
	}

	// Deny.
	p := redirectParams(t, f.consent(rec, "student", "deny"), memberRedirect)
	if p.Get("error") != "access_denied" || p.Get("iss") != issuer || p.Get("state") != "st-123" {
		t.Errorf("deny: %v", p)
	}
}

// Authorize refuses a request it cannot trust the redirect of with the
// error page, which is protected like every page.
func TestAuthorizeErrorPagesAreProtected(t *testing.T) {
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
			if !strings.Contains(rec.Header().Get("Content-Type"), "text/html") {
				t.Errorf("error page headers: %v", rec.Header())
			}
			checkPageHeaders(t, rec)
		})
	}
}

// A person asked again by a client whose redirect URI does not prove it
// (RFC 8252 §8.6) is told they approved it before and why they are asked
// every time, and each scope approved before is marked.
func TestConsentSaysApprovedBefore(t *testing.T) {
	f := newFixture(t)
	_, ch := pkce()
	q := authParams(ch)
	q.Set("client_id", operatorClient)
	q.Set("redirect_uri", opsRedirect)
	q.Set("scope", "openid courses:read")
	q.Del("resource")
	first := f.authorize(q, "owner")
	if first.Code != http.StatusOK || strings.Contains(first.Body.String(), `id="approved-before"`) {
		t.Fatalf("first authorization: %d\n%s", first.Code, first.Body)
	}
	if p := redirectParams(t, f.consent(first, "owner", "approve"), opsRedirect); p.Get("code") == "" {
		t.Fatalf("approval: %v", p)
	}
	again := f.authorize(q, "owner")
	body := again.Body.String()
	for _, want := range []string{`id="approved-before"`, "You approved this before.", "you are asked every time",
		`<span class="before">(approved before)</span> <code class="scope-code">openid</code>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
}

// offline_access is worded on the consent page like every other scope
// (OpenID Connect Core §11: the person is told).
func TestConsentWordsOfflineAccess(t *testing.T) {
	f := newFixture(t)
	_, ch := pkce()
	q := authParams(ch)
	q.Set("scope", "openid offline_access account:read")
	rec := f.authorize(q, "student")
	if !strings.Contains(rec.Body.String(), `<li><span class="scope-words">Stay connected when you are not using it</span> <code class="scope-code">offline_access</code></li>`) {
		t.Errorf("the consent page does not word offline_access: %d\n%s", rec.Code, rec.Body)
	}
}

// metadataFixture is a fixture whose server fetches Client ID Metadata
// Documents from docs, a TLS server of the test, at the URL it returns.
func metadataFixture(t *testing.T, docs http.Handler) (*fixture, string) {
	d := httptest.NewTLSServer(docs)
	t.Cleanup(d.Close)
	pool := x509.NewCertPool()
	pool.AddCert(d.Certificate())
	f := newFixtureWith(t, func(c *authserver.Config) {
		c.MetadataDocuments = &authserver.MetadataDocumentsConfig{AllowPrivateNetworks: true, RootCAs: pool}
	})
	return f, d.URL
}

// A refused document's error page reads in the person's language; the
// developer's English detail follows apart, marked as technical and as
// English, never inside the translated sentence.
func TestMetadataRejectionInGerman(t *testing.T) {
	f, docs := metadataFixture(t, http.NotFoundHandler())
	_, ch := pkce()
	q := authParams(ch)
	q.Set("client_id", docs+"/missing.json")
	q.Set("redirect_uri", docs+"/cb")
	q.Set("scope", "openid")
	rec := f.serve("GET", sitepath.Authorize+"?"+q.Encode(), nil, map[string]string{"Cookie": "session=student", "Accept-Language": "de-CH"})
	body := htmlUnescape(rec.Body.String())
	sentence := regexp.MustCompile(`(?s)<p id="error" role="alert">(.*?)</p>`).FindStringSubmatch(body)
	if rec.Code != http.StatusBadRequest || sentence == nil || !strings.HasPrefix(sentence[1], "Die veröffentlichte Beschreibung") {
		t.Fatalf("the German error page = %d\n%s", rec.Code, body)
	}
	if strings.Contains(sentence[1], "invalid_client_metadata") || strings.Contains(sentence[1], "HTTP 404") {
		t.Errorf("the translated sentence carries the English detail: %q", sentence[1])
	}
	detail := regexp.MustCompile(`<p class="muted" id="error-detail">Technisches Detail[^<]*<code lang="en">invalid_client_metadata: [^<]*HTTP 404[^<]*</code></p>`)
	if !detail.MatchString(body) {
		t.Errorf("no technical detail marked apart:\n%s", body)
	}
}
