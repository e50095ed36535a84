package e2e

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// browser is a cookie-keeping HTTP client that stops at the client's
// redirect URI, as a browser hands the code to a native app.
type browser struct {
	t      testing.TB
	client *http.Client
}

func newBrowser(t testing.TB, stopAt string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, client: &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), stopAt) {
			return http.ErrUseLastResponse
		}
		return nil
	}}}
}

func (b *browser) get(u string) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.client.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func (b *browser) post(u string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.client.PostForm(u, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

var (
	reReturnTo = regexp.MustCompile(`name="return_to" value="([^"]*)"`)
	reRequest  = regexp.MustCompile(`name="request" value="([^"]+)"`)
	reCSRF     = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
)

// signInAndApprove drives the browser from the authorization URL through
// the legacy login and the consent page, returning the callback URL.
func (b *browser) signInAndApprove(origin, authURL, email, password string) *url.URL {
	b.t.Helper()
	resp, page := b.get(authURL)
	if resp.Request.URL.Path != "/login" {
		b.t.Fatalf("expected the legacy login page, got %s (%d)", resp.Request.URL, resp.StatusCode)
	}
	m := reReturnTo.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("login page has no return_to:\n%s", page)
	}
	returnTo := html.UnescapeString(m[1])
	resp, page = b.post(origin+"/login", url.Values{"email": {email}, "password": {password}, "return_to": {returnTo}})
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return callbackURL(b.t, resp) // consent remembered
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "csrf_token") {
		b.t.Fatalf("expected the consent page, got %d:\n%s", resp.StatusCode, page)
	}
	rm, cm := reRequest.FindStringSubmatch(page), reCSRF.FindStringSubmatch(page)
	resp, _ = b.post(origin+"/oauth/consent", url.Values{"request": {rm[1]}, "csrf_token": {cm[1]}, "decision": {"approve"}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("consent answered %d", resp.StatusCode)
	}
	return callbackURL(b.t, resp)
}

func callbackURL(t testing.TB, resp *http.Response) *url.URL {
	t.Helper()
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestGoClientsFullFlow drives the whole sequence with golang.org/x/oauth2
// and go-oidc, which verifies the ID token from discovery and the JWKS.
func TestGoClientsFullFlow(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	vendor := fmt.Sprintf("\t\tvendor \"E2E App\" {\n\t\t\tclient_id e2e-app\n\t\t\tredirect_uri %s\n\t\t}\n", redirect)
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "site"), vendor))
	ctx := context.Background()

	provider, err := oidc.NewProvider(ctx, gw.URL)
	if err != nil {
		t.Fatalf("OIDC discovery: %v", err)
	}
	conf := oauth2.Config{ClientID: "e2e-app", RedirectURL: redirect,
		Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile", "email", "account:read"}}
	conf.Endpoint.AuthStyle = oauth2.AuthStyleInParams

	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier),
		oidc.Nonce("nonce-1"), oauth2.SetAuthURLParam("resource", gw.URL))
	cb := newBrowser(t, redirect).signInAndApprove(gw.URL, authURL, "student@demo.school", "student")
	q := cb.Query()
	if q.Get("state") != "state-1" || q.Get("iss") != gw.URL || q.Get("code") == "" {
		t.Fatalf("callback: %s", cb)
	}

	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier),
		oauth2.SetAuthURLParam("resource", gw.URL))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	rawID, _ := tok.Extra("id_token").(string)
	idt, err := provider.Verifier(&oidc.Config{ClientID: "e2e-app"}).Verify(ctx, rawID)
	if err != nil {
		t.Fatalf("ID token: %v", err)
	}
	var claims struct {
		Email string   `json:"email"`
		Name  string   `json:"name"`
		OrgID string   `json:"org_id"`
		Roles []string `json:"roles"`
	}
	if err := idt.Claims(&claims); err != nil || idt.Nonce != "nonce-1" || claims.Email != "student@demo.school" || claims.OrgID == "" {
		t.Errorf("ID token claims: %+v nonce %q err %v", claims, idt.Nonce, err)
	}

	ui, err := provider.UserInfo(ctx, conf.TokenSource(ctx, tok))
	if err != nil || ui.Subject != idt.Subject || ui.Email != "student@demo.school" {
		t.Errorf("userinfo: %+v %v", ui, err)
	}

	// Refresh: a new pair, no ID token.
	old := *tok
	old.Expiry = old.Expiry.Add(-24 * 3600e9)
	fresh, err := conf.TokenSource(ctx, &old).Token()
	if err != nil || fresh.AccessToken == tok.AccessToken || fresh.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh: %v", err)
	}
	if fresh.Extra("id_token") != nil {
		t.Error("a refresh response must carry no id_token")
	}

	// Introspection sees the binding; revocation ends it.
	intro := postForm(t, gw.URL+"/api/oauth/introspect", url.Values{"token": {fresh.AccessToken}, "client_id": {"e2e-app"}})
	im := jsonOf(t, intro.body)
	if im["active"] != true || im["aud"] != gw.URL || im["client_id"] != "e2e-app" {
		t.Errorf("introspection: %v", im)
	}
	if r := postForm(t, gw.URL+"/api/oauth/revoke", url.Values{"token": {fresh.RefreshToken}, "client_id": {"e2e-app"}}); r.status != 200 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	intro = postForm(t, gw.URL+"/api/oauth/introspect", url.Values{"token": {fresh.AccessToken}, "client_id": {"e2e-app"}})
	if jsonOf(t, intro.body)["active"] != false {
		t.Error("revoking the refresh token must end its access tokens")
	}
	if _, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(fresh)); err == nil {
		t.Error("userinfo accepted a revoked token")
	}
}
