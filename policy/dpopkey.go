package policy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

// A DPoP proof's protected header names its algorithm and carries the
// public key that signs it (RFC 9449 §4.2). A client sends the same header
// with every proof of one key, so what the header says is worked out once
// — the JSON read, the JWK parsed and checked, its RFC 7638 thumbprint
// computed — and kept under the encoded header itself: a request whose
// header was seen before pays for its signature and claims only.

// DPoPAlgs are the JWS algorithms a proof may be signed with: asymmetric
// ones only (RFC 9449 §4.3 check 5), as the metadata's
// dpop_signing_alg_values_supported and the challenges' algs list them.
var DPoPAlgs = []string{"ES256", "ES384", "ES512", "EdDSA", "Ed25519",
	"PS256", "PS384", "PS512", "RS256", "RS384", "RS512"}

// dpopAlgsText is DPoPAlgs as a challenge's algs value.
var dpopAlgsText = strings.Join(DPoPAlgs, " ")

// RSA keys are accepted from 2048 bits (shorter ones are broken or about
// to be) to 8192 (longer ones only make verification slow).
const (
	minRSABits = 2048
	maxRSABits = 8192
)

// proofKey is what a proof header says, once checked.
type proofKey struct {
	alg string
	// key is the public key: *ecdsa.PublicKey, ed25519.PublicKey or
	// *rsa.PublicKey, of the kind alg needs.
	key any
	// jkt is the key's base64url SHA-256 JWK thumbprint: what a token is
	// bound to.
	jkt string
}

// Proof headers kept, and the longest kept: a header of an RSA-8192 key
// is about 1.5 KiB encoded, so that the cache holds at most a few MiB
// whatever clients send.
const (
	proofKeyCacheSize = 4096
	maxCachedHeader   = 2048
)

var proofKeys, _ = lru.New[string, *proofKey](proofKeyCacheSize)

// keyOfHeader returns what an encoded proof header says, from the cache
// or checked now. A refused header is not kept: it costs whoever sends it
// the parse each time, and takes no place from good ones.
func keyOfHeader(seg string) (*proofKey, error) {
	if pk, ok := proofKeys.Get(seg); ok {
		return pk, nil
	}
	pk, err := parseProofHeader(seg)
	if err != nil {
		return nil, err
	}
	if len(seg) <= maxCachedHeader {
		proofKeys.Add(strings.Clone(seg), pk)
	}
	return pk, nil
}

// privateMembers are the JWK members of a private or symmetric key: a
// proof's jwk must hold none (RFC 9449 §4.3 check 7).
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// parseProofHeader checks a proof's protected header: typ dpop+jwt, an
// accepted asymmetric alg, no crit, and a jwk that is a public key of the
// kind alg needs.
func parseProofHeader(seg string) (*proofKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return nil, errors.New("the proof's header is not base64url")
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(raw, &h); err != nil || h == nil {
		return nil, errors.New("the proof's header is not a JSON object")
	}
	var typ, alg string
	if json.Unmarshal(h["typ"], &typ) != nil || !isDPoPType(typ) {
		return nil, errors.New(`the proof's typ must be "dpop+jwt"`)
	}
	if json.Unmarshal(h["alg"], &alg) != nil || !slices.Contains(DPoPAlgs, alg) {
		return nil, errors.New("the proof's alg must be one of " + dpopAlgsText + " (asymmetric)")
	}
	if _, ok := h["crit"]; ok {
		return nil, errors.New("the proof's header has crit: no extension is understood here")
	}
	jwkRaw, ok := h["jwk"]
	if !ok {
		return nil, errors.New("the proof's header has no jwk")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(jwkRaw, &members); err != nil || members == nil {
		return nil, errors.New("the proof's jwk is not a JSON object")
	}
	for _, m := range privateMembers {
		if _, ok := members[m]; ok {
			return nil, errors.New("the proof's jwk holds a private or symmetric key (" + m + "); send the public key only")
		}
	}
	key, err := jwk.ParseKey(jwkRaw)
	if err != nil {
		return nil, errors.New("the proof's jwk is not a key")
	}
	var pub any
	if err := jwk.Export(key, &pub); err != nil {
		return nil, errors.New("the proof's jwk is not a key of a supported type")
	}
	if err := keyFitsAlg(alg, pub); err != nil {
		return nil, err
	}
	tp, err := key.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, errors.New("the proof's jwk has no thumbprint")
	}
	return &proofKey{alg: alg, key: pub, jkt: base64.RawURLEncoding.EncodeToString(tp)}, nil
}

// isDPoPType accepts the typ of RFC 9449 §4.2 as media types compare:
// without regard to case, with or without "application/".
func isDPoPType(typ string) bool {
	typ = strings.ToLower(typ)
	return typ == "dpop+jwt" || typ == "application/dpop+jwt"
}

// keyFitsAlg checks that a public key is of the kind alg signs with.
func keyFitsAlg(alg string, pub any) error {
	mismatch := errors.New("the proof's jwk is not a key for " + alg)
	switch alg {
	case "ES256", "ES384", "ES512":
		k, ok := pub.(*ecdsa.PublicKey)
		want := map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()}[alg]
		if !ok || k.Curve != want {
			return mismatch
		}
	case "EdDSA", "Ed25519":
		if k, ok := pub.(ed25519.PublicKey); !ok || len(k) != ed25519.PublicKeySize {
			return mismatch
		}
	default: // RS*, PS*
		k, ok := pub.(*rsa.PublicKey)
		if !ok {
			return mismatch
		}
		if bits := k.N.BitLen(); bits < minRSABits || bits > maxRSABits {
			return errors.New("the proof's RSA key must have 2048 to 8192 bits")
		}
	}
	return nil
}
