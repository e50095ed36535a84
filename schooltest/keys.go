package schooltest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// ES256Key makes a new P-256 private key named kid, for ES256.
func ES256Key(tb testing.TB, kid string) jwk.Key {
	tb.Helper()
	raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	k, err := jwk.Import(raw)
	if err != nil {
		tb.Fatal(err)
	}
	_ = k.Set(jwk.KeyIDKey, kid)
	_ = k.Set(jwk.AlgorithmKey, jwa.ES256())
	return k
}

// SignJWS makes a compact JWS of claims signed by key with ES256, its kid
// and, unless "", typ in the protected header.
func SignJWS(tb testing.TB, key jwk.Key, typ string, claims map[string]any) string {
	tb.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		tb.Fatal(err)
	}
	hdr := jws.NewHeaders()
	if kid, ok := key.KeyID(); ok {
		_ = hdr.Set(jws.KeyIDKey, kid)
	}
	if typ != "" {
		_ = hdr.Set(jws.TypeKey, typ)
	}
	out, err := jws.Sign(payload, jws.WithKey(jwa.ES256(), key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		tb.Fatal(err)
	}
	return string(out)
}
