package schooltest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/sitepath"
)

// The test school's clients, as its configuration lists them: the member
// application (public), the portal (confidential, with its secret) and
// the operators' CLI.
const (
	MemberClient   = "member-app"
	MemberRedirect = "https://app.example/callback"
	Confidential   = "portal"
	PortalSecret   = "portal-secret-value"
	OperatorClient = "ops-cli"
	OpsRedirect    = "http://127.0.0.1:5555/cb"
)

// PKCE returns a new code verifier and its S256 challenge.
func PKCE() (verifier, challenge string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b) + "abc"
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// AuthParams is a valid authorization request of the member client with
// challenge.
func AuthParams(challenge string) url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {MemberClient},
		"redirect_uri":          {MemberRedirect},
		"scope":                 {"openid profile email account:read"},
		"state":                 {"st-123"},
		"nonce":                 {"n-456"},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
		"resource":              {Issuer + "/"},
	}
}

// Client runs requests through a school's authorization server (Handler)
// as a person's browser and the member client would, in process.
type Client struct {
	TB      testing.TB
	Handler http.Handler
}

// Serve runs one request, with the headers hdr.
func (c Client) Serve(method, target string, body io.Reader, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, body)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	c.Handler.ServeHTTP(rec, req)
	return rec
}

// Authorize asks the authorization endpoint q, signed in as person (one
// of People; "" for nobody signed in).
func (c Client) Authorize(q url.Values, person string) *httptest.ResponseRecorder {
	hdr := map[string]string{}
	if person != "" {
		hdr["Cookie"] = "session=" + person
	}
	return c.Serve("GET", sitepath.Authorize+"?"+q.Encode(), nil, hdr)
}

// The fields of a page's form, as the pages write them: the consent
// form's parked request, and the CSRF token of any form.
var (
	RequestIDPattern = regexp.MustCompile(`name="request" value="([^"]+)"`)
	CSRFPattern      = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
)

// Consent submits the consent form of the page in rec as person, with
// decision ("approve" or "deny").
func (c Client) Consent(rec *httptest.ResponseRecorder, person, decision string) *httptest.ResponseRecorder {
	c.TB.Helper()
	page := rec.Body.String()
	rm, cm := RequestIDPattern.FindStringSubmatch(page), CSRFPattern.FindStringSubmatch(page)
	if rm == nil || cm == nil {
		c.TB.Fatalf("no consent form in %d response:\n%s", rec.Code, page)
	}
	form := url.Values{"request": {rm[1]}, "csrf_token": {cm[1]}, "decision": {decision}}
	return c.Serve("POST", sitepath.Consent, strings.NewReader(form.Encode()), map[string]string{
		"Content-Type": "application/x-www-form-urlencoded", "Cookie": "session=" + person,
		"Origin": Issuer})
}

// RedirectParams is the query of the redirect in rec, which must go to
// prefix.
func RedirectParams(tb testing.TB, rec *httptest.ResponseRecorder, prefix string) url.Values {
	tb.Helper()
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusFound && rec.Code != http.StatusSeeOther || !strings.HasPrefix(loc, prefix) {
		tb.Fatalf("want a redirect to %s, got %d %q\n%s", prefix, rec.Code, loc, rec.Body.String())
	}
	u, err := url.Parse(loc)
	if err != nil {
		tb.Fatal(err)
	}
	return u.Query()
}

// Code runs the authorization request q as the student, approving the
// consent page if one is shown, and returns the code.
func (c Client) Code(q url.Values) string {
	c.TB.Helper()
	rec := c.Authorize(q, "student")
	if rec.Code == http.StatusOK {
		rec = c.Consent(rec, "student", "approve")
	}
	p := RedirectParams(c.TB, rec, q.Get("redirect_uri"))
	if p.Get("code") == "" {
		c.TB.Fatalf("no code: %v", p)
	}
	return p.Get("code")
}

// Token posts form to the token endpoint and returns the status and the
// JSON answer, which must not be cached.
func (c Client) Token(form url.Values) (int, map[string]any) {
	c.TB.Helper()
	rec := c.Serve("POST", sitepath.Token, strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		c.TB.Fatalf("token endpoint answered non-JSON %d: %s", rec.Code, rec.Body.String())
	}
	if rec.Header().Get("Cache-Control") != "no-store" {
		c.TB.Errorf("token response without Cache-Control: no-store")
	}
	return rec.Code, m
}

// Exchange redeems code with verifier for the member client.
func (c Client) Exchange(code, verifier string) (int, map[string]any) {
	return c.Token(url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {MemberRedirect}, "client_id": {MemberClient}, "code_verifier": {verifier},
		"resource": {Issuer}})
}

// Tokens runs the whole flow for the member client as the student and
// returns the token response.
func (c Client) Tokens() map[string]any {
	c.TB.Helper()
	v, ch := PKCE()
	status, m := c.Exchange(c.Code(AuthParams(ch)), v)
	if status != http.StatusOK {
		c.TB.Fatalf("exchange: %d %v", status, m)
	}
	return m
}

// UntrustedRedirects are the changes to AuthParams that leave the
// authorization endpoint no redirect it may trust (an unknown client, a
// redirect_uri that is not exactly a registered one): it must answer
// with its error page, never a redirect.
var UntrustedRedirects = map[string]func(url.Values){
	"unknown client":        func(q url.Values) { q.Set("client_id", "nope") },
	"missing client":        func(q url.Values) { q.Del("client_id") },
	"unregistered redirect": func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb") },
	"redirect prefix only":  func(q url.Values) { q.Set("redirect_uri", MemberRedirect+"/more") },
	"redirect with query":   func(q url.Values) { q.Set("redirect_uri", MemberRedirect+"?x=1") },
	"missing redirect":      func(q url.Values) { q.Del("redirect_uri") },
	"repeated redirect":     func(q url.Values) { q.Add("redirect_uri", MemberRedirect) },
	"case-changed redirect": func(q url.Values) { q.Set("redirect_uri", strings.ToUpper(MemberRedirect)) },
}
