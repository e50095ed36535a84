package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/dpopclient"
	"github.com/schoolgate/schoolgate/policy"
)

// dpopRequest sends a request to path with the credential auth ("" for
// none) and the DPoP headers given.
func (o *oauthLoad) dpopRequest(ctx context.Context, method, path, auth, contentType, body string, proofs ...string) reply {
	req, err := http.NewRequestWithContext(ctx, method, o.origin+path, strings.NewReader(body))
	if err != nil {
		return reply{err: err}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for _, p := range proofs {
		req.Header.Add("DPoP", p)
	}
	return o.do(req)
}

const formType = "application/x-www-form-urlencoded"

func (o *oauthLoad) exchangeDPoP(ctx context.Context, code, verifier string, proofs ...string) reply {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {o.redirect},
		"client_id": {o.clientID}, "code_verifier": {verifier}, "resource": {o.origin}}
	return o.dpopRequest(ctx, http.MethodPost, "/api/oauth/token", "", formType, form.Encode(), proofs...)
}

func (o *oauthLoad) refreshDPoP(ctx context.Context, rt string, proofs ...string) reply {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {o.clientID}}
	return o.dpopRequest(ctx, http.MethodPost, "/api/oauth/token", "", formType, form.Encode(), proofs...)
}

// account calls the Account API with a DPoP-bound token and proofs.
func (o *oauthLoad) account(ctx context.Context, path, token string, proofs ...string) reply {
	return o.dpopRequest(ctx, http.MethodPost, path, "DPoP "+token, "application/json", viewerQuery, proofs...)
}

// oauthError is the error code of a JSON error body.
func (r reply) oauthError() string {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error
}

// dpopChallenge is the DPoP challenge among r's WWW-Authenticate values;
// bearer reports whether a Bearer challenge came first.
func (r reply) dpopChallenge() (params map[string]string, bearer bool) {
	values := r.header.Values("WWW-Authenticate")
	for i, v := range values {
		if p, err := policy.ParseSchemeChallenge(policy.SchemeDPoP, v); err == nil {
			_, berr := policy.ParseChallenge(values[0])
			return p, i == 1 && berr == nil
		}
	}
	return nil, false
}

// TestDPoPThroughCaddy: a member client binds its tokens to a DPoP key at
// a real Caddy, uses them at the Account API, /mcp and UserInfo, and the
// hostile corpus of proofs is refused as RFC 9449 says — 401 with the
// error in the DPoP challenge beside the Bearer one and resource_metadata
// — and changes nothing: the token and its refresh token work after it.
func TestDPoPThroughCaddy(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	// An https redirect URI proves the client, so that the consent the
	// sign-in gave is remembered for the test's further authorizations.
	redirect := "https://dpop-app.example/callback"
	dir := t.TempDir()
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "data"),
		vendorBlock("DPoP App", "dpop-app", redirect, "member", loadScope)+"\t\trate_limit off\n"))
	o := signInForLoad(t, gw.URL, "dpop-app", redirect, loadScope, "student@demo.school", "student")
	ctx := t.Context()
	key := dpopclient.MustKey("ES256")
	now := time.Now
	tokenURL := gw.URL + "/api/oauth/token"
	graphql := gw.URL + "/account/graphql"

	code, verifier, r := o.authorize(ctx)
	if code == "" {
		t.Fatalf("authorize: %v", r)
	}
	r = o.exchangeDPoP(ctx, code, verifier, key.Proof("POST", tokenURL, "", now()))
	p, ok := r.pair()
	if !ok || !strings.Contains(string(r.body), `"token_type":"DPoP"`) {
		t.Fatalf("exchange with a proof: %d %s", r.status, r.body)
	}
	at := p.Access
	proof := func(change dpopclient.Claims) string {
		c := dpopclient.Claims{"jti": dpopclient.NewJTI(), "htm": "POST", "htu": graphql, "iat": now().Unix(), "ath": dpopclient.ATH(at)}
		for k, v := range change {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return key.Sign(nil, c)
	}
	if r := o.account(ctx, "/account/graphql", at, proof(nil)); r.status != 200 {
		t.Fatalf("the Account API with a proof: %d %s", r.status, r.body)
	}
	// The canonical path decides, as for the policy: another spelling of
	// the path, proved as sent or as the gateway reads it; a query is no
	// part of htu.
	for _, path := range []string{"/account/%67raphql", "/account/./graphql", "/account/graphql?x=1"} {
		if r := o.account(ctx, path, at, proof(dpopclient.Claims{"htu": gw.URL + strings.Split(path, "?")[0]})); r.status != 200 {
			t.Errorf("%s proved as sent: %d %s", path, r.status, r.body)
		}
	}
	if r := o.account(ctx, "/account/%67raphql", at, proof(nil)); r.status != 200 {
		t.Errorf("/account/%%67raphql proved canonical: %d %s", r.status, r.body)
	}
	mcp := o.dpopRequest(ctx, "POST", "/mcp", "DPoP "+at, "application/json",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"my_enrollments","arguments":{}}}`,
		key.Proof("POST", gw.URL+"/mcp", at, now()))
	if mcp.status != 200 || strings.Contains(string(mcp.body), `"isError":true`) {
		t.Errorf("/mcp my_enrollments: %d %s", mcp.status, mcp.body)
	}
	if r := o.dpopRequest(ctx, "GET", "/api/oauth/userinfo", "DPoP "+at, "", "", key.Proof("GET", gw.URL+"/api/oauth/userinfo", at, now())); r.status != 200 {
		t.Errorf("UserInfo: %d %s", r.status, r.body)
	}

	// A bearer token of the same client, for the scheme's refusal.
	code, verifier, _ = o.authorize(ctx)
	bearer, ok := o.exchange(ctx, code, verifier).pair()
	if !ok {
		t.Fatal("a bearer token exchange failed")
	}

	enc := base64.RawURLEncoding.EncodeToString
	good := proof(nil)
	parts := strings.Split(good, ".")
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	withD := map[string]any{}
	for k, v := range key.JWK {
		withD[k] = v
	}
	withD["d"] = enc(priv.D.Bytes())
	used := proof(nil)
	if r := o.account(ctx, "/account/graphql", at, used); r.status != 200 {
		t.Fatalf("a proof before its replay: %d", r.status)
	}
	for _, tc := range []struct {
		name, auth string
		proofs     []string
		code       string
	}{
		{"alg none", "DPoP " + at, []string{enc([]byte(`{"typ":"dpop+jwt","alg":"none","jwk":{"kty":"EC"}}`)) + "." + parts[1] + ".AA"}, "invalid_dpop_proof"},
		{"HS256", "DPoP " + at, []string{dpopclient.SignRaw([]byte("0123456789abcdef0123456789abcdef"), "HS256",
			[]byte(`{"typ":"dpop+jwt","alg":"HS256","jwk":{"kty":"oct","k":"MDEyMzQ1Njc4OWFiY2RlZg"}}`), []byte(parts[1]))}, "invalid_dpop_proof"},
		{"an unknown alg", "DPoP " + at, []string{key.Sign(map[string]any{"alg": "ES666"}, nil)}, "invalid_dpop_proof"},
		{"typ JWT", "DPoP " + at, []string{key.Sign(map[string]any{"typ": "JWT"}, nil)}, "invalid_dpop_proof"},
		{"no jwk", "DPoP " + at, []string{key.Sign(map[string]any{"jwk": nil}, nil)}, "invalid_dpop_proof"},
		{"a jwk with d", "DPoP " + at, []string{key.Sign(map[string]any{"jwk": withD}, nil)}, "invalid_dpop_proof"},
		{"a jwk that did not sign", "DPoP " + at, []string{key.Sign(map[string]any{"jwk": dpopclient.MustKey("ES256").JWK}, nil)}, "invalid_dpop_proof"},
		{"htm GET", "DPoP " + at, []string{proof(dpopclient.Claims{"htm": "GET"})}, "invalid_dpop_proof"},
		{"htu of another path", "DPoP " + at, []string{proof(dpopclient.Claims{"htu": gw.URL + "/mcp"})}, "invalid_dpop_proof"},
		{"htu of another host", "DPoP " + at, []string{proof(dpopclient.Claims{"htu": "http://localhost:" + fmt.Sprint(port) + "/account/graphql"})}, "invalid_dpop_proof"},
		{"htu of another scheme", "DPoP " + at, []string{proof(dpopclient.Claims{"htu": "https" + strings.TrimPrefix(graphql, "http")})}, "invalid_dpop_proof"},
		{"htu with a query", "DPoP " + at, []string{proof(dpopclient.Claims{"htu": graphql + "?x=1"})}, "invalid_dpop_proof"},
		{"htu with a fragment", "DPoP " + at, []string{proof(dpopclient.Claims{"htu": graphql + "#x"})}, "invalid_dpop_proof"},
		{"htu percent-encoded to another path", "DPoP " + at, []string{proof(dpopclient.Claims{"htu": gw.URL + "/account/graphq%6C2"})}, "invalid_dpop_proof"},
		{"htu with dot segments to another path", "DPoP " + at, []string{proof(dpopclient.Claims{"htu": gw.URL + "/account/x/../../graphql"})}, "invalid_dpop_proof"},
		{"iat ten minutes ago", "DPoP " + at, []string{proof(dpopclient.Claims{"iat": now().Add(-10 * time.Minute).Unix()})}, "invalid_dpop_proof"},
		{"iat ten minutes ahead", "DPoP " + at, []string{proof(dpopclient.Claims{"iat": now().Add(10 * time.Minute).Unix()})}, "invalid_dpop_proof"},
		{"a replayed jti", "DPoP " + at, []string{used}, "invalid_dpop_proof"},
		{"ath of another token", "DPoP " + at, []string{proof(dpopclient.Claims{"ath": dpopclient.ATH(bearer.Access)})}, "invalid_dpop_proof"},
		{"a proof by another key", "DPoP " + at, []string{dpopclient.MustKey("ES256").Proof("POST", graphql, at, now())}, "invalid_token"},
		{"two DPoP headers", "DPoP " + at, []string{proof(nil), proof(nil)}, "invalid_dpop_proof"},
		{"a proof over the size bound", "DPoP " + at, []string{proof(dpopclient.Claims{"pad": strings.Repeat("x", policy.MaxProofSize)})}, "invalid_dpop_proof"},
		{"no proof", "DPoP " + at, nil, "invalid_dpop_proof"},
		{"the bound token as Bearer", "Bearer " + at, []string{proof(nil)}, "invalid_token"},
		{"a bearer token with the DPoP scheme", "DPoP " + bearer.Access, []string{key.Proof("POST", graphql, bearer.Access, now())}, "invalid_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := o.dpopRequest(ctx, "POST", "/account/graphql", tc.auth, "application/json", viewerQuery, tc.proofs...)
			ch, bearerFirst := r.dpopChallenge()
			if r.status != http.StatusUnauthorized || r.oauthError() != tc.code || ch == nil || !bearerFirst {
				t.Fatalf("%d %s %q, want 401 %s with Bearer then DPoP challenges", r.status, r.body, r.header.Values("WWW-Authenticate"), tc.code)
			}
			scheme := ch
			if strings.HasPrefix(tc.auth, "Bearer") {
				scheme, _ = policy.ParseChallenge(r.header.Values("WWW-Authenticate")[0])
			}
			if scheme["error"] != tc.code || ch["algs"] == "" || ch["resource_metadata"] != gw.URL+"/.well-known/oauth-protected-resource" {
				t.Errorf("challenges %q: the error %s belongs to the scheme the request used", r.header.Values("WWW-Authenticate"), tc.code)
			}
		})
	}
	other := dpopclient.MustKey("ES256")
	if r := o.refreshDPoP(ctx, p.Refresh, other.Proof("POST", tokenURL, "", now())); r.status != 400 || r.oauthError() != "invalid_grant" {
		t.Errorf("a refresh with another key: %d %s", r.status, r.body)
	}
	if r := o.refreshDPoP(ctx, p.Refresh); r.status != 400 || r.oauthError() != "invalid_grant" {
		t.Errorf("a refresh without a proof: %d %s", r.status, r.body)
	}
	// Nothing changed: the token and its refresh token work as before.
	if r := o.account(ctx, "/account/graphql", at, proof(nil)); r.status != 200 {
		t.Errorf("the token after the refusals: %d %s", r.status, r.body)
	}
	r = o.refreshDPoP(ctx, p.Refresh, key.Proof("POST", tokenURL, "", now()))
	if _, ok := r.pair(); !ok || !strings.Contains(string(r.body), `"token_type":"DPoP"`) {
		t.Errorf("the refresh by the key's holder after the refusals: %d %s", r.status, r.body)
	}
}

// TestDPoPScaleOut: two instances of a school on PostgreSQL that asks for
// nonces. A nonce from A is accepted at B (no store round trip: both
// derive it from the key they share); a token bound at B is used with
// fresh proofs at A and refreshed at A; a proof used at A and replayed at
// B is accepted there once (each instance remembers the proofs it
// accepted, docs/scale-out.md) and refused at either afterwards.
func TestDPoPScaleOut(t *testing.T) {
	s := startScaleOut(t, "\t\tdpop allowed nonce\n")
	ctx := t.Context()
	o := s.o
	origin := s.lb.URL
	key := dpopclient.MustKey("ES256")
	now := time.Now
	tokenURL, graphql := origin+"/api/oauth/token", origin+"/account/graphql"

	code, verifier, r := o.at(s.addrA).authorize(ctx)
	if code == "" {
		t.Fatalf("authorize: %v", r)
	}
	r = o.at(s.addrA).exchangeDPoP(ctx, code, verifier, key.Proof("POST", tokenURL, "", now()))
	nonceA := r.header.Get("DPoP-Nonce")
	if r.status != 400 || r.oauthError() != "use_dpop_nonce" || nonceA == "" {
		t.Fatalf("a proof without a nonce at A: %d %s, DPoP-Nonce %q", r.status, r.body, nonceA)
	}
	withNonce := func(method, u, token string) string {
		return key.ProofWith(method, u, token, now(), dpopclient.Claims{"nonce": nonceA})
	}
	r = o.at(s.addrB).exchangeDPoP(ctx, code, verifier, withNonce("POST", tokenURL, ""))
	p, ok := r.pair()
	if !ok {
		t.Fatalf("the exchange at B with A's nonce: %d %s", r.status, r.body)
	}
	for _, addr := range []string{s.addrA, s.addrB} {
		if r := o.at(addr).account(ctx, "/account/graphql", p.Access, withNonce("POST", graphql, p.Access)); r.status != 200 {
			t.Errorf("the bound token at %s: %d %s", addr, r.status, r.body)
		}
	}
	forged := base64.RawURLEncoding.EncodeToString(make([]byte, 24))
	if r := o.at(s.addrB).account(ctx, "/account/graphql", p.Access,
		key.ProofWith("POST", graphql, p.Access, now(), dpopclient.Claims{"nonce": forged})); r.status != 401 {
		t.Errorf("a nonce not the school's: %d", r.status)
	} else if ch, _ := r.dpopChallenge(); ch["error"] != "use_dpop_nonce" || r.header.Get("DPoP-Nonce") == "" {
		t.Errorf("a nonce not the school's: %q, DPoP-Nonce %q", r.header.Values("WWW-Authenticate"), r.header.Get("DPoP-Nonce"))
	}
	used := withNonce("POST", graphql, p.Access)
	if r := o.at(s.addrA).account(ctx, "/account/graphql", p.Access, used); r.status != 200 {
		t.Fatalf("a proof at A: %d %s", r.status, r.body)
	}
	if r := o.at(s.addrB).account(ctx, "/account/graphql", p.Access, used); r.status != 200 {
		t.Errorf("the proof replayed at B within its window: %d, the documented answer is 200 once", r.status)
	}
	for _, addr := range []string{s.addrA, s.addrB} {
		if r := o.at(addr).account(ctx, "/account/graphql", p.Access, used); r.status != 401 {
			t.Errorf("the proof replayed again at %s: %d, want 401", addr, r.status)
		}
	}
	r = o.at(s.addrA).refreshDPoP(ctx, p.Refresh, withNonce("POST", tokenURL, ""))
	if _, ok := r.pair(); !ok {
		t.Errorf("a refresh at A of the token bound at B: %d %s", r.status, r.body)
	}
}
