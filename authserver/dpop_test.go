package authserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/internal/dpopclient"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
)

var (
	clientKey = dpopclient.MustKey("ES256")
	thiefKey  = dpopclient.MustKey("ES256")
)

// post sends a form to an endpoint with DPoP headers (none, one or
// several) and returns the answer.
func (f *fixture) postDPoP(path string, form url.Values, proofs ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, p := range proofs {
		req.Header.Add("DPoP", p)
	}
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	return rec
}

// tokenProof is a proof of k for the token endpoint now.
func (f *fixture) tokenProof(k *dpopclient.Key) string {
	return k.Proof("POST", issuer+sitepath.Token, "", f.clock.Now())
}

func decode(t testing.TB, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("%d non-JSON: %s", rec.Code, rec.Body)
	}
	return m
}

func exchangeForm(code, verifier string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {memberRedirect},
		"client_id": {memberClient}, "code_verifier": {verifier}, "resource": {issuer}}
}

// dpopTokens runs the flow for the member client (public) with proofs of
// k and returns the token response.
func (f *fixture) dpopTokens(k *dpopclient.Key) map[string]any {
	f.t.Helper()
	v, c := pkce()
	rec := f.postDPoP(sitepath.Token, exchangeForm(f.code(authParams(c), v), v), f.tokenProof(k))
	m := decode(f.t, rec)
	if rec.Code != 200 {
		f.t.Fatalf("exchange with a proof: %d %v", rec.Code, m)
	}
	return m
}

// userinfo calls UserInfo with a credential and proofs.
func (f *fixture) userinfo(auth string, proofs ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", sitepath.UserInfo, nil)
	req.Header.Set("Authorization", auth)
	for _, p := range proofs {
		req.Header.Add("DPoP", p)
	}
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	return rec
}

func (f *fixture) introspection(token, clientID, secret string) map[string]any {
	form := url.Values{"token": {token}, "client_id": {clientID}}
	if secret != "" {
		form.Set("client_secret", secret)
	}
	return decode(f.t, f.postDPoP(sitepath.Introspect, form))
}

// A code exchange with a proof yields a DPoP token bound to the proof's
// key: token_type DPoP, cnf.jkt in introspection (the refresh token of a
// public client too), UserInfo with the DPoP scheme and a proof of the
// key, refused as a bearer token; the ID token is as ever.
func TestDPoPCodeExchange(t *testing.T) {
	f := newFixture(t)
	m := f.dpopTokens(clientKey)
	at, rt := m["access_token"].(string), m["refresh_token"].(string)
	if m["token_type"] != "DPoP" || m["id_token"] == nil {
		t.Fatalf("token response %v, want token_type DPoP and an ID token", m)
	}
	for _, tok := range []string{at, rt} {
		got := f.introspection(tok, memberClient, "")
		if cnf, _ := got["cnf"].(map[string]any); got["active"] != true || cnf["jkt"] != clientKey.JKT {
			t.Errorf("introspection %v, want cnf.jkt %s", got, clientKey.JKT)
		}
	}
	if got := f.introspection(at, memberClient, ""); got["token_type"] != "DPoP" {
		t.Errorf("introspection token_type %v", got["token_type"])
	}
	userinfo := func(k *dpopclient.Key) string { return k.Proof("GET", issuer+sitepath.UserInfo, at, f.clock.Now()) }
	used := userinfo(clientKey)
	if rec := f.userinfo("DPoP "+at, used); rec.Code != 200 || decode(t, rec)["sub"] != "member-1" {
		t.Fatalf("UserInfo with DPoP: %d %s", rec.Code, rec.Body)
	}
	for name, rec := range map[string]*httptest.ResponseRecorder{
		"as a bearer token":      f.userinfo("Bearer " + at),
		"with a thief's proof":   f.userinfo("DPoP "+at, userinfo(thiefKey)),
		"without a proof":        f.userinfo("DPoP " + at),
		"with a replayed proof":  f.userinfo("DPoP "+at, used),
		"with a proof of a POST": f.userinfo("DPoP "+at, clientKey.Proof("POST", issuer+sitepath.UserInfo, at, f.clock.Now())),
	} {
		if rec.Code != http.StatusUnauthorized || !strings.Contains(strings.Join(rec.Header().Values("WWW-Authenticate"), "|"), "DPoP ") {
			t.Errorf("UserInfo %s: %d %q, want 401 with a DPoP challenge", name, rec.Code, rec.Header().Values("WWW-Authenticate"))
		}
	}
}

// A public client's refresh token is bound to the key of the proof it was
// issued with: a refresh with that key works and stays bound; one with
// another key or none is invalid_grant and changes nothing.
func TestDPoPRefreshPublicClient(t *testing.T) {
	f := newFixture(t)
	rt := f.dpopTokens(clientKey)["refresh_token"].(string)
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {memberClient}}
	for name, proofs := range map[string][]string{"another key": {f.tokenProof(thiefKey)}, "no proof": nil} {
		rec := f.postDPoP(sitepath.Token, form, proofs...)
		if m := decode(t, rec); rec.Code != 400 || m["error"] != "invalid_grant" {
			t.Errorf("refresh with %s: %d %v, want invalid_grant", name, rec.Code, m)
		}
	}
	// Nothing changed: the token's holder refreshes as if none of that
	// happened, even after the grace window a replay would have had.
	f.clock.Advance(DefaultRefreshGrace * 2)
	rec := f.postDPoP(sitepath.Token, form, f.tokenProof(clientKey))
	m := decode(t, rec)
	if rec.Code != 200 || m["token_type"] != "DPoP" {
		t.Fatalf("refresh by the key's holder: %d %v", rec.Code, m)
	}
	if cnf, _ := f.introspection(m["refresh_token"].(string), memberClient, "")["cnf"].(map[string]any); cnf["jkt"] != clientKey.JKT {
		t.Errorf("the new refresh token is not bound to the key: %v", cnf)
	}
}

// A confidential client's refresh token is not bound (its secret binds
// it): a refresh with another key gets an access token bound to that key.
func TestDPoPRefreshConfidentialClient(t *testing.T) {
	f := newFixture(t)
	v, c := pkce()
	q := authParams(c)
	q.Set("client_id", confidential)
	form := exchangeForm(f.code(q, v), v)
	form.Set("client_id", confidential)
	form.Set("client_secret", portalSecret)
	rec := f.postDPoP(sitepath.Token, form, f.tokenProof(clientKey))
	m := decode(t, rec)
	if rec.Code != 200 || m["token_type"] != "DPoP" {
		t.Fatalf("exchange: %d %v", rec.Code, m)
	}
	rt := m["refresh_token"].(string)
	if got := f.introspection(rt, confidential, portalSecret); got["cnf"] != nil {
		t.Errorf("a confidential client's refresh token is bound: %v", got)
	}
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {confidential},
		"client_secret": {portalSecret}}
	other := dpopclient.MustKey("EdDSA")
	rec = f.postDPoP(sitepath.Token, refresh, f.tokenProof(other))
	m = decode(t, rec)
	if rec.Code != 200 {
		t.Fatalf("refresh with another key: %d %v", rec.Code, m)
	}
	if cnf, _ := f.introspection(m["access_token"].(string), confidential, portalSecret)["cnf"].(map[string]any); cnf["jkt"] != other.JKT {
		t.Errorf("the refreshed access token is bound to %v, want the new proof's key", cnf)
	}
}

// dpop_jkt binds the code (RFC 9449 §10): it is redeemed with a proof of
// that key only; a redemption with another key or none is invalid_grant
// and leaves the code redeemable.
func TestDPoPCodeBinding(t *testing.T) {
	f := newFixture(t)
	v, c := pkce()
	q := authParams(c)
	q.Set("dpop_jkt", clientKey.JKT)
	form := exchangeForm(f.code(q, v), v)
	for name, proofs := range map[string][]string{"another key": {f.tokenProof(thiefKey)}, "no proof": nil} {
		rec := f.postDPoP(sitepath.Token, form, proofs...)
		if m := decode(t, rec); rec.Code != 400 || m["error"] != "invalid_grant" || !strings.Contains(m["error_description"].(string), "dpop_jkt") {
			t.Errorf("redeeming with %s: %d %v", name, rec.Code, m)
		}
	}
	rec := f.postDPoP(sitepath.Token, form, f.tokenProof(clientKey))
	if m := decode(t, rec); rec.Code != 200 || m["token_type"] != "DPoP" {
		t.Fatalf("redeeming with the key: %d %v", rec.Code, m)
	}
	// A dpop_jkt that is no thumbprint is refused at the authorization.
	q.Set("dpop_jkt", "not-a-thumbprint")
	if p := redirectParams(t, f.authorize(q, "student"), memberRedirect); p.Get("error") != "invalid_request" {
		t.Errorf("a malformed dpop_jkt: %v", p)
	}
}

// Bad proofs at the token endpoint are invalid_dpop_proof and change
// nothing: the code is still good for a good proof.
func TestDPoPTokenEndpointRefusals(t *testing.T) {
	f := newFixture(t)
	v, c := pkce()
	form := exchangeForm(f.code(authParams(c), v), v)
	now := f.clock.Now()
	good := f.tokenProof(clientKey)
	for name, proofs := range map[string][]string{
		"proof for another endpoint": {clientKey.Proof("POST", issuer+sitepath.Revoke, "", now)},
		"proof for another method":   {clientKey.Proof("GET", issuer+sitepath.Token, "", now)},
		"proof for another host":     {clientKey.Proof("POST", "https://evil.example"+sitepath.Token, "", now)},
		"two proofs":                 {good, f.tokenProof(clientKey)},
		"iat in the past":            {clientKey.Proof("POST", issuer+sitepath.Token, "", now.Add(-2*policy.ProofWindow))},
		"not a JWT":                  {"garbage"},
		"symmetric alg":              {dpopclient.SignRaw([]byte("0123456789abcdef0123456789abcdef"), "HS256", []byte(`{"typ":"dpop+jwt","alg":"HS256"}`), []byte(`{}`))},
	} {
		rec := f.postDPoP(sitepath.Token, form, proofs...)
		if m := decode(t, rec); rec.Code != 400 || m["error"] != "invalid_dpop_proof" {
			t.Errorf("%s: %d %v, want invalid_dpop_proof", name, rec.Code, m)
		}
	}
	rec := f.postDPoP(sitepath.Token, form, good)
	if m := decode(t, rec); rec.Code != 200 {
		t.Fatalf("the code after the refusals: %d %v", rec.Code, m)
	}
	// The proof is spent.
	rec = f.postDPoP(sitepath.Token, form, good)
	if m := decode(t, rec); m["error"] != "invalid_dpop_proof" || !strings.Contains(m["error_description"].(string), "used before") {
		t.Errorf("a replayed proof: %d %v", rec.Code, m)
	}
}

// A school that requires DPoP issues no bearer token (invalid_dpop_proof)
// and says so in its metadata; a client registered with
// dpop_bound_access_tokens gets the same where the school allows both.
func TestDPoPRequired(t *testing.T) {
	f := newFixtureWith(t, func(c *Config) { c.DPoP = policy.DPoPRequired })
	v, c := pkce()
	form := exchangeForm(f.code(authParams(c), v), v)
	rec := f.postDPoP(sitepath.Token, form)
	if m := decode(t, rec); rec.Code != 400 || m["error"] != "invalid_dpop_proof" {
		t.Fatalf("a bearer token request: %d %v", rec.Code, m)
	}
	if rec := f.postDPoP(sitepath.Token, form, f.tokenProof(clientKey)); rec.Code != 200 {
		t.Fatalf("with a proof: %d %s", rec.Code, rec.Body)
	}
	prm := decode(t, f.serve("GET", sitepath.ProtectedResource, nil, nil))
	if prm["dpop_bound_access_tokens_required"] != true {
		t.Errorf("protected resource metadata %v", prm)
	}

	f = newFixture(t)
	ctx := context.Background()
	app, err := f.srv.CreateApp(ctx, AppSpec{Name: "Bound", RedirectURIs: []string{memberRedirect},
		Scopes: []string{"openid"}, DPoPBound: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !app.DPoPBound {
		t.Errorf("created %+v, want dpop_bound_access_tokens", app.ClientInfo)
	}
	stored, _ := f.store.GetClient(ctx, app.ClientID)
	if err := f.srv.SetMCPConnections(ctx, true); err != nil || !stored.DPoPBound {
		t.Fatalf("%v, stored %+v", err, stored)
	}
	v, c = pkce()
	q := authParams(c)
	q.Set("client_id", app.ClientID)
	q.Set("scope", "openid")
	form = exchangeForm(f.code(q, v), v)
	form.Set("client_id", app.ClientID)
	if m := decode(t, f.postDPoP(sitepath.Token, form)); m["error"] != "invalid_dpop_proof" {
		t.Errorf("the bound client without a proof: %v", m)
	}
	if rec := f.postDPoP(sitepath.Token, form, f.tokenProof(clientKey)); rec.Code != 200 {
		t.Errorf("the bound client with a proof: %d %s", rec.Code, rec.Body)
	}
}

// With nonces, a token request without one is use_dpop_nonce with the
// nonce in DPoP-Nonce; the retry with it gets the tokens.
func TestDPoPNonceAtTokenEndpoint(t *testing.T) {
	f := newFixtureWith(t, func(c *Config) { c.DPoPNonce = true })
	v, c := pkce()
	form := exchangeForm(f.code(authParams(c), v), v)
	rec := f.postDPoP(sitepath.Token, form, f.tokenProof(clientKey))
	nonce := rec.Header().Get("DPoP-Nonce")
	if m := decode(t, rec); rec.Code != 400 || m["error"] != "use_dpop_nonce" || nonce == "" {
		t.Fatalf("without a nonce: %d %v, DPoP-Nonce %q", rec.Code, m, nonce)
	}
	proof := clientKey.ProofWith("POST", issuer+sitepath.Token, "", f.clock.Now(), dpopclient.Claims{"nonce": nonce})
	rec = f.postDPoP(sitepath.Token, form, proof)
	if rec.Code != 200 || decode(t, rec)["token_type"] != "DPoP" {
		t.Fatalf("with the nonce: %d %s", rec.Code, rec.Body)
	}
	// A later start of the school (another instance) has the same key.
	again, err := New(context.Background(), f.srv.cfg, f.store)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.DPoP().CurrentNonce(); got != nonce {
		t.Errorf("another instance's nonce %q, want %q", got, nonce)
	}
}

// Discovery names DPoP where the school has it: the algorithms (asymmetric
// only) in both authorization server documents and the protected resource
// metadata; nothing with dpop off, where proofs are ignored and tokens are
// bearer tokens.
func TestDPoPDiscovery(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{sitepath.ASMetadata, sitepath.OIDCConfig, sitepath.ProtectedResource} {
		m := decode(t, f.serve("GET", path, nil, nil))
		var algs []string
		for _, a := range m["dpop_signing_alg_values_supported"].([]any) {
			algs = append(algs, a.(string))
		}
		for _, want := range []string{"ES256", "EdDSA", "RS256", "PS256"} {
			if !slices.Contains(algs, want) {
				t.Errorf("%s: algs %v lack %s", path, algs, want)
			}
		}
		if slices.ContainsFunc(algs, func(a string) bool { return strings.HasPrefix(a, "HS") || a == "none" }) {
			t.Errorf("%s lists a symmetric algorithm: %v", path, algs)
		}
	}
	if m := decode(t, f.serve("GET", sitepath.ProtectedResource, nil, nil)); m["dpop_bound_access_tokens_required"] != false {
		t.Errorf("allowed: dpop_bound_access_tokens_required %v", m["dpop_bound_access_tokens_required"])
	}

	f = newFixtureWith(t, func(c *Config) { c.DPoP = policy.DPoPOff })
	for _, path := range []string{sitepath.ASMetadata, sitepath.OIDCConfig, sitepath.ProtectedResource} {
		if m := decode(t, f.serve("GET", path, nil, nil)); m["dpop_signing_alg_values_supported"] != nil {
			t.Errorf("dpop off: %s lists DPoP", path)
		}
	}
	v, c := pkce()
	q := authParams(c)
	q.Set("dpop_jkt", clientKey.JKT)
	rec := f.postDPoP(sitepath.Token, exchangeForm(f.code(q, v), v), f.tokenProof(clientKey))
	if m := decode(t, rec); rec.Code != 200 || m["token_type"] != "Bearer" {
		t.Errorf("dpop off: %d %v, want a bearer token", rec.Code, m)
	}
}

// The identity assertion of a bound token carries its cnf.jkt.
func TestDPoPAssertionCnf(t *testing.T) {
	f := newFixture(t)
	at := f.dpopTokens(clientKey)["access_token"].(string)
	tok, err := f.srv.LookupAccessToken(context.Background(), at)
	if err != nil || tok.JKT != clientKey.JKT {
		t.Fatalf("lookup: %+v, %v", tok, err)
	}
	a, err := f.srv.IdentityAssertion(tok, legacyAudience)
	if err != nil {
		t.Fatal(err)
	}
	claims := verifyWithJWKS(t, f, a, legacyAudience)
	if cnf, _ := claims["cnf"].(map[string]any); cnf["jkt"] != clientKey.JKT {
		t.Errorf("assertion cnf %v, want jkt %s", claims["cnf"], clientKey.JKT)
	}
}
