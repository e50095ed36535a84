package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The authorization request is the bench client's, with PKCE S256 of the
// verifier the code is kept with, offline_access (else Hydra issues no
// refresh token), a state of at least 8 characters (Hydra refuses
// shorter) and no resource parameter.
func TestHydraAuthorizeURL(t *testing.T) {
	u, err := url.Parse(hydraAuthorizeURL("http://127.0.0.1:4444", "verifier-1"))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Path != "/oauth2/auth" || q.Get("client_id") != benchClientID || q.Get("redirect_uri") != benchRedirect ||
		q.Get("response_type") != "code" || q.Get("code_challenge") != challenge("verifier-1") ||
		q.Get("code_challenge_method") != "S256" || len(q.Get("state")) < 8 || q.Has("resource") {
		t.Errorf("authorization request %s", u)
	}
	scopes := strings.Fields(q.Get("scope"))
	for _, want := range []string{"openid", "offline_access", "profile", "email", "account:read"} {
		if !strings.Contains(" "+q.Get("scope")+" ", " "+want+" ") {
			t.Errorf("scope %v lacks %s", scopes, want)
		}
	}
}

// The admin API's bodies: a public client, a login not remembered, every
// scope granted with the person's claims in the ID token.
func TestHydraAdminBodies(t *testing.T) {
	var client struct {
		ID         string   `json:"client_id"`
		Auth       string   `json:"token_endpoint_auth_method"`
		Grants     []string `json:"grant_types"`
		Scope      string   `json:"scope"`
		Redirects  []string `json:"redirect_uris"`
		Responses  []string `json:"response_types"`
		SecretLess string   `json:"client_secret"`
	}
	if err := json.Unmarshal(hydraClientJSON(), &client); err != nil {
		t.Fatal(err)
	}
	if client.ID != benchClientID || client.Auth != "none" || client.SecretLess != "" || client.Scope != hydraScope ||
		strings.Join(client.Grants, " ") != "authorization_code refresh_token" ||
		len(client.Redirects) != 1 || client.Redirects[0] != benchRedirect || len(client.Responses) != 1 {
		t.Errorf("client %+v", client)
	}
	var login struct {
		Subject  string `json:"subject"`
		Remember *bool  `json:"remember"`
	}
	if err := json.Unmarshal(hydraLoginAccept(), &login); err != nil || login.Subject != "member-1" ||
		login.Remember == nil || *login.Remember {
		t.Errorf("login %s: %v", hydraLoginAccept(), err)
	}
	var consent struct {
		Scope   []string `json:"grant_scope"`
		Session struct {
			IDToken map[string]any `json:"id_token"`
		} `json:"session"`
	}
	if err := json.Unmarshal(hydraConsentAccept(), &consent); err != nil {
		t.Fatal(err)
	}
	if strings.Join(consent.Scope, " ") != hydraScope || consent.Session.IDToken["email"] != "student@bench.example" {
		t.Errorf("consent %s", hydraConsentAccept())
	}
}

// Hydra connects by URL to the bench's server, which listens on a socket
// only: its directory and port in the query, with the pool's size.
func TestHydraDSN(t *testing.T) {
	got, err := hydraDSN("host='/tmp/pg sock' port=5432 user=postgres dbname=hydra sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Scheme != "postgres" || u.User.Username() != "postgres" || u.Path != "/hydra" || q.Get("host") != "/tmp/pg sock" ||
		q.Get("port") != "5432" || q.Get("sslmode") != "disable" || q.Get("max_conns") != "16" {
		t.Errorf("DSN %s", got)
	}
	if _, err := hydraDSN("host='unterminated"); err == nil {
		t.Error("a DSN that does not parse")
	}
}

// fakeHydra answers the login and consent flow as Hydra does: each step a
// redirect, a CSRF cookie per flow that must come back, the challenges
// accepted only through the admin API. It counts flows that crossed.
type fakeHydra struct {
	t       *testing.T
	mu      sync.Mutex
	flows   map[string]string // challenge → the flow's CSRF value
	crossed int
	public  *httptest.Server
	admin   *httptest.Server
}

func newFakeHydra(t *testing.T) *fakeHydra {
	f := &fakeHydra{t: t, flows: map[string]string{}}
	f.public = httptest.NewServer(http.HandlerFunc(f.servePublic))
	f.admin = httptest.NewServer(http.HandlerFunc(f.serveAdmin))
	t.Cleanup(func() { f.public.Close(); f.admin.Close() })
	return f
}

func (f *fakeHydra) servePublic(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case q.Has("code_challenge"): // the authorization request
		flow := randomVerifier()
		f.flows["login-"+flow] = flow
		http.SetCookie(w, &http.Cookie{Name: "csrf_login", Value: flow})
		http.Redirect(w, r, "https://bench-login.example/login?login_challenge=login-"+flow, http.StatusFound)
	case q.Has("login_verifier"), q.Has("consent_verifier"):
		step, next := "login", "consent"
		if q.Has("consent_verifier") {
			step, next = "consent", ""
		}
		c, err := r.Cookie("csrf_" + step)
		flow := strings.TrimPrefix(q.Get(step+"_verifier"), "ok-")
		if err != nil || c.Value != flow {
			f.crossed++
			http.Error(w, "csrf", http.StatusForbidden)
			return
		}
		if next == "" {
			http.Redirect(w, r, benchRedirect+"?code=code-"+flow+"&state=bench-state", http.StatusFound)
			return
		}
		f.flows["consent-"+flow] = flow
		http.SetCookie(w, &http.Cookie{Name: "csrf_consent", Value: flow})
		http.Redirect(w, r, "https://bench-login.example/consent?consent_challenge=consent-"+flow, http.StatusFound)
	default:
		http.Error(w, "unexpected", http.StatusBadRequest)
	}
}

func (f *fakeHydra) serveAdmin(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	step, param := "login", "login_challenge"
	if strings.Contains(r.URL.Path, "/consent/") {
		step, param = "consent", "consent_challenge"
	}
	f.mu.Lock()
	flow, ok := f.flows[r.URL.Query().Get(param)]
	f.mu.Unlock()
	want := string(hydraLoginAccept())
	if step == "consent" {
		want = string(hydraConsentAccept())
	}
	if r.Method != http.MethodPut || !ok || string(body) != want || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad accept", http.StatusBadRequest)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]string{
		"redirect_to": f.public.URL + "/oauth2/auth?" + step + "_verifier=ok-" + flow})
}

// A code is one whole login-and-consent flow; concurrent flows keep
// their own cookies (one jar each), and a refusal comes back as an error.
func TestHydraCodeFlow(t *testing.T) {
	f := newFakeHydra(t)
	h := &hydraClient{public: f.public.URL, admin: f.admin.URL, http: &http.Client{Timeout: 10 * time.Second}}
	var wg sync.WaitGroup
	codes := make([]pendingCode, 16)
	errs := make([]error, len(codes))
	for i := range codes {
		wg.Go(func() { codes[i], errs[i] = h.code(context.Background()) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, c := range codes {
		if errs[i] != nil || !strings.HasPrefix(c.code, "code-") || c.verifier == "" || seen[c.code] {
			t.Errorf("flow %d: %+v, %v", i, c, errs[i])
		}
		seen[c.code] = true
	}
	if f.crossed != 0 {
		t.Errorf("%d flows crossed cookies", f.crossed)
	}

	// Hydra redirecting with an error (RFC 6749 §4.1.2.1) is reported.
	if _, err := queryParam(benchRedirect+"?error=access_denied&error_description=no", "code"); err == nil ||
		!strings.Contains(err.Error(), "access_denied") {
		t.Errorf("error redirect: %v", err)
	}
	// The admin API answers the authorization request with no redirect.
	bad := &hydraClient{public: f.admin.URL, admin: f.admin.URL, http: h.http}
	if _, err := bad.code(context.Background()); err == nil {
		t.Error("a flow without a redirect gave a code")
	}
}

func TestJWTAlg(t *testing.T) {
	for jws, want := range map[string]string{
		"eyJhbGciOiJFUzI1NiIsImtpZCI6ImsifQ.e30.sig": "ES256",
		"eyJhbGciOiJSUzI1NiJ9.e30.sig":               "RS256",
		"not a jwt":                                  "",
		"":                                           "",
	} {
		if got := jwtAlg(jws); got != want {
			t.Errorf("jwtAlg(%q) = %q, want %q", jws, got, want)
		}
	}
}

// A missing prerequisite skips Hydra's scenario with what to do: a go
// command that cannot fetch the module, or no PostgreSQL; the table says
// SKIPPED and the notes why.
func TestHydraSkips(t *testing.T) {
	_, err := hydraBinary(t.TempDir(), filepath.Join(t.TempDir(), "no-go"))
	var skip *skipError
	if !errors.As(err, &skip) || !strings.Contains(skip.msg, "go mod download "+hydraModule+"@"+hydraVersion) {
		t.Errorf("no go command: %v", err)
	}

	s := &stack{pgMissing: "the store scenario needs PostgreSQL's server binaries (apt-get install postgresql)"}
	if _, err := s.startHydra(); !errors.As(err, &skip) || !strings.Contains(skip.msg, "apt-get install postgresql") {
		t.Errorf("no PostgreSQL: %v", err)
	}

	b := &bench{stack: &stack{skipped: map[string]string{scenarioHydra: skip.msg}}}
	if err := b.hydraScenario(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.peerTable.String(), "| hydra | SKIPPED |") || !strings.Contains(b.notes.String(), "SKIPPED hydra: Hydra runs on") {
		t.Errorf("table:\n%s\nnotes:\n%s", b.peerTable.String(), b.notes.String())
	}
}

// Built before, Hydra is not built again (nor the module proxy asked).
func TestHydraBuiltOnce(t *testing.T) {
	cache := t.TempDir()
	bin := filepath.Join(cache, "hydra@"+hydraVersion, "hydra")
	if err := mkdirFile(bin); err != nil {
		t.Fatal(err)
	}
	got, err := hydraBinary(cache, filepath.Join(t.TempDir(), "no-go"))
	if err != nil || got != bin {
		t.Errorf("%q, %v", got, err)
	}
}

func mkdirFile(name string) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, nil, 0o755)
}
