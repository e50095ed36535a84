package authserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
	"github.com/schoolgate/schoolgate/store/storetest"
)

const issuer = "https://school.example"

// people the fake legacy site knows, by session cookie value.
var people = map[string]store.Identity{
	"student":  {Subject: "member-1", Email: "student@demo.school", Name: "Sam Student", OrgID: "demo", Roles: []string{"student"}},
	"owner":    {Subject: "operator-1", Email: "owner@demo.school", Name: "Olivia Owner", OrgID: "demo", Roles: []string{"owner"}},
	"nobody":   {Subject: "guest-1", Email: "guest@demo.school", Name: "No Role", OrgID: "demo"},
	"student2": {Subject: "member-2", Email: "second@demo.school", Name: "Second", OrgID: "demo", Roles: []string{"student"}},
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	t     testing.TB
	srv   *Server
	store store.Store
	clock *clock
	path  string
}

const (
	memberClient   = "member-app"
	confidential   = "portal"
	portalSecret   = "portal-secret-value"
	operatorClient = "ops-cli"
	memberRedirect = "https://app.example/callback"
	opsRedirect    = "http://127.0.0.1:5555/cb"
)

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureWith(t, nil)
}

// newFixtureWith is newFixture with a change to the configuration.
func newFixtureWith(t testing.TB, change func(*Config)) *fixture {
	t.Helper()
	legacy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("session")
		var id store.Identity
		ok := false
		if err == nil {
			id, ok = people[c.Value]
		}
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(id)
	}))
	t.Cleanup(legacy.Close)
	path := filepath.Join(t.TempDir(), "school.db")
	st, err := boltstore.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := &clock{now: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	cfg := Config{
		Issuer:     issuer,
		SessionURL: legacy.URL + "/api/session",
		LoginURL:   "/login",
		Options: Options{Vendors: []VendorClient{
			{ClientID: memberClient, Name: "Member App", RedirectURIs: []string{memberRedirect}},
			{ClientID: confidential, Name: "Portal", RedirectURIs: []string{memberRedirect}, Secret: portalSecret,
				Scopes: []string{"openid", "profile", "email", "account:read"}},
			{ClientID: operatorClient, Name: "Ops CLI", RedirectURIs: []string{opsRedirect}, Audience: store.AudienceOperator},
		}},
		Now:   clk.Now,
		Pages: func(*Server) Pages { return testPages{} },
	}
	if change != nil {
		change(&cfg)
	}
	srv, err := New(context.Background(), cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, srv: srv, store: st, clock: clk, path: path}
}

// pkce returns a verifier and its S256 challenge.
func pkce() (string, string) {
	v := randomString() + "abc"
	sum := sha256.Sum256([]byte(v))
	return v, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authParams is a valid member authorization request.
func authParams(challenge string) url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {memberClient},
		"redirect_uri":          {memberRedirect},
		"scope":                 {"openid profile email account:read"},
		"state":                 {"st-123"},
		"nonce":                 {"n-456"},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
		"resource":              {issuer + "/"},
	}
}

// serve runs one request through the server.
func (f *fixture) serve(method, target string, body io.Reader, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, body)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	return rec
}

func (f *fixture) authorize(q url.Values, person string) *httptest.ResponseRecorder {
	hdr := map[string]string{}
	if person != "" {
		hdr["Cookie"] = "session=" + person
	}
	return f.serve("GET", sitepath.Authorize+"?"+q.Encode(), nil, hdr)
}

var (
	reRequest = regexp.MustCompile(`name="request" value="([^"]+)"`)
	reCSRF    = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
)

// consent submits the consent page shown in rec.
func (f *fixture) consent(rec *httptest.ResponseRecorder, person, decision string) *httptest.ResponseRecorder {
	f.t.Helper()
	page := rec.Body.String()
	rm, cm := reRequest.FindStringSubmatch(page), reCSRF.FindStringSubmatch(page)
	if rm == nil || cm == nil {
		f.t.Fatalf("no consent form in %d response:\n%s", rec.Code, page)
	}
	form := url.Values{"request": {rm[1]}, "csrf_token": {cm[1]}, "decision": {decision}}
	return f.serve("POST", sitepath.Consent, strings.NewReader(form.Encode()), map[string]string{
		"Content-Type": "application/x-www-form-urlencoded", "Cookie": "session=" + person,
		"Origin": issuer})
}

// redirectParams parses a redirect's query.
func redirectParams(t testing.TB, rec *httptest.ResponseRecorder, prefix string) url.Values {
	t.Helper()
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusFound && rec.Code != http.StatusSeeOther || !strings.HasPrefix(loc, prefix) {
		t.Fatalf("want a redirect to %s, got %d %q\n%s", prefix, rec.Code, loc, rec.Body.String())
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// code runs authorize and consent for the member client and returns a code
// and its verifier.
func (f *fixture) code(q url.Values, verifier string) string {
	f.t.Helper()
	rec := f.authorize(q, "student")
	if rec.Code == http.StatusOK {
		rec = f.consent(rec, "student", "approve")
	}
	p := redirectParams(f.t, rec, q.Get("redirect_uri"))
	if p.Get("code") == "" {
		f.t.Fatalf("no code: %v", p)
	}
	return p.Get("code")
}

func (f *fixture) token(form url.Values) (int, map[string]any) {
	rec := f.serve("POST", sitepath.Token, strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		f.t.Fatalf("token endpoint answered non-JSON %d: %s", rec.Code, rec.Body.String())
	}
	if rec.Header().Get("Cache-Control") != "no-store" {
		f.t.Errorf("token response without Cache-Control: no-store")
	}
	return rec.Code, m
}

// exchange redeems a code for the member client.
func (f *fixture) exchange(code, verifier string) (int, map[string]any) {
	return f.token(url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {memberRedirect}, "client_id": {memberClient}, "code_verifier": {verifier},
		"resource": {issuer}})
}

// tokens runs the whole flow and returns the token response.
func (f *fixture) tokens() map[string]any {
	f.t.Helper()
	v, c := pkce()
	status, m := f.exchange(f.code(authParams(c), v), v)
	if status != 200 {
		f.t.Fatalf("exchange: %d %v", status, m)
	}
	return m
}

// isErrorText reports whether s may be an error_description: RFC 6749
// §5.2 allows printable ASCII but for '"' and '\'.
func isErrorText(s string) bool {
	for _, r := range s {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return false
		}
	}
	return true
}

// testPages stand in for package pages, which imports this package and
// so cannot serve its tests (package pages tests the server with the real
// pages). They show what the protocol asked of them: the consent page is
// its form, the scopes (those approved before marked) and what was
// decided; the error page is the message in English and its detail.
type testPages struct{}

func (testPages) Consent(w http.ResponseWriter, _ *http.Request, c *ConsentPage) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<h1>%s</h1>\n", html.EscapeString(c.Client.Name))
	if c.Approved {
		fmt.Fprintf(w, "<p id=\"approved-before\">asked each time: %v</p>\n", c.AskEachTime)
	}
	for _, sc := range c.Scopes {
		before := ""
		if slices.Contains(c.Prior, sc) {
			before = " (before)"
		}
		fmt.Fprintf(w, "<li>%s%s</li>\n", html.EscapeString(sc), before)
	}
	fmt.Fprintf(w, `<form method="post" action="%s"><input name="request" value="%s"><input name="csrf_token" value="%s"></form>`,
		sitepath.Consent, c.RequestID, c.CSRF)
}

func (testPages) Error(w http.ResponseWriter, _ *http.Request, status int, e ErrorPage) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	class := "error"
	if e.Unavailable {
		class = "unavailable"
	}
	fmt.Fprintf(w, "<p id=\"error\" class=%q>%s</p>\n", class, html.EscapeString(i18n.Msg("en", e.Key, e.Args...)))
	if e.Detail != "" {
		fmt.Fprintf(w, "<code id=\"detail\">%s</code>\n", html.EscapeString(e.Detail))
	}
}

func (testPages) Account(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }
func (testPages) Admin(w http.ResponseWriter, _ *http.Request)   { w.WriteHeader(http.StatusNoContent) }
func (testPages) Asset(w http.ResponseWriter, _ *http.Request)   { w.WriteHeader(http.StatusNoContent) }

// failingFixture is a fixture whose server's store can be made to fail.
func failingFixture(t testing.TB) (*fixture, *storetest.Failing) {
	f := newFixture(t)
	fs := &storetest.Failing{Store: f.store}
	f.srv.store = fs
	return f, fs
}

// Member applications of the tests, as an operator would create them.
const (
	appRedirect      = "https://tool.example/cb"
	appLoopback      = "http://127.0.0.1:7777/cb"
	appRedirectLines = appRedirect + "\r\n" + appLoopback + "\n"
)

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

// newApp creates a member application as the admin area does, with the
// redirects appRedirect and appLoopback; it returns its id and secret.
func (f *fixture) newApp(name, clientType string, scopes ...string) (string, string) {
	f.t.Helper()
	app, err := f.srv.CreateApp(context.Background(), AppSpec{Name: name, RedirectURIs: []string{appRedirect, appLoopback},
		Scopes: scopes, Confidential: clientType == "confidential"}, "")
	if err != nil {
		f.t.Fatalf("creating %s: %v", name, err)
	}
	return app.ClientID, app.ClientSecret
}

func appAuthParams(clientID, challenge, scope string) url.Values {
	q := authParams(challenge)
	q.Set("client_id", clientID)
	q.Set("redirect_uri", appRedirect)
	q.Set("scope", scope)
	return q
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

// issued is a grant made for a test, with its raw tokens.
type issued struct {
	grantID, access, refresh string
}

// grantTo stores a grant of person to clientID as a redeemed code would,
// and the consent the person gave.
func (f *fixture) grantTo(clientID, person string, scopes ...string) issued {
	f.t.Helper()
	id := people[person]
	c, ok := f.srv.vendors[clientID]
	if !ok {
		var err error
		if c, err = f.store.GetClient(context.Background(), clientID); err != nil {
			f.t.Fatal(err)
		}
	}
	now := f.clock.Now()
	code := randomString()
	err := f.store.PutCode(context.Background(), hashToken(code), &store.Code{Request: store.AuthRequest{ClientID: clientID,
		Scopes: scopes, Audience: c.Audience, Resource: issuer}, Identity: id, AuthTime: now, ExpiresAt: now.Add(DefaultCodeTTL)})
	if err != nil {
		f.t.Fatal(err)
	}
	var out issued
	err = f.store.RedeemCode(context.Background(), hashToken(code), func(code *store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := &store.Grant{ID: randomString(), ClientID: clientID, Audience: c.Audience, Scopes: scopes,
			Resource: issuer, Identity: id, AuthTime: now, CreatedAt: now}
		resp, toks := f.srv.mintTokens(g, scopes, now, "", "")
		out = issued{grantID: g.ID, access: resp.AccessToken, refresh: resp.RefreshToken}
		return g, toks, nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.srv.rememberConsent(context.Background(), clientID, id.Subject, scopes)
	return out
}
