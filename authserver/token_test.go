package authserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/schoolgate/schoolgate/sitepath"
)

func TestCodeExchangeIssuesTokensAndIDToken(t *testing.T) {
	f := newFixture(t)
	m := f.tokens()
	if m["token_type"] != "Bearer" || m["expires_in"] != float64(3600) ||
		m["scope"] != "openid profile email account:read" {
		t.Errorf("token response: %v", m)
	}
	at, rt := m["access_token"].(string), m["refresh_token"].(string)
	if !strings.HasPrefix(at, "sgat_") || !strings.HasPrefix(rt, "sgrt_") || len(at) < 48 {
		t.Errorf("token format: %q %q", at, rt)
	}
	claims := verifyIDToken(t, f, m["id_token"].(string))
	want := map[string]any{"iss": issuer, "aud": memberClient, "sub": "member-1", "nonce": "n-456",
		"email": "student@demo.school", "name": "Sam Student", "org_id": "demo"}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("id_token %s = %v, want %v", k, claims[k], v)
		}
	}
	if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != 600 {
		t.Errorf("id_token lifetime %v s, want 600", exp-iat)
	}
	if _, ok := claims["auth_time"]; !ok {
		t.Error("id_token lacks auth_time")
	}
}

// verifyIDToken checks the signature against the published JWKS by kid.
func verifyIDToken(t *testing.T, f *fixture, raw string) map[string]any {
	t.Helper()
	rec := f.serve("GET", sitepath.JWKS, nil, nil)
	set, err := jwk.Parse(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	msg, err := jws.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := msg.Signatures()[0].ProtectedHeaders().KeyID()
	if kid == "" {
		t.Fatal("id_token has no kid")
	}
	payload, err := jws.Verify([]byte(raw), jws.WithKeySet(set))
	if err != nil {
		t.Fatalf("id_token does not verify against the JWKS: %v", err)
	}
	if _, err := jws.Verify([]byte(raw), jws.WithKey(jwa.RS256(), []byte("x"))); err == nil {
		t.Fatal("verification with a wrong key must fail")
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

func TestCodeExchangeRejections(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(url.Values)
		status int
		code   string
	}{
		{"wrong verifier", func(v url.Values) { v.Set("code_verifier", strings.Repeat("a", 50)) }, 400, "invalid_grant"},
		{"malformed verifier", func(v url.Values) { v.Set("code_verifier", "short") }, 400, "invalid_request"},
		{"missing verifier", func(v url.Values) { v.Del("code_verifier") }, 400, "invalid_request"},
		{"wrong redirect", func(v url.Values) { v.Set("redirect_uri", memberRedirect+"x") }, 400, "invalid_grant"},
		{"missing redirect", func(v url.Values) { v.Del("redirect_uri") }, 400, "invalid_request"},
		{"other client", func(v url.Values) { v.Set("client_id", operatorClient) }, 400, "invalid_grant"},
		{"unknown client", func(v url.Values) { v.Set("client_id", "nobody") }, 401, "invalid_client"},
		{"missing resource", func(v url.Values) { v.Del("resource") }, 400, "invalid_target"},
		{"foreign resource", func(v url.Values) { v.Set("resource", "https://other.example") }, 400, "invalid_target"},
		{"unknown code", func(v url.Values) { v.Set("code", "sgac_nope") }, 400, "invalid_grant"},
		{"missing code", func(v url.Values) { v.Del("code") }, 400, "invalid_request"},
		{"agent_auth grant", func(v url.Values) { v.Set("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer") }, 400, "unsupported_grant_type"},
		{"token exchange grant", func(v url.Values) { v.Set("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange") }, 400, "unsupported_grant_type"},
		{"missing grant", func(v url.Values) { v.Del("grant_type") }, 400, "invalid_request"},
		{"public client sends secret", func(v url.Values) { v.Set("client_secret", "x") }, 401, "invalid_client"},
		{"repeated parameter with a hostile name", func(v url.Values) { v["a\"b\\\u00e9\x01"] = []string{"1", "2"} }, 400, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			v, c := pkce()
			form := url.Values{"grant_type": {"authorization_code"}, "code": {f.code(authParams(c), v)},
				"redirect_uri": {memberRedirect}, "client_id": {memberClient}, "code_verifier": {v},
				"resource": {issuer}}
			tc.mutate(form)
			status, m := f.token(form)
			desc, _ := m["error_description"].(string)
			if status != tc.status || m["error"] != tc.code || desc == "" || !isErrorText(desc) {
				t.Errorf("got %d %v, want %d %s", status, m, tc.status, tc.code)
			}
		})
	}
}

func TestTokenEndpointRequestShape(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, method, ctype, body, query string
		status                           int
		// err is the error code when it tells the case apart: a form
		// read and its grant refused, or the form itself refused.
		err string
	}{
		{"json body", "POST", "application/json", `{"grant_type":"authorization_code"}`, "", 400, ""},
		{"GET", "GET", "", "", "", 405, ""},
		{"query parameters", "POST", "application/x-www-form-urlencoded", "grant_type=refresh_token", "?refresh_token=x", 400, ""},
		{"repeated parameter", "POST", "application/x-www-form-urlencoded", "grant_type=refresh_token&grant_type=refresh_token", "", 400, ""},
		{"huge body", "POST", "application/x-www-form-urlencoded", "x=" + strings.Repeat("a", 200<<10), "", 400, ""},
		{"type with a charset", "POST", "application/x-www-form-urlencoded; charset=UTF-8", refreshBody, "", 400, "invalid_grant"},
		{"type in capitals", "POST", "Application/X-WWW-Form-URLEncoded", refreshBody, "", 400, "invalid_grant"},
		{"no type", "POST", "", refreshBody, "", 400, "invalid_request"},
		{"another form type", "POST", "multipart/form-data; boundary=x", refreshBody, "", 400, "invalid_request"},
		{"bad escape", "POST", "application/x-www-form-urlencoded", refreshBody + "&x=%zz", "", 400, "invalid_request"},
		{"empty body", "POST", "application/x-www-form-urlencoded", "", "", 400, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := f.serve(tc.method, sitepath.Token+tc.query, strings.NewReader(tc.body), map[string]string{"Content-Type": tc.ctype})
			var m map[string]any
			if rec.Code != tc.status || json.Unmarshal(rec.Body.Bytes(), &m) != nil || m["error"] == nil ||
				tc.err != "" && m["error"] != tc.err {
				t.Errorf("got %d %s", rec.Code, rec.Body.String())
			}
		})
	}
}

// refreshBody is a well-formed refresh request of an unknown token.
const refreshBody = "grant_type=refresh_token&refresh_token=sgrt_unknown&client_id=" + memberClient

func TestCodeIsSingleUseAndReplayRevokes(t *testing.T) {
	f := newFixture(t)
	v, c := pkce()
	code := f.code(authParams(c), v)
	status, first := f.exchange(code, v)
	if status != 200 {
		t.Fatal(first)
	}
	at := first["access_token"].(string)
	if _, err := f.srv.LookupAccessToken(t.Context(), at); err != nil {
		t.Fatalf("fresh token invalid: %v", err)
	}
	status, second := f.exchange(code, v)
	if status != 400 || second["error"] != "invalid_grant" {
		t.Fatalf("replay: %d %v", status, second)
	}
	if _, err := f.srv.LookupAccessToken(t.Context(), at); err == nil {
		t.Error("a replayed code must revoke the tokens it issued")
	}
	if status, m := f.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first["refresh_token"].(string)},
		"client_id": {memberClient}}); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("refresh after replay: %d %v", status, m)
	}
}

func TestCodeExpires(t *testing.T) {
	f := newFixture(t)
	v, c := pkce()
	code := f.code(authParams(c), v)
	f.clock.Advance(61 * time.Second)
	if status, m := f.exchange(code, v); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("expired code: %d %v", status, m)
	}
}

func refreshForm(rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {memberClient}}
}

func TestRefreshRotationAndReuseDetection(t *testing.T) {
	f := newFixture(t)
	m := f.tokens()
	rt1 := m["refresh_token"].(string)

	status, r2 := f.token(refreshForm(rt1))
	if status != 200 || r2["refresh_token"] == rt1 || r2["id_token"] != nil {
		t.Fatalf("refresh: %d %v", status, r2)
	}
	rt2 := r2["refresh_token"].(string)

	// Within the grace window a concurrent client may present rt1 again.
	f.clock.Advance(2 * time.Second)
	if status, r := f.token(refreshForm(rt1)); status != 200 {
		t.Fatalf("reuse inside the grace window: %d %v", status, r)
	}
	// After it, reuse revokes the whole grant.
	f.clock.Advance(20 * time.Second)
	if status, r := f.token(refreshForm(rt1)); status != 400 || r["error"] != "invalid_grant" {
		t.Fatalf("reuse after the grace window: %d %v", status, r)
	}
	if status, r := f.token(refreshForm(rt2)); status != 400 || r["error"] != "invalid_grant" {
		t.Errorf("the grant should be revoked: %d %v", status, r)
	}
	if _, err := f.srv.LookupAccessToken(t.Context(), r2["access_token"].(string)); err == nil {
		t.Error("access tokens of a revoked grant must be invalid")
	}
}

func TestRefreshScopeAndClientBinding(t *testing.T) {
	f := newFixture(t)
	rt := f.tokens()["refresh_token"].(string)

	form := refreshForm(rt)
	form.Set("scope", "openid courses:write")
	if status, m := f.token(form); status != 400 || m["error"] != "invalid_scope" {
		t.Errorf("widening: %d %v", status, m)
	}
	form = refreshForm(rt)
	form.Set("client_id", operatorClient)
	if status, m := f.token(form); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("other client: %d %v", status, m)
	}
	form = refreshForm(rt)
	form.Set("scope", "account:read")
	status, m := f.token(form)
	if status != 200 || m["scope"] != "account:read" {
		t.Fatalf("narrowing: %d %v", status, m)
	}
	tok, err := f.srv.LookupAccessToken(t.Context(), m["access_token"].(string))
	if err != nil || len(tok.Scopes) != 1 || tok.Resource != issuer {
		t.Errorf("narrowed token: %+v %v", tok, err)
	}
	// The next refresh still may ask for the full grant.
	if status, m2 := f.token(refreshForm(m["refresh_token"].(string))); status != 200 ||
		m2["scope"] != "openid profile email account:read" {
		t.Errorf("refresh after narrowing: %d %v", status, m2)
	}
}

func TestConfidentialClientAuthentication(t *testing.T) {
	f := newFixture(t)
	v, c := pkce()
	q := authParams(c)
	q.Set("client_id", confidential)
	q.Set("scope", "openid account:read")
	code := f.code(q, v)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {memberRedirect},
		"client_id": {confidential}, "code_verifier": {v}, "resource": {issuer}}
	if status, m := f.token(form); status != 401 || m["error"] != "invalid_client" {
		t.Errorf("missing secret: %d %v", status, m)
	}
	form.Set("client_secret", "wrong")
	if status, m := f.token(form); status != 401 || m["error"] != "invalid_client" {
		t.Errorf("wrong secret: %d %v", status, m)
	}
	form.Set("client_secret", portalSecret)
	if status, m := f.token(form); status != 200 {
		t.Errorf("right secret: %d %v", status, m)
	}
}

func TestSecretsAndTokensAreHashedAtRest(t *testing.T) {
	f := newFixture(t)
	m := f.tokens()
	f.store.Close()
	raw, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{m["access_token"].(string), m["refresh_token"].(string), portalSecret,
		strings.TrimPrefix(m["access_token"].(string), "sgat_")} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the store holds %q in clear", secret[:12])
		}
	}
}

func TestUserInfo(t *testing.T) {
	f := newFixture(t)
	at := f.tokens()["access_token"].(string)
	rec := f.serve("GET", sitepath.UserInfo, nil, map[string]string{"Authorization": "Bearer " + at})
	var m map[string]any
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &m) != nil {
		t.Fatalf("userinfo: %d %s", rec.Code, rec.Body.String())
	}
	if m["sub"] != "member-1" || m["email"] != "student@demo.school" || m["name"] != "Sam Student" ||
		m["org_id"] != "demo" || len(m["roles"].([]any)) != 1 {
		t.Errorf("userinfo: %v", m)
	}
	for _, auth := range []string{"", "Bearer nope", "Bearer sgat_unknown", "Basic abc"} {
		rec := f.serve("GET", sitepath.UserInfo, nil, map[string]string{"Authorization": auth})
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Header().Get("WWW-Authenticate"), "resource_metadata=") {
			t.Errorf("%q: %d %q", auth, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
	}
}

func TestRevocation(t *testing.T) {
	f := newFixture(t)
	m := f.tokens()
	at, rt := m["access_token"].(string), m["refresh_token"].(string)
	revoke := func(token, client string) int {
		form := url.Values{"token": {token}, "client_id": {client}}
		return f.serve("POST", sitepath.Revoke, strings.NewReader(form.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}).Code
	}
	// Another client's revocation is a silent no-op.
	if code := revoke(at, operatorClient); code != 200 {
		t.Errorf("other client: %d", code)
	}
	if _, err := f.srv.LookupAccessToken(t.Context(), at); err != nil {
		t.Fatal("another client revoked the token")
	}
	if code := revoke("sgat_unknown", memberClient); code != 200 {
		t.Errorf("unknown token: %d", code)
	}
	// Warm the cache, then revoke: the next lookup must fail.
	if code := revoke(at, memberClient); code != 200 {
		t.Fatal(code)
	}
	if _, err := f.srv.LookupAccessToken(t.Context(), at); err == nil {
		t.Error("revoked access token still valid")
	}
	if status, _ := f.token(refreshForm(rt)); status != 200 {
		t.Error("revoking an access token must not revoke the refresh token")
	}

	m = f.tokens()
	if _, err := f.srv.LookupAccessToken(t.Context(), m["access_token"].(string)); err != nil {
		t.Fatal(err)
	}
	if code := revoke(m["refresh_token"].(string), memberClient); code != 200 {
		t.Fatal(code)
	}
	if _, err := f.srv.LookupAccessToken(t.Context(), m["access_token"].(string)); err == nil {
		t.Error("revoking a refresh token must revoke its grant's access tokens")
	}
	if code := revoke(at, "unknown-client"); code != 401 {
		t.Errorf("unauthenticated revocation: %d", code)
	}
}

func TestIntrospection(t *testing.T) {
	f := newFixture(t)
	m := f.tokens()
	introspect := func(token, client string) map[string]any {
		form := url.Values{"token": {token}, "client_id": {client}}
		rec := f.serve("POST", sitepath.Introspect, strings.NewReader(form.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
		return out
	}
	got := introspect(m["access_token"].(string), memberClient)
	want := map[string]any{"active": true, "client_id": memberClient, "sub": "member-1", "aud": issuer,
		"iss": issuer, "token_type": "Bearer", "scope": "openid profile email account:read"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("introspection %s = %v, want %v", k, got[k], v)
		}
	}
	if got := introspect(m["access_token"].(string), operatorClient); got["active"] != false || len(got) != 1 {
		t.Errorf("another client's token: %v", got)
	}
	if got := introspect("garbage", memberClient); got["active"] != false {
		t.Errorf("garbage: %v", got)
	}
	if got := introspect(m["refresh_token"].(string), memberClient); got["active"] != true {
		t.Errorf("refresh token: %v", got)
	}
}

func TestDiscoveryFollowsKeys(t *testing.T) {
	f := newFixture(t)
	rec := f.serve("GET", sitepath.OIDCConfig, nil, nil)
	var m map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	if m["jwks_uri"] != issuer+sitepath.JWKS || m["issuer"] != issuer {
		t.Errorf("discovery: %v", m)
	}
	// Rotation publishes the new key before it signs.
	kid, err := f.srv.Keys().Rotate(context.Background(), f.clock.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	jwks := f.serve("GET", sitepath.JWKS, nil, nil).Body.String()
	if !strings.Contains(jwks, kid) {
		t.Error("a rotated key must be published at once")
	}
	first := f.tokens()
	verifyIDToken(t, f, first["id_token"].(string))
	msg, _ := jws.Parse([]byte(first["id_token"].(string)))
	if got, _ := msg.Signatures()[0].ProtectedHeaders().KeyID(); got == kid {
		t.Error("a new key must not sign before its publish delay has passed")
	}
	f.clock.Advance(2 * time.Hour)
	second := f.tokens()
	msg, _ = jws.Parse([]byte(second["id_token"].(string)))
	if got, _ := msg.Signatures()[0].ProtectedHeaders().KeyID(); got != kid {
		t.Errorf("after the publish delay the new key %s should sign, got %s", kid, got)
	}
}

// A loopback client registered with client_secret_post authenticates with
// its secret at the token, revocation and introspection endpoints; without
// it, with a wrong one or in the Authorization header it gets 401
// invalid_client.
func TestConfidentialLoopbackClientAuthentication(t *testing.T) {
	f := newFixture(t)
	_, reg := f.register("application/json", `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/cb"],`+
		`"token_endpoint_auth_method":"client_secret_post"}`)
	id, secret := reg["client_id"].(string), reg["client_secret"].(string)
	v, ch := pkce()
	q := operatorParams(id, "http://127.0.0.1:40123/cb")
	q.Set("code_challenge", ch)
	code := redirectParams(t, f.consent(f.authorize(q, "owner"), "owner", "approve"), "http://127.0.0.1:40123/cb").Get("code")
	exchange := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {q.Get("redirect_uri")},
		"client_id": {id}, "code_verifier": {v}}

	var challenge string // the last answer's WWW-Authenticate
	post := func(path string, form url.Values, basic bool) (int, map[string]any) {
		req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if basic {
			req.SetBasicAuth(id, secret)
		}
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		challenge = rec.Header().Get("WWW-Authenticate")
		return rec.Code, m
	}
	with := func(form url.Values, secret string) url.Values {
		out := url.Values{}
		for k, v := range form {
			out[k] = v
		}
		if secret != "" {
			out.Set("client_secret", secret)
		}
		return out
	}
	for _, path := range []string{sitepath.Token, sitepath.Revoke, sitepath.Introspect} {
		form := exchange
		if path != sitepath.Token {
			form = url.Values{"token": {"sgat_unknown"}, "client_id": {id}}
		}
		for _, tc := range []struct {
			name  string
			form  url.Values
			basic bool
		}{
			{"no secret", with(form, ""), false},
			{"wrong secret", with(form, "sgcs_wrong"), false},
			{"secret in the Authorization header", with(form, ""), true},
		} {
			if status, m := post(path, tc.form, tc.basic); status != http.StatusUnauthorized || m["error"] != "invalid_client" {
				t.Errorf("%s, %s: %d %v, want 401 invalid_client", path, tc.name, status, m)
			}
			// RFC 6749 §5.2: a challenge of the scheme the client tried, and
			// none when it authenticated in the body (no scheme is offered).
			if tc.basic != strings.HasPrefix(challenge, "Basic ") || (!tc.basic && challenge != "") {
				t.Errorf("%s, %s: WWW-Authenticate %q", path, tc.name, challenge)
			}
		}
	}

	status, tok := post(sitepath.Token, with(exchange, secret), false)
	if status != http.StatusOK {
		t.Fatalf("exchange with the secret: %d %v", status, tok)
	}
	at := tok["access_token"].(string)
	if status, m := post(sitepath.Introspect, url.Values{"token": {at}, "client_id": {id}, "client_secret": {secret}}, false); status != 200 || m["active"] != true {
		t.Errorf("introspection with the secret: %d %v", status, m)
	}
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}, "client_id": {id}}
	if status, m := post(sitepath.Token, refresh, false); status != http.StatusUnauthorized || m["error"] != "invalid_client" {
		t.Errorf("refresh without the secret: %d %v", status, m)
	}
	if status, _ := post(sitepath.Revoke, url.Values{"token": {at}, "client_id": {id}, "client_secret": {secret}}, false); status != 200 {
		t.Errorf("revocation with the secret: %d", status)
	}
	if _, m := post(sitepath.Introspect, url.Values{"token": {at}, "client_id": {id}, "client_secret": {secret}}, false); m["active"] != false {
		t.Errorf("the revoked token is still active: %v", m)
	}
}

// operatorParams is an operator-audience request to a loopback redirect.
func operatorParams(clientID, redirect string) url.Values {
	_, ch := pkce()
	q := authParams(ch)
	q.Set("client_id", clientID)
	q.Set("redirect_uri", redirect)
	q.Set("scope", "openid courses:read")
	q.Del("resource")
	return q
}

// grantsIssued records the grant types the server counts.
type grantsIssued struct {
	nopObserver
	mu     sync.Mutex
	grants []string
}

func (o *grantsIssued) TokenIssued(grant string) {
	o.mu.Lock()
	o.grants = append(o.grants, grant)
	o.mu.Unlock()
}

// TestGrantTypeDispatch holds each grant_type to its own redeemer (each
// names its own missing parameter), the grants the server advertises to
// the ones it accepts, and the issued-token count to the grant's name.
func TestGrantTypeDispatch(t *testing.T) {
	f := newFixture(t)
	obs := &grantsIssued{}
	f.srv.cfg.Observer = obs
	for _, c := range []struct{ grantType, code, desc string }{
		{"authorization_code", "invalid_request", "code is required"},
		{"refresh_token", "invalid_request", "refresh_token is required"},
		{"", "invalid_request", "grant_type is required"},
		{"password", "unsupported_grant_type", "supported grant types: authorization_code, refresh_token"},
		{"Refresh_Token", "unsupported_grant_type", "supported grant types: authorization_code, refresh_token"},
	} {
		status, m := f.token(url.Values{"grant_type": {c.grantType}, "client_id": {memberClient}})
		if status != http.StatusBadRequest || m["error"] != c.code || m["error_description"] != c.desc {
			t.Errorf("grant_type %q: %d %v", c.grantType, status, m)
		}
	}
	tokens := f.tokens()
	if status, m := f.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tokens["refresh_token"].(string)},
		"client_id": {memberClient}}); status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, m)
	}
	if got := strings.Join(obs.grants, " "); got != "authorization_code refresh_token" {
		t.Errorf("counted %q", got)
	}

	want := []any{"authorization_code", "refresh_token"}
	var meta map[string]any
	_ = json.Unmarshal(f.serve("GET", sitepath.ASMetadata, nil, nil).Body.Bytes(), &meta)
	if !reflect.DeepEqual(meta["grant_types_supported"], want) {
		t.Errorf("grant_types_supported = %v", meta["grant_types_supported"])
	}
	rec := f.serve("POST", sitepath.Register, strings.NewReader(`{"redirect_uris":["http://127.0.0.1:1/cb"],"grant_types":["refresh_token","authorization_code"]}`),
		map[string]string{"Content-Type": "application/json"})
	var reg map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &reg); err != nil || rec.Code != http.StatusCreated || !reflect.DeepEqual(reg["grant_types"], want) {
		t.Errorf("registration: %d %v", rec.Code, reg)
	}
}

// A token answer may be kept by no cache (RFC 6749 §5.1), and its
// header values stay apart: a handler adding to one changes no other.
func TestTokenAnswerHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, &tokenResponse{AccessToken: "a", TokenType: "Bearer"})
	h := rec.Header()
	want := http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}, "Pragma": {"no-cache"}}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("headers %v, want %v", h, want)
	}
	h.Add("Content-Type", "x")
	h.Add("Cache-Control", "private")
	if got := h.Values("Cache-Control"); !slices.Equal(got, []string{"no-store", "private"}) {
		t.Errorf("Cache-Control %q", got)
	}
	if got := h.Values("Pragma"); !slices.Equal(got, []string{"no-cache"}) {
		t.Errorf("Pragma %q after adding to the others", got)
	}
}
