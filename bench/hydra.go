package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Ory Hydra (-peers, scenario hydra): the durable, SQL-backed Go
// authorization server operators deploy, on the same PostgreSQL server as
// the gateway's `store postgres` school (a database of its own). Its
// source is not in the repository: the version below is built once from
// the Go module proxy into the user's cache directory, as oauth2-proxy is.
// Hydra has no sign-in of its own: a login-and-consent app accepts each
// authorization through Hydra's admin API, which the bench does itself
// for every code it prepares (not timed).

const (
	hydraModule = "github.com/ory/hydra/v2"
	// hydraVersion is pinned, not the newest: the bench's configuration
	// and admin calls are those of this version.
	hydraVersion = "v2.3.0"
	// hydraClientModule is the API client Hydra's go.mod replaces with a
	// directory the published module does not contain (it is a module of
	// its own), which `go install module@version` refuses; the build
	// drops that replacement and takes the published client at the
	// version go.mod requires.
	hydraClientModule = "github.com/ory/hydra-client-go/v2"
	// hydraScope is the bench's scope with offline_access, without which
	// Hydra issues no refresh token.
	hydraScope = benchScope + " offline_access"
	// hydraKeySet is the key set Hydra signs ID tokens with; the bench
	// fills it with one ES256 key, as the gateway's and node-oidc-
	// provider's ID tokens are ES256 (Hydra's default is RS256).
	hydraKeySet = "hydra.openid.id-token"
	// hydraMaxConns is Hydra's connection pool, the size of the gateway's
	// default (pgstore): Hydra's own default is twice the CPUs, 4 here.
	hydraMaxConns = 16
	// hydraExchanges bounds the codes of a round of Hydra's scenario, on
	// every side alike: at Hydra's rate here (a few hundred exchanges a
	// second, a login-and-consent flow of five requests to prepare each
	// code) the bench's 20,000 would take most of an hour.
	hydraExchanges = 5000
)

// hydraBinary builds Hydra hydraVersion, once, into cache with the go
// command goTool; a missing prerequisite is a skipError naming it.
func hydraBinary(cache, goTool string) (string, error) {
	dir := filepath.Join(cache, "hydra@"+hydraVersion)
	bin := filepath.Join(dir, "hydra")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	fmt.Fprintf(os.Stderr, "bench: building Ory Hydra %s into %s (the first time takes a few minutes)\n", hydraVersion, dir)
	dl := exec.Command(goTool, "mod", "download", "-json", hydraModule+"@"+hydraVersion)
	dl.Dir = os.TempDir() // outside this module
	out, err := dl.Output()
	var mod struct{ Dir, Error string }
	if err != nil || json.Unmarshal(out, &mod) != nil || mod.Dir == "" {
		return "", skipf("Ory Hydra is built from the Go module proxy, which did not serve it "+
			"(`go mod download %s@%s`: %v %s); with the proxy reachable the bench builds it itself",
			hydraModule, hydraVersion, err, mod.Error)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src, err := os.MkdirTemp(dir, "src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	// The module cache is read-only; the build edits go.mod.
	if err := os.CopyFS(src, os.DirFS(mod.Dir)); err != nil {
		return "", err
	}
	tmp := bin + ".tmp"
	for _, args := range [][]string{
		{"mod", "edit", "-dropreplace", hydraClientModule},
		{"build", "-mod=mod", "-ldflags", "-X " + hydraModule + "/driver/config.Version=" + hydraVersion, "-o", tmp, "."},
	} {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", skipf("could not build Ory Hydra %s (`go %s` in a copy of its module): %v: %.2000s",
				hydraVersion, strings.Join(args, " "), err, out)
		}
	}
	return bin, os.Rename(tmp, bin)
}

// hydraConfig is Hydra's configuration file: PostgreSQL at dsn, its
// public and admin listeners, a login and consent app that never answers
// (the bench accepts through the admin API and only reads where Hydra
// redirects), PKCE required of public clients, logs at error only (the
// bench's Caddy logs no requests either).
func hydraConfig(dsn, publicAddr, adminAddr, secret string) string {
	pubHost, pubPort, _ := strings.Cut(publicAddr, ":")
	admHost, admPort, _ := strings.Cut(adminAddr, ":")
	return fmt.Sprintf(`dsn: %q
log:
  level: error
serve:
  public:
    host: %s
    port: %s
  admin:
    host: %s
    port: %s
urls:
  self:
    issuer: http://%s
  login: https://bench-login.example/login
  consent: https://bench-login.example/consent
secrets:
  system:
    - %s
oauth2:
  pkce:
    enforced_for_public_clients: true
ttl:
  auth_code: 10m
  login_consent_request: 30m
`, dsn, pubHost, pubPort, admHost, admPort, publicAddr, secret)
}

// hydraDSN is the URL Hydra connects with to the database of the
// keyword/value DSN pg (the bench's server listens on a socket only,
// named in the host parameter), with the pool's size.
func hydraDSN(pg string) (string, error) {
	c, err := pgconn.ParseConfig(pg)
	if err != nil {
		return "", err
	}
	q := url.Values{"host": {c.Host}, "port": {fmt.Sprint(c.Port)}, "sslmode": {"disable"},
		"max_conns": {fmt.Sprint(hydraMaxConns)}, "max_idle_conns": {fmt.Sprint(hydraMaxConns)}}
	return "postgres://" + url.User(c.User).String() + "@localhost/" + url.PathEscape(c.Database) + "?" + q.Encode(), nil
}

// hydraClient is the bench's side of Hydra: its OAuth client at the
// public origin and the login-and-consent app at the admin one.
type hydraClient struct {
	public, admin string
	http          *http.Client
}

// clientJSON is the bench's client, as the gateway's vendor client: public
// (PKCE, no secret), the bench's redirect URI and scopes.
func hydraClientJSON() []byte {
	b, _ := json.Marshal(map[string]any{
		"client_id":                  benchClientID,
		"client_name":                "Bench Agent",
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"scope":                      hydraScope,
		"redirect_uris":              []string{benchRedirect},
	})
	return b
}

// hydraAuthorizeURL is the authorization request of one code.
func hydraAuthorizeURL(public, verifier string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {benchClientID}, "redirect_uri": {benchRedirect},
		"scope": {hydraScope}, "state": {"bench-state"}, "code_challenge": {challenge(verifier)},
		"code_challenge_method": {"S256"}}
	return public + "/oauth2/auth?" + q.Encode()
}

// hydraLoginAccept is the login app's answer: the bench's member signed
// in, not remembered (each code is a sign-in of its own).
func hydraLoginAccept() []byte {
	return []byte(`{"subject":"member-1","remember":false}`)
}

// hydraConsentAccept is the consent app's answer: every scope asked for
// granted, and the person's claims in the ID token, as the gateway's.
func hydraConsentAccept() []byte {
	b, _ := json.Marshal(map[string]any{
		"grant_scope": strings.Fields(hydraScope),
		"remember":    false,
		"session": map[string]any{"id_token": map[string]any{
			"email": "student@bench.example", "email_verified": true, "name": "Bench Student"}},
	})
	return b
}

// setup makes the bench's signing key and client through the admin API.
func (h *hydraClient) setup(ctx context.Context) error {
	// Hydra signs with the newest key of the set; an empty set first, so
	// that its own RS256 key made at start-up is not the one.
	if err := h.call(ctx, http.MethodDelete, "/admin/keys/"+hydraKeySet, nil, 0, nil); err != nil {
		return err
	}
	key := []byte(`{"alg":"ES256","kid":"bench-es256","use":"sig"}`)
	if err := h.call(ctx, http.MethodPost, "/admin/keys/"+hydraKeySet, key, http.StatusCreated, nil); err != nil {
		return fmt.Errorf("creating the ES256 signing key: %v", err)
	}
	if err := h.call(ctx, http.MethodPost, "/admin/clients", hydraClientJSON(), http.StatusCreated, nil); err != nil {
		return fmt.Errorf("creating the client: %v", err)
	}
	return nil
}

// call sends a JSON request to the admin API; want 0 accepts any 2xx and
// a 404. The answer is decoded into into when set.
func (h *hydraClient) call(ctx context.Context, method, path string, body []byte, want int, into any) error {
	req, _ := http.NewRequestWithContext(ctx, method, h.admin+path, bytes.NewReader(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	ok := resp.StatusCode == want || want == 0 && (resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusNotFound)
	if !ok {
		return fmt.Errorf("%s %s: HTTP %d %.300s", method, path, resp.StatusCode, raw)
	}
	if into != nil {
		return json.Unmarshal(raw, into)
	}
	return nil
}

// code signs the member in and gets one authorization code: the
// authorization request, Hydra's redirect to the login app, the login
// accepted, the redirect to the consent app, the consent accepted, the
// redirect to the client with the code. Each flow has its own cookies
// (Hydra's CSRF cookies are per client, so concurrent flows must not
// share a jar).
func (h *hydraClient) code(ctx context.Context) (pendingCode, error) {
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Transport: h.http.Transport, Jar: jar, Timeout: h.http.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	v := randomVerifier()
	next := hydraAuthorizeURL(h.public, v)
	for _, step := range []struct{ param, accept string }{
		{"login_challenge", "/admin/oauth2/auth/requests/login/accept"},
		{"consent_challenge", "/admin/oauth2/auth/requests/consent/accept"},
	} {
		loc, err := redirectOf(ctx, browser, next)
		if err != nil {
			return pendingCode{}, err
		}
		challenge, err := queryParam(loc, step.param)
		if err != nil {
			return pendingCode{}, err
		}
		body := hydraLoginAccept()
		if step.param == "consent_challenge" {
			body = hydraConsentAccept()
		}
		var accepted struct {
			RedirectTo string `json:"redirect_to"`
		}
		path := step.accept + "?" + url.Values{step.param: {challenge}}.Encode()
		if err := h.call(ctx, http.MethodPut, path, body, http.StatusOK, &accepted); err != nil {
			return pendingCode{}, err
		}
		next = accepted.RedirectTo
	}
	loc, err := redirectOf(ctx, browser, next)
	if err != nil {
		return pendingCode{}, err
	}
	if !strings.HasPrefix(loc, benchRedirect+"?") {
		return pendingCode{}, fmt.Errorf("Hydra redirected to %q, not to the client", loc)
	}
	code, err := queryParam(loc, "code")
	return pendingCode{code, v}, err
}

// redirectOf GETs u and returns where it redirects.
func redirectOf(ctx context.Context, c *http.Client, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 3 || resp.Header.Get("Location") == "" {
		return "", fmt.Errorf("GET %s: HTTP %d, no redirect: %.300s", u, resp.StatusCode, body)
	}
	return resp.Header.Get("Location"), nil
}

// queryParam is the parameter of a redirect's URL; an error answer (RFC
// 6749 §4.1.2.1) is reported as such.
func queryParam(u, param string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	q := p.Query()
	if v := q.Get(param); v != "" {
		return v, nil
	}
	if e := q.Get("error"); e != "" {
		return "", fmt.Errorf("redirected with error %s: %s", e, q.Get("error_description"))
	}
	return "", fmt.Errorf("redirect %q has no %s", u, param)
}

// introspect checks an access token at Hydra's introspection endpoint:
// active, and the member's.
func (h *hydraClient) introspect(ctx context.Context, token string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.admin+"/admin/oauth2/introspect",
		strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := h.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var got struct {
		Active bool   `json:"active"`
		Sub    string `json:"sub"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &got) != nil || !got.Active || got.Sub != "member-1" {
		return fmt.Errorf("introspection: HTTP %d %.300s", resp.StatusCode, raw)
	}
	return nil
}

// waitReady polls Hydra's admin readiness (its database reachable).
func (h *hydraClient) waitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		resp, err := h.http.Get(h.admin + "/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Hydra was not ready within %s: %v", d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
