package authserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

const legacyAudience = "http://127.0.0.1:9080"

// verifyWithJWKS checks an assertion the way a legacy server does: the
// site's published keys, its issuer, the legacy audience, typ.
func verifyWithJWKS(t *testing.T, f *fixture, raw, audience string) map[string]any {
	t.Helper()
	published, err := f.srv.keys.JWKS(f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.Parse(published)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jwt.ParseString(raw, jwt.WithKeySet(set), jwt.WithIssuer(issuer), jwt.WithAudience(audience),
		jwt.WithClock(jwt.ClockFunc(f.clock.Now))); err != nil {
		t.Fatalf("assertion does not verify with the JWKS: %v", err)
	}
	msg, err := jws.ParseString(raw, jws.WithCompact())
	if err != nil {
		t.Fatal(err)
	}
	hdr := msg.Signatures()[0].ProtectedHeaders()
	typ, _ := hdr.Type()
	kid, _ := hdr.KeyID()
	alg, _ := hdr.Algorithm()
	if typ != AssertionType || alg.String() != "ES256" || kid != f.srv.keys.signer(f.clock.Now()).KID {
		t.Errorf("header typ=%q alg=%v kid=%q, want %s, ES256 and the signing key's kid", typ, alg, kid, AssertionType)
	}
	var claims map[string]any
	if err := json.Unmarshal(msg.Payload(), &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

func TestIdentityAssertionClaims(t *testing.T) {
	f := newFixture(t)
	raw := f.tokens()["access_token"].(string)
	tok, err := f.srv.LookupAccessToken(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.srv.IdentityAssertion(tok, legacyAudience)
	if err != nil {
		t.Fatal(err)
	}
	claims := verifyWithJWKS(t, f, a, legacyAudience)
	now := f.clock.Now().Unix()
	want := map[string]any{
		"iss": issuer, "aud": legacyAudience, "sub": "member-1", "email": "student@demo.school",
		"name": "Sam Student", "org_id": "demo", "roles": []any{"student"},
		"scope": "openid profile email account:read", "client_id": memberClient, "token_audience": "member",
		"iat": float64(now), "exp": float64(now + 300),
	}
	for k, v := range want {
		if got, _ := json.Marshal(claims[k]); string(got) != mustJSON(t, v) {
			t.Errorf("claim %s = %s, want %s", k, got, mustJSON(t, v))
		}
	}
	if len(claims) != len(want) {
		t.Errorf("claims %v, want exactly %v", claims, want)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An ID token and an assertion come from the same key; typ and aud are
// what tell them apart.
func TestIdentityAssertionIsNotAnIDToken(t *testing.T) {
	f := newFixture(t)
	m := f.tokens()
	tok, err := f.srv.LookupAccessToken(context.Background(), m["access_token"].(string))
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.srv.IdentityAssertion(tok, legacyAudience)
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string]string{"id_token": m["id_token"].(string), "assertion": a} {
		msg, err := jws.ParseString(raw, jws.WithCompact())
		if err != nil {
			t.Fatal(err)
		}
		typ, _ := msg.Signatures()[0].ProtectedHeaders().Type()
		var c struct {
			Aud string `json:"aud"`
		}
		_ = json.Unmarshal(msg.Payload(), &c)
		wantTyp, wantAud := "JWT", memberClient
		if name == "assertion" {
			wantTyp, wantAud = AssertionType, legacyAudience
		}
		if typ != wantTyp || c.Aud != wantAud {
			t.Errorf("%s: typ %q aud %q, want %q and %q", name, typ, c.Aud, wantTyp, wantAud)
		}
	}
}

// exp is the earlier of the access token's expiry and iat + 5 minutes.
func TestIdentityAssertionExpiry(t *testing.T) {
	f := newFixture(t)
	now := f.clock.Now()
	tests := []struct {
		name     string
		tokenTTL time.Duration
		want     time.Duration
	}{
		{"long-lived token: 5 minutes", time.Hour, 5 * time.Minute},
		{"token expiring sooner: its expiry", 90 * time.Second, 90 * time.Second},
		{"token expiring at 5 minutes", 5 * time.Minute, 5 * time.Minute},
		{"token expiring in a second", time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := &policy.Token{Subject: "member-1", Audience: store.AudienceMember, ExpiresAt: now.Add(tt.tokenTTL)}
			a, err := f.srv.IdentityAssertion(tok, legacyAudience)
			if err != nil {
				t.Fatal(err)
			}
			claims := verifyWithJWKS(t, f, a, legacyAudience)
			if exp := int64(claims["exp"].(float64)); exp != now.Add(tt.want).Unix() {
				t.Errorf("exp = iat + %ds, want iat + %v", exp-now.Unix(), tt.want)
			}
		})
	}
}

// A token whose life ends in the middle of a second: the assertion names
// the second it ends in, so that a request the gateway lets through in the
// token's last fraction of a second carries an assertion the legacy
// server still accepts (rounded down, it had expired already).
func TestIdentityAssertionCoversTheTokensLastFraction(t *testing.T) {
	f := newFixture(t)
	end := f.clock.Now().Truncate(time.Second).Add(90*time.Second + 700*time.Millisecond)
	tok := &policy.Token{Subject: "member-1", Audience: store.AudienceMember, ExpiresAt: end}
	f.clock.Advance(end.Add(-100 * time.Millisecond).Sub(f.clock.Now())) // the token's last 100 ms
	a, err := f.srv.IdentityAssertion(tok, legacyAudience)
	if err != nil {
		t.Fatal(err)
	}
	claims := verifyWithJWKS(t, f, a, legacyAudience) // at the clock's now
	if exp := int64(claims["exp"].(float64)); exp != end.Unix()+1 {
		t.Errorf("exp %d, want %d: the second the token's life ends in", exp, end.Unix()+1)
	}
}

// One signature per validated token: requests that share a cached token
// share its assertion, and a new validation (after a purge or the cache's
// 5 s) signs anew. ES256 signatures are randomized, so an equal string is
// the same signature, never a second one.
func TestIdentityAssertionSignedOncePerValidation(t *testing.T) {
	f := newFixture(t)
	raw := f.tokens()["access_token"].(string)
	ctx := context.Background()
	lookup := func() *policy.Token {
		t.Helper()
		tok, err := f.srv.LookupAccessToken(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	assertion := func(tok *policy.Token, aud string) string {
		t.Helper()
		a, err := f.srv.IdentityAssertion(tok, aud)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	// Concurrent first requests on one validated token sign once.
	first := lookup()
	got := make([]string, 16)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = assertion(lookup(), legacyAudience) })
	}
	wg.Wait()
	for i, a := range got {
		if a != got[0] {
			t.Fatalf("request %d got another signature: the token was signed more than once", i)
		}
	}
	if a := assertion(first, legacyAudience); a != got[0] {
		t.Fatal("a second lookup of the cached token signed again")
	}

	f.clock.Advance(cacheTTL - time.Second)
	if a := assertion(lookup(), legacyAudience); a != got[0] {
		t.Error("within the cache's lifetime the assertion was signed again")
	}

	other := assertion(first, "https://legacy.example")
	if other == got[0] || verifyWithJWKS(t, f, other, "https://legacy.example")["aud"] != "https://legacy.example" {
		t.Error("another audience must get its own assertion")
	}

	f.srv.cache.purge()
	purged := assertion(lookup(), legacyAudience)
	if purged == got[0] {
		t.Error("after a cache purge the token was not validated and signed anew")
	}
	verifyWithJWKS(t, f, purged, legacyAudience)

	f.clock.Advance(cacheTTL + time.Second) // past the cache entry's 5 s
	if a := assertion(lookup(), legacyAudience); a == purged || strings.Count(a, ".") != 2 {
		t.Error("a new validation after the cache's lifetime must sign anew")
	}
}
