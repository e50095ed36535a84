package authserver

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
	"github.com/schoolgate/schoolgate/store/storetest"
)

// The test school, its people and clients: schooltest's, by the names
// this package's tests use.
const (
	issuer         = schooltest.Issuer
	memberClient   = schooltest.MemberClient
	confidential   = schooltest.Confidential
	portalSecret   = schooltest.PortalSecret
	operatorClient = schooltest.OperatorClient
	memberRedirect = schooltest.MemberRedirect
	opsRedirect    = schooltest.OpsRedirect
)

var (
	people         = schooltest.People
	pkce           = schooltest.PKCE
	authParams     = schooltest.AuthParams
	redirectParams = schooltest.RedirectParams
	reRequest      = schooltest.RequestIDPattern
	reCSRF         = schooltest.CSRFPattern
)

type fixture struct {
	t     testing.TB
	srv   *Server
	store store.Store
	clock *schooltest.Clock
	path  string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureWith(t, nil)
}

// newFixtureWith is newFixture with a change to the configuration.
func newFixtureWith(t testing.TB, change func(*Config)) *fixture {
	t.Helper()
	legacy := schooltest.LegacySessions(t)
	path := filepath.Join(t.TempDir(), "school.db")
	st, err := boltstore.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A test's store does not sync its file: no test here checks what a
	// crash leaves (boltstore's own tests do), and the syncs were most of
	// the package's time. A benchmark keeps the syncs it measures.
	if _, bench := t.(*testing.B); !bench {
		if err := boltstore.NoSync(st); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { st.Close() })
	clk := schooltest.NewClock(schooltest.Epoch)
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

// client runs the flow's requests through the fixture's server
// (schooltest.Client; the methods below are its, by this package's
// names).
func (f *fixture) client() schooltest.Client { return schooltest.Client{TB: f.t, Handler: f.srv} }

func (f *fixture) serve(method, target string, body io.Reader, hdr map[string]string) *httptest.ResponseRecorder {
	return f.client().Serve(method, target, body, hdr)
}

func (f *fixture) authorize(q url.Values, person string) *httptest.ResponseRecorder {
	return f.client().Authorize(q, person)
}

func (f *fixture) consent(rec *httptest.ResponseRecorder, person, decision string) *httptest.ResponseRecorder {
	return f.client().Consent(rec, person, decision)
}

// code returns a code of q for the student; verifier is q's and unused.
func (f *fixture) code(q url.Values, verifier string) string { return f.client().Code(q) }

func (f *fixture) token(form url.Values) (int, map[string]any) { return f.client().Token(form) }

func (f *fixture) exchange(code, verifier string) (int, map[string]any) {
	return f.client().Exchange(code, verifier)
}

func (f *fixture) tokens() map[string]any { return f.client().Tokens() }

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
