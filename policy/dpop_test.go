package policy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/dpopclient"
)

var (
	dpopNow  = time.Unix(1_800_000_000, 0)
	esKey    = dpopclient.MustKey("ES256")
	otherKey = dpopclient.MustKey("ES256")
)

const (
	graphql  = origin + "/account/graphql"
	theToken = "sg_at_member"
)

// target is the request most cases prove: a POST to the Account API with
// theToken.
var target = ProofTarget{Method: "POST", Origin: origin, Path: "/account/graphql", AccessToken: theToken}

// claims are a good proof's claims for target, with changes.
func claims(change dpopclient.Claims) dpopclient.Claims {
	c := dpopclient.Claims{"jti": dpopclient.NewJTI(), "htm": "POST", "htu": graphql,
		"iat": dpopNow.Unix(), "ath": dpopclient.ATH(theToken)}
	for k, v := range change {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// Every algorithm the metadata lists verifies, each with a key of its
// kind, and the thumbprint is the key's.
func TestParseProofAlgorithms(t *testing.T) {
	for _, alg := range DPoPAlgs {
		t.Run(alg, func(t *testing.T) {
			k := dpopclient.MustKey(alg)
			p, err := ParseProof(k.Sign(nil, claims(nil)), target, dpopNow)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if p.JKT != k.JKT || p.IssuedAt != dpopNow.Unix() || p.JTI == "" {
				t.Errorf("proof %+v, want the key's thumbprint %s", p, k.JKT)
			}
		})
	}
}

// The hostile corpus: each proof is refused as invalid_dpop_proof, with a
// reason naming what is wrong.
func TestParseProofRefusals(t *testing.T) {
	rsaKey := dpopclient.MustKey("RS256")
	edKey := dpopclient.MustKey("EdDSA")
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	withPrivate := map[string]any{}
	for k, v := range esKey.JWK {
		withPrivate[k] = v
	}
	withPrivate["d"] = base64.RawURLEncoding.EncodeToString(priv.D.Bytes())
	enc := base64.RawURLEncoding.EncodeToString
	good := esKey.Sign(nil, claims(nil))
	parts := strings.Split(good, ".")
	cases := []struct {
		name, proof, reason string
	}{
		{"alg none", enc([]byte(`{"typ":"dpop+jwt","alg":"none","jwk":{}}`)) + "." + parts[1] + ".x", "alg"},
		{"alg none, no signature", enc([]byte(`{"typ":"dpop+jwt","alg":"none"}`)) + "." + parts[1] + ".", "signed JWT"},
		{"HS256", dpopclient.SignRaw([]byte("secret-secret-secret-secret-1234"), "HS256",
			[]byte(`{"typ":"dpop+jwt","alg":"HS256","jwk":{"kty":"oct","k":"c2VjcmV0"}}`), []byte(`{}`)), "alg"},
		{"unknown alg", esKey.Sign(map[string]any{"alg": "ES999"}, claims(nil)), "alg"},
		{"alg of another kind than the key", esKey.Sign(map[string]any{"alg": "RS256"}, claims(nil)), "not a key for RS256"},
		{"ES384 with a P-256 key", esKey.Sign(map[string]any{"alg": "ES384"}, claims(nil)), "not a key for ES384"},
		{"typ JWT", esKey.Sign(map[string]any{"typ": "JWT"}, claims(nil)), "typ"},
		{"no typ", esKey.Sign(map[string]any{"typ": nil}, claims(nil)), "typ"},
		{"typ not a string", esKey.Sign(map[string]any{"typ": 1}, claims(nil)), "typ"},
		{"no jwk", esKey.Sign(map[string]any{"jwk": nil}, claims(nil)), "no jwk"},
		{"jwk not an object", esKey.Sign(map[string]any{"jwk": "key"}, claims(nil)), "not a JSON object"},
		{"jwk with d", esKey.Sign(map[string]any{"jwk": withPrivate}, claims(nil)), "private"},
		{"jwk of another key", esKey.Sign(map[string]any{"jwk": otherKey.JWK}, claims(nil)), "signature"},
		{"RSA jwk, EC signature", esKey.Sign(map[string]any{"jwk": rsaKey.JWK, "alg": "RS256"}, claims(nil)), "signature"},
		{"Ed25519 jwk of another key", edKey.Sign(map[string]any{"jwk": dpopclient.MustKey("EdDSA").JWK}, claims(nil)), "signature"},
		{"crit", esKey.Sign(map[string]any{"crit": []string{"exp"}}, claims(nil)), "crit"},
		{"header not JSON", enc([]byte("not json")) + "." + parts[1] + "." + parts[2], "JSON object"},
		{"header not base64", "***." + parts[1] + "." + parts[2], "base64url"},
		{"payload not base64", parts[0] + ".***." + parts[2], "base64url"},
		{"payload not an object", esKey.Sign(nil, nil), "jti"},
		{"signature not base64", parts[0] + "." + parts[1] + ".***", "base64url"},
		{"signature of another payload", parts[0] + "." + strings.Split(esKey.Sign(nil, claims(nil)), ".")[1] + "." + parts[2], "signature"},
		{"two parts", parts[0] + "." + parts[1], "signed JWT"},
		{"four parts", good + ".x", "signed JWT"},
		{"empty", "", "signed JWT"},
		{"over the size bound", esKey.Sign(nil, claims(dpopclient.Claims{"pad": strings.Repeat("x", MaxProofSize)})), "longer"},
		{"no jti", esKey.Sign(nil, claims(dpopclient.Claims{"jti": nil})), "jti"},
		{"no htm", esKey.Sign(nil, claims(dpopclient.Claims{"htm": nil})), "htm"},
		{"no htu", esKey.Sign(nil, claims(dpopclient.Claims{"htu": nil})), "htu"},
		{"no iat", esKey.Sign(nil, claims(dpopclient.Claims{"iat": nil})), "iat"},
		{"iat a string", esKey.Sign(nil, claims(dpopclient.Claims{"iat": "1800000000"})), "JSON object"},
		{"htm of another method", esKey.Sign(nil, claims(dpopclient.Claims{"htm": "GET"})), "htm"},
		{"htm in lower case", esKey.Sign(nil, claims(dpopclient.Claims{"htm": "post"})), "htm"},
		{"htu of another path", esKey.Sign(nil, claims(dpopclient.Claims{"htu": origin + "/account/graphql2"})), "htu"},
		{"htu of another host", esKey.Sign(nil, claims(dpopclient.Claims{"htu": "https://evil.example/account/graphql"})), "htu"},
		{"htu of a sub-host", esKey.Sign(nil, claims(dpopclient.Claims{"htu": "https://school.example.evil/account/graphql"})), "htu"},
		{"htu of another port", esKey.Sign(nil, claims(dpopclient.Claims{"htu": "https://school.example:8443/account/graphql"})), "htu"},
		{"htu of another scheme", esKey.Sign(nil, claims(dpopclient.Claims{"htu": "http://school.example/account/graphql"})), "htu"},
		{"htu with a query", esKey.Sign(nil, claims(dpopclient.Claims{"htu": graphql + "?a=1"})), "query"},
		{"htu with an empty query", esKey.Sign(nil, claims(dpopclient.Claims{"htu": graphql + "?"})), "query"},
		{"htu with a fragment", esKey.Sign(nil, claims(dpopclient.Claims{"htu": graphql + "#x"})), "fragment"},
		{"htu with user information", esKey.Sign(nil, claims(dpopclient.Claims{"htu": "https://u@school.example/account/graphql"})), "htu"},
		{"htu relative", esKey.Sign(nil, claims(dpopclient.Claims{"htu": "/account/graphql"})), "htu"},
		{"htu dot segments to another path", esKey.Sign(nil, claims(dpopclient.Claims{"htu": origin + "/account/graphql/../x"})), "htu"},
		{"htu climbing above the root", esKey.Sign(nil, claims(dpopclient.Claims{"htu": origin + "/../account/graphql"})), "htu"},
		{"htu with an encoded slash", esKey.Sign(nil, claims(dpopclient.Claims{"htu": origin + "/account%2Fgraphql"})), "htu"},
		{"iat far in the past", esKey.Sign(nil, claims(dpopclient.Claims{"iat": dpopNow.Add(-61 * time.Second).Unix()})), "past"},
		{"iat far in the future", esKey.Sign(nil, claims(dpopclient.Claims{"iat": dpopNow.Add(61 * time.Second).Unix()})), "future"},
		{"iat negative", esKey.Sign(nil, claims(dpopclient.Claims{"iat": -1})), "past"},
		{"iat huge", esKey.Sign(nil, claims(dpopclient.Claims{"iat": 1e300})), "future"},
		{"no ath", esKey.Sign(nil, claims(dpopclient.Claims{"ath": nil})), "ath"},
		{"ath of another token", esKey.Sign(nil, claims(dpopclient.Claims{"ath": dpopclient.ATH("sg_at_other")})), "ath"},
		{"ath unencoded", esKey.Sign(nil, claims(dpopclient.Claims{"ath": theToken})), "ath"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProof(tc.proof, target, dpopNow)
			if err == nil {
				t.Fatalf("accepted: %+v", p)
			}
			if err.Code != ErrInvalidDPoPProof || !strings.Contains(err.Reason, tc.reason) {
				t.Errorf("refused %s: %q, want invalid_dpop_proof naming %q", err.Code, err.Reason, tc.reason)
			}
		})
	}
}

// What the gateway forwards decides, as for the policy: an htu that is a
// spelling of the request's canonical URL is that URL.
func TestParseProofHTUSpellings(t *testing.T) {
	for _, htu := range []string{
		graphql,
		"HTTPS://School.Example/account/graphql",
		"https://school.example:443/account/graphql",
		origin + "/account/%67raphql",
		origin + "/account/./graphql",
		origin + "/x/../account/graphql",
		origin + "//account//graphql",
	} {
		if _, err := ParseProof(esKey.Sign(nil, claims(dpopclient.Claims{"htu": htu})), target, dpopNow); err != nil {
			t.Errorf("htu %s refused: %v", htu, err)
		}
	}
	// At the token endpoint, without an access token, ath is not asked.
	tokenTarget := ProofTarget{Method: "POST", Origin: origin, Path: "/api/oauth/token"}
	c := claims(dpopclient.Claims{"htu": origin + "/api/oauth/token", "ath": nil})
	if _, err := ParseProof(esKey.Sign(nil, c), tokenTarget, dpopNow); err != nil {
		t.Errorf("a token endpoint proof refused: %v", err)
	}
	// iat within the window either way is fine.
	for _, skew := range []time.Duration{-ProofWindow, ProofWindow} {
		c := claims(dpopclient.Claims{"iat": dpopNow.Add(skew).Unix()})
		if _, err := ParseProof(esKey.Sign(nil, c), target, dpopNow); err != nil {
			t.Errorf("iat %v from now refused: %v", skew, err)
		}
	}
}

// The school's state: a jti is good once, more than one DPoP header is
// refused, and a school that asks for nonces wants its own, fresh.
func TestDPoPProof(t *testing.T) {
	now := dpopNow
	d := NewDPoP(DPoPAllowed, nil, func() time.Time { return now })
	proof := esKey.Sign(nil, claims(nil))
	req := func(proofs ...string) (*Proof, *ProofError) {
		r := httptest.NewRequest("POST", graphql, nil)
		for _, p := range proofs {
			r.Header.Add("DPoP", p)
		}
		return d.Proof(r, target)
	}
	if p, err := req(); p != nil || err != nil {
		t.Fatalf("no header: %v, %v; want neither", p, err)
	}
	if _, err := req(proof); err != nil {
		t.Fatalf("first use refused: %v", err)
	}
	if _, err := req(proof); err == nil || !strings.Contains(err.Reason, "used before") {
		t.Errorf("a replay: %v, want refused", err)
	}
	// A jti is known with its key: another key's proof of the same jti is
	// another proof.
	same := claims(dpopclient.Claims{"jti": "the-same-jti"})
	if _, err := req(esKey.Sign(nil, same)); err != nil {
		t.Fatal(err)
	}
	if _, err := req(otherKey.Sign(nil, same)); err != nil {
		t.Errorf("another key's proof with the same jti: %v", err)
	}
	if _, err := req(esKey.Sign(nil, claims(nil)), esKey.Sign(nil, claims(nil))); err == nil || !strings.Contains(err.Reason, "exactly one") {
		t.Errorf("two DPoP headers: %v, want refused", err)
	}
	if d.Remembered() != 3 {
		t.Errorf("%d proofs remembered, want the three accepted", d.Remembered())
	}

	nonces := NewNonces([]byte("0123456789abcdef0123456789abcdef"))
	d = NewDPoP(DPoPAllowed, nonces, func() time.Time { return now })
	withNonce := func(n string) string { return esKey.Sign(nil, claims(dpopclient.Claims{"nonce": n})) }
	if _, err := req(esKey.Sign(nil, claims(nil))); err == nil || err.Code != ErrUseDPoPNonce {
		t.Errorf("no nonce: %v, want use_dpop_nonce", err)
	}
	if got := d.CurrentNonce(); got != nonces.Current(now) || got == "" {
		t.Errorf("the nonce to retry with is %q", got)
	}
	stale := nonces.Current(now.Add(-3 * time.Minute))
	other := NewNonces([]byte("another key, another school.....")).Current(now)
	for name, n := range map[string]string{"stale": stale, "another school's": other, "garbage": "x",
		"too far ahead": nonces.Current(now.Add(3 * time.Minute))} {
		if _, err := req(withNonce(n)); err == nil || err.Code != ErrUseDPoPNonce {
			t.Errorf("%s nonce: %v, want use_dpop_nonce", name, err)
		}
	}
	previous := nonces.Current(now.Add(-90 * time.Second))
	p, err := req(withNonce(previous))
	if err != nil {
		t.Fatalf("a nonce of the slot before last refused: %v", err)
	}
	if d.NonceFor(p) != nonces.Current(now) {
		t.Error("a client with an older nonce is not handed the current one")
	}
	p, err = req(withNonce(nonces.Current(now)))
	if err != nil || d.NonceFor(p) != "" {
		t.Errorf("the current nonce: %v, and handed %q again", err, d.NonceFor(p))
	}
}

// Nonces are made and checked without a store: any instance with the key
// accepts what another issued.
func TestNoncesAcrossInstances(t *testing.T) {
	key := []byte("shared by every instance........")
	a, b := NewNonces(key), NewNonces(key)
	n := a.Current(dpopNow)
	if valid, current := b.Check(n, dpopNow.Add(time.Second)); !valid || !current {
		t.Errorf("instance B: valid %v current %v, want both", valid, current)
	}
	if valid, _ := b.Check(n, dpopNow.Add(2*time.Minute)); !valid {
		t.Error("a nonce two slots old is refused")
	}
	if valid, _ := b.Check(n, dpopNow.Add(4*time.Minute)); valid {
		t.Error("a nonce four minutes old is accepted")
	}
	if a.Current(dpopNow.Add(time.Minute)) == n {
		t.Error("the nonce does not rotate")
	}
}

// FuzzParseProof: whatever a client sends as a proof is refused with a
// reason or accepted as a proof of a key; never a panic. An accepted one
// verified: its key's thumbprint is set.
func FuzzParseProof(f *testing.F) {
	good := esKey.Sign(nil, claims(nil))
	parts := strings.Split(good, ".")
	f.Add(good)
	f.Add(dpopclient.MustKey("EdDSA").Sign(nil, claims(nil)))
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}}`)) + "." + parts[1] + "." + parts[2])
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"dpop+jwt","alg":"RS256","jwk":{"kty":"RSA","n":"AQAB","e":"AQAB"}}`)) + "." + parts[1] + "." + parts[2])
	f.Add("..")
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := ParseProof(raw, target, dpopNow)
		if (p == nil) == (err == nil) {
			t.Fatalf("proof %v and error %v", p, err)
		}
		if err != nil && (err.Code != ErrInvalidDPoPProof || err.Reason == "") {
			t.Fatalf("refused without a reason: %+v", err)
		}
		if p != nil && p.JKT == "" {
			t.Fatal("accepted without a key")
		}
	})
}

// BenchmarkParseProof is a proof's cost at a protected resource: its
// header seen before (the usual case), the claims read, the signature
// verified.
func BenchmarkParseProof(b *testing.B) {
	for _, alg := range []string{"ES256", "EdDSA", "RS256", "PS256"} {
		k := dpopclient.MustKey(alg)
		proof := k.Sign(nil, claims(nil))
		b.Run(alg, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := ParseProof(proof, target, dpopNow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
