package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/schoolgate/schoolgate/internal/dpopclient"
)

// The OAuth client side of the bench: a signed-in browser (a cookie) that
// authorizes the bench's vendor client, and the token endpoint calls.

// benchRedirect is https so that the remembered consent answers at once,
// as it does for a web client (a loopback redirect shows the consent page
// every time); the bench never follows the redirect.
const (
	benchClientID = "bench-agent"
	benchRedirect = "https://bench-agent.example/callback"
	benchScope    = "openid profile email account:read"
)

var (
	reConsentRequest = regexp.MustCompile(`name="request" value="([^"]+)"`)
	reConsentCSRF    = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
)

func randomVerifier() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// pendingCode is a code waiting for its exchange.
type pendingCode struct{ code, verifier string }

// tokens is a token response.
type tokens struct {
	Access  string `json:"access_token"`
	Refresh string `json:"refresh_token"`
	IDToken string `json:"id_token"`
}

// oauthClient talks to the gateway as one signed-in person's browser and
// as the bench client.
type oauthClient struct {
	origin string
	http   *http.Client
	// peer marks node-oidc-provider (-peers): its token endpoint is
	// /token and it takes no resource parameter (its resource indicators
	// are off, as the gateway's member tokens need none beyond the issuer).
	peer bool
	// tokenPath is the token endpoint's path where it is neither the
	// gateway's nor node-oidc-provider's (Hydra's /oauth2/token).
	tokenPath string
	// dpop, when set, sends a DPoP proof of this key with every token
	// request (dpop.go), from proofs when set, and expects DPoP tokens.
	dpop   *dpopclient.Key
	proofs *proofPool
}

// authorize gets a code, approving the consent page the first time.
func (o *oauthClient) authorize(ctx context.Context) (pendingCode, error) {
	v := randomVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {benchClientID}, "redirect_uri": {benchRedirect},
		"scope": {benchScope}, "state": {"s"}, "code_challenge": {challenge(v)},
		"code_challenge_method": {"S256"}, "resource": {o.origin}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.origin+"/oauth/authorize?"+q.Encode(), nil)
	req.Header.Set("Cookie", benchCookie+"=signed-in")
	resp, err := o.http.Do(req)
	if err != nil {
		return pendingCode{}, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		resp, err = o.approve(ctx, string(body))
		if err != nil {
			return pendingCode{}, err
		}
	}
	code, err := codeFrom(resp)
	return pendingCode{code, v}, err
}

func (o *oauthClient) approve(ctx context.Context, page string) (*http.Response, error) {
	rm, cm := reConsentRequest.FindStringSubmatch(page), reConsentCSRF.FindStringSubmatch(page)
	if rm == nil || cm == nil {
		return nil, fmt.Errorf("authorize answered a page that is not the consent page: %.300s", page)
	}
	form := url.Values{"request": {rm[1]}, "csrf_token": {cm[1]}, "decision": {"approve"}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, o.origin+"/oauth/consent", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", benchCookie+"=signed-in")
	req.Header.Set("Origin", o.origin)
	resp, err := o.http.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return resp, nil
}

func codeFrom(resp *http.Response) (string, error) {
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode/100 != 3 || err != nil || loc.Query().Get("code") == "" {
		return "", fmt.Errorf("no code: HTTP %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code"), nil
}

// exchange redeems a code; the response must carry an ID token.
func (o *oauthClient) exchange(ctx context.Context, c pendingCode) (tokens, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {c.code},
		"redirect_uri": {benchRedirect}, "client_id": {benchClientID}, "code_verifier": {c.verifier}}
	if !o.peer {
		form.Set("resource", o.origin)
	}
	return o.token(ctx, form, idRequired)
}

// refresh rotates a refresh token.
func (o *oauthClient) refresh(ctx context.Context, rt string) (tokens, error) {
	return o.token(ctx, refreshForm(rt), idAny)
}

func refreshForm(rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {benchClientID}}
}

// refreshWithout rotates a refresh token asking for every scope but
// openid, so that a server that answers a refresh with an ID token
// (node-oidc-provider) signs none; the answer must carry none.
func (o *oauthClient) refreshWithout(ctx context.Context, rt string) (tokens, error) {
	form := refreshForm(rt)
	form.Set("scope", strings.TrimPrefix(benchScope, "openid "))
	return o.token(ctx, form, idForbidden)
}

// What a token answer must say of the ID token.
type idRule int

const (
	idAny idRule = iota
	idRequired
	idForbidden
)

func (o *oauthClient) token(ctx context.Context, form url.Values, id idRule) (tokens, error) {
	endpoint := o.origin + "/api/oauth/token"
	if o.peer {
		endpoint = o.origin + "/token"
	}
	if o.tokenPath != "" {
		endpoint = o.origin + o.tokenPath
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := o.addProof(req); err != nil {
		return tokens{}, err
	}
	resp, err := o.http.Do(req)
	if err != nil {
		return tokens{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var t tokens
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &t) != nil || t.Access == "" || t.Refresh == "" {
		return tokens{}, fmt.Errorf("token endpoint: HTTP %d %.200s", resp.StatusCode, body)
	}
	if err := o.checkTokenType(body); err != nil {
		return tokens{}, err
	}
	if id == idRequired && t.IDToken == "" {
		return tokens{}, fmt.Errorf("no id_token: %.200s", body)
	}
	if id == idForbidden && t.IDToken != "" {
		return tokens{}, fmt.Errorf("an id_token where none was asked for: %.200s", body)
	}
	return t, nil
}
