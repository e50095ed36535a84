package pages

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
	"github.com/schoolgate/schoolgate/store/storetest"
)

// The pages are tested as a school serves them: an authorization server
// with these pages, on a bbolt store, in front of a fake legacy site,
// every request through the server's route table.

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

// logBuffer keeps what the server and its pages log, for the tests that
// look at it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type fixture struct {
	t testing.TB
	// srv is the authorization server, pages its pages.
	srv   *authserver.Server
	pages *Pages
	// store is the store beneath fails, which the server stands on.
	store store.Store
	fails *storetest.Failing
	clock *clock
	logs  *logBuffer
}

const (
	memberClient   = "member-app"
	confidential   = "portal"
	portalSecret   = "portal-secret-value"
	operatorClient = "ops-cli"
	memberRedirect = "https://app.example/callback"
	opsRedirect    = "http://127.0.0.1:5555/cb"
)

// newFixture is a school's authorization server with its pages.
func newFixture(t testing.TB) *fixture {
	return newFixtureWith(t, nil)
}

// newFixtureWith is newFixture with the server's configuration changed by
// edit, when not nil.
func newFixtureWith(t testing.TB, edit func(*authserver.Config)) *fixture {
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
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, store: st, fails: &storetest.Failing{Store: st},
		clock: &clock{now: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}, logs: &logBuffer{}}
	logger := slog.New(slog.NewTextHandler(f.logs, nil))
	cfg := authserver.Config{
		Issuer:     issuer,
		SessionURL: legacy.URL + "/api/session",
		LoginURL:   "/login",
		Options: authserver.Options{Vendors: []authserver.VendorClient{
			{ClientID: memberClient, Name: "Member App", RedirectURIs: []string{memberRedirect}},
			{ClientID: confidential, Name: "Portal", RedirectURIs: []string{memberRedirect}, Secret: portalSecret,
				Scopes: []string{"openid", "profile", "email", "account:read"}},
			{ClientID: operatorClient, Name: "Ops CLI", RedirectURIs: []string{opsRedirect}, Audience: store.AudienceOperator},
		}},
		Logger: logger,
		Now:    f.clock.Now,
		Pages: func(as *authserver.Server) authserver.Pages {
			f.pages = New(as, Config{Logger: logger, Now: f.clock.Now})
			return f.pages
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	if f.srv, err = authserver.New(context.Background(), cfg, f.fails); err != nil {
		t.Fatal(err)
	}
	return f
}

// failingFixture is a fixture whose server's store can be made to fail.
func failingFixture(t testing.TB) (*fixture, *storetest.Failing) {
	f := newFixture(t)
	return f, f.fails
}

// randomString is 256 random bits, base64url.
func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashToken is how the server keeps a secret, a code or an untimed token:
// its SHA-256, in hex.
func hashToken(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
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

func refreshForm(rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {memberClient}}
}
