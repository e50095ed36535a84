package authserver

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"golang.org/x/crypto/cryptobyte"
	asn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// A token is signed on every code exchange and every assertion, so the
// compact JWS is put together here rather than by jws.Sign, which builds
// and serializes a header object per call: the key is the cached
// *ecdsa.PrivateKey and each protected header is encoded once per key.
// What comes out is standard ES256 compact JWS (RFC 7515 §7.1, RFC 7518
// §3.4): base64url(header) "." base64url(payload) "." base64url(r || s),
// r and s each 32 bytes big-endian; the tests verify it with jwx.

// es256Signer signs for one key.
type es256Signer struct {
	key *ecdsa.PrivateKey
	// headers are the encoded protected headers, by typ, each with the
	// trailing ".".
	headers map[string]string
}

// signedTypes are the typ values the keys sign: ID tokens and identity
// assertions.
var signedTypes = []string{"JWT", AssertionType}

func newES256Signer(priv jwk.Key, kid string) (*es256Signer, error) {
	var raw ecdsa.PrivateKey
	if err := jwk.Export(priv, &raw); err != nil {
		return nil, fmt.Errorf("signing key %s: %w", kid, err)
	}
	if raw.Curve.Params().BitSize != 256 {
		return nil, fmt.Errorf("signing key %s: not a P-256 key", kid)
	}
	s := &es256Signer{key: &raw, headers: map[string]string{}}
	for _, typ := range signedTypes {
		hdr, err := json.Marshal(struct {
			Alg string `json:"alg"`
			Kid string `json:"kid"`
			Typ string `json:"typ"`
		}{"ES256", kid, typ})
		if err != nil {
			return nil, err
		}
		s.headers[typ] = base64.RawURLEncoding.EncodeToString(hdr) + "."
	}
	return s, nil
}

// sign returns the compact JWS of payload with the header of typ.
func (s *es256Signer) sign(payload []byte, typ string) ([]byte, error) {
	hdr, ok := s.headers[typ]
	if !ok {
		return nil, fmt.Errorf("no protected header for typ %q", typ)
	}
	enc := base64.RawURLEncoding
	const sigLen = 64
	out := make([]byte, 0, len(hdr)+enc.EncodedLen(len(payload))+1+enc.EncodedLen(sigLen))
	out = append(out, hdr...)
	out = enc.AppendEncode(out, payload)
	digest := sha256.Sum256(out)
	// SignASN1 rather than Sign, which makes the same DER signature and
	// then parses it into two big.Int: r and s are taken from the DER.
	der, err := ecdsa.SignASN1(rand.Reader, s.key, digest[:])
	if err != nil {
		return nil, err
	}
	var sig [sigLen]byte
	if !rawSignature(sig[:], der) {
		return nil, errors.New("ES256 signature out of range")
	}
	out = append(out, '.')
	return enc.AppendEncode(out, sig[:]), nil
}

// rawSignature writes the r and s of a DER ECDSA signature (SEQUENCE of
// two INTEGERs) into dst's halves, each big-endian and zero-padded on the
// left (RFC 7518 §3.4).
func rawSignature(dst, der []byte) bool {
	var seq, r, s cryptobyte.String
	in := cryptobyte.String(der)
	if !in.ReadASN1(&seq, asn1.SEQUENCE) || !in.Empty() ||
		!seq.ReadASN1(&r, asn1.INTEGER) || !seq.ReadASN1(&s, asn1.INTEGER) || !seq.Empty() {
		return false
	}
	half := len(dst) / 2
	return fillScalar(dst[:half], r) && fillScalar(dst[half:], s)
}

// fillScalar writes the DER INTEGER n, which must be positive, into dst,
// zero-padded on the left.
func fillScalar(dst, n []byte) bool {
	if len(n) == 0 || n[0]&0x80 != 0 {
		return false // empty or negative
	}
	for len(n) > 1 && n[0] == 0 {
		n = n[1:] // DER's zero before a high bit
	}
	if len(n) > len(dst) {
		return false
	}
	pad := len(dst) - len(n)
	clear(dst[:pad])
	copy(dst[pad:], n)
	return true
}
