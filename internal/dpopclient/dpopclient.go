// Package dpopclient makes DPoP proofs (RFC 9449 §4) as a client does,
// for the tests and the bench: a key of any algorithm the gateway accepts,
// its thumbprint, and proofs for a request, well-formed or broken on
// purpose. It builds the compact JWS itself so that a test can put any
// header and claims in it; the signature is jwx's.
package dpopclient

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
)

// Key is a client's DPoP key.
type Key struct {
	// Alg is the JWS algorithm it signs with.
	Alg     string
	private any
	// JWK is the public key as the proof's header carries it.
	JWK map[string]any
	// JKT is its base64url SHA-256 JWK thumbprint.
	JKT string
}

// NewKey makes a key for alg: ES256, ES384, ES512, EdDSA or Ed25519 (an
// Ed25519 key), RS256 and PS256 and the like (an RSA-2048 key).
func NewKey(alg string) (*Key, error) {
	var priv any
	var pub crypto.PublicKey
	var err error
	switch alg {
	case "ES256", "ES384", "ES512":
		curve := map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()}[alg]
		var k *ecdsa.PrivateKey
		k, err = ecdsa.GenerateKey(curve, rand.Reader)
		if err == nil {
			priv, pub = k, &k.PublicKey
		}
	case "EdDSA", "Ed25519":
		var p ed25519.PublicKey
		var k ed25519.PrivateKey
		p, k, err = ed25519.GenerateKey(rand.Reader)
		priv, pub = k, p
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		var k *rsa.PrivateKey
		k, err = rsa.GenerateKey(rand.Reader, 2048)
		if err == nil {
			priv, pub = k, &k.PublicKey
		}
	default:
		return nil, fmt.Errorf("dpopclient: no key for %q", alg)
	}
	if err != nil {
		return nil, err
	}
	return FromKeys(alg, priv, pub)
}

// FromKeys makes a Key of an existing key pair.
func FromKeys(alg string, priv any, pub crypto.PublicKey) (*Key, error) {
	k, err := jwk.Import(pub)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	var members map[string]any
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, err
	}
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	return &Key{Alg: alg, private: priv, JWK: members, JKT: base64.RawURLEncoding.EncodeToString(tp)}, nil
}

// MustKey is NewKey that panics, for tests and the bench.
func MustKey(alg string) *Key {
	k, err := NewKey(alg)
	if err != nil {
		panic(err)
	}
	return k
}

// Claims are a proof's claims; Proof fills jti, htm, htu and iat.
type Claims map[string]any

// Proof returns a proof for method and url (without query) at now, with
// ath for accessToken when it is not empty.
func (k *Key) Proof(method, url, accessToken string, now time.Time) string {
	c := Claims{"jti": NewJTI(), "htm": method, "htu": url, "iat": now.Unix()}
	if accessToken != "" {
		c["ath"] = ATH(accessToken)
	}
	return k.Sign(nil, c)
}

// ProofWith is Proof with extra claims (a nonce), which may replace the
// ones Proof sets.
func (k *Key) ProofWith(method, url, accessToken string, now time.Time, extra Claims) string {
	c := Claims{"jti": NewJTI(), "htm": method, "htu": url, "iat": now.Unix()}
	if accessToken != "" {
		c["ath"] = ATH(accessToken)
	}
	maps.Copy(c, extra)
	return k.Sign(nil, c)
}

// Header is the proof header Sign uses: typ dpop+jwt, the key's alg and
// its public JWK.
func (k *Key) Header() map[string]any {
	return map[string]any{"typ": "dpop+jwt", "alg": k.Alg, "jwk": k.JWK}
}

// Sign signs claims under header (nil: Header()) with the key, whatever
// the header says: a test may name another alg or key than the one that
// signs. A nil value in header removes that member.
func (k *Key) Sign(header map[string]any, claims Claims) string {
	h := k.Header()
	for name, v := range header {
		if v == nil {
			delete(h, name)
		} else {
			h[name] = v
		}
	}
	return SignRaw(k.private, k.Alg, mustJSON(h), mustJSON(claims))
}

// SignRaw builds a compact JWS of the given header and payload bytes,
// signed with priv for alg (jwx's signature).
func SignRaw(priv any, alg string, header, payload []byte) string {
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	sig, err := jwsbb.Sign(priv, alg, []byte(input), rand.Reader)
	if err != nil {
		panic(err)
	}
	return input + "." + enc.EncodeToString(sig)
}

// ATH is the ath claim of an access token.
func ATH(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// NewJTI is a fresh jti: 128 random bits.
func NewJTI() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
