package policy

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
)

// A DPoP proof (RFC 9449 §4) is a JWT the client signs for each request
// with the key its tokens are bound to. ParseProof checks one as §4.3
// lists, but for what needs the school's state: its nonce (dpopnonce.go)
// and whether its jti was seen before (dpopreplay.go).

// MaxProofSize bounds the DPoP header: a proof with an RSA-8192 key and a
// long URL fits with room to spare, and nothing longer is read.
const MaxProofSize = 8192

// ProofWindow is how far a proof's iat may lie from the server's clock,
// either way. It is also how long a proof could be replayed where its jti
// is not remembered, at another instance of the school (docs/scale-out.md).
const ProofWindow = 60 * time.Second

// Proof is a checked DPoP proof.
type Proof struct {
	// JKT is the base64url SHA-256 JWK thumbprint of the proof's key.
	JKT string
	// JTI is the proof's unique identifier, IssuedAt its iat in seconds.
	JTI      string
	IssuedAt int64
	// Nonce is the server nonce it carries, if any.
	Nonce string
}

// ProofError is a refused proof: Code is the OAuth error
// (invalid_dpop_proof, use_dpop_nonce) and Reason says what is wrong.
type ProofError struct {
	Code   string
	Reason string
}

func (e *ProofError) Error() string { return e.Reason }

// Error codes of RFC 9449.
const (
	ErrInvalidDPoPProof = "invalid_dpop_proof"
	ErrUseDPoPNonce     = "use_dpop_nonce"
)

func badProof(reason string) *ProofError {
	return &ProofError{Code: ErrInvalidDPoPProof, Reason: reason}
}

// ProofTarget is the request a proof must be for: its method, the site's
// origin and the canonical path the gateway judges and forwards, and, at a
// protected resource, the access token that comes with it.
type ProofTarget struct {
	Method      string
	Origin      string
	Path        string
	AccessToken string
}

// proofClaims are the claims RFC 9449 §4.2 defines.
type proofClaims struct {
	JTI   string  `json:"jti"`
	HTM   string  `json:"htm"`
	HTU   string  `json:"htu"`
	IAT   float64 `json:"iat"`
	ATH   string  `json:"ath"`
	Nonce string  `json:"nonce"`
}

// ParseProof checks raw, the value of a request's one DPoP header, as a
// proof for target at now: a compact JWS of three parts; its header (typ,
// alg, jwk: keyOfHeader); jti, htm, htu and iat present; htm the method;
// htu the target's URL, compared as the gateway reads paths; iat within
// ProofWindow; with an access token, ath its hash; and the signature by
// the header's key. The cheap checks come first, the signature last.
func ParseProof(raw string, target ProofTarget, now time.Time) (*Proof, *ProofError) {
	if len(raw) > MaxProofSize {
		return nil, badProof("the DPoP proof is longer than " + strconv.Itoa(MaxProofSize) + " bytes")
	}
	hdr, rest, ok := strings.Cut(raw, ".")
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || hdr == "" || payload == "" || sig == "" || strings.Contains(sig, ".") {
		return nil, badProof("the DPoP proof is not a signed JWT (header.payload.signature)")
	}
	key, err := keyOfHeader(hdr)
	if err != nil {
		return nil, badProof(err.Error())
	}
	c, perr := proofPayload(payload)
	if perr != nil {
		return nil, perr
	}
	if perr := c.check(target, now); perr != nil {
		return nil, perr
	}
	signature, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return nil, badProof("the DPoP proof's signature is not base64url")
	}
	if jwsbb.Verify(key.key, key.alg, []byte(raw[:len(hdr)+1+len(payload)]), signature) != nil {
		return nil, badProof("the DPoP proof's signature does not verify with its jwk")
	}
	return &Proof{JKT: key.jkt, JTI: c.JTI, IssuedAt: int64(c.IAT), Nonce: c.Nonce}, nil
}

func proofPayload(seg string) (*proofClaims, *ProofError) {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return nil, badProof("the DPoP proof's payload is not base64url")
	}
	var c proofClaims
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, badProof("the DPoP proof's payload is not a JSON object of the RFC 9449 claims")
	}
	return &c, nil
}

// check applies the checks of the claims that need no key.
func (c *proofClaims) check(target ProofTarget, now time.Time) *ProofError {
	switch {
	case c.JTI == "":
		return badProof("the DPoP proof has no jti")
	case c.HTM == "" || c.HTU == "" || c.IAT == 0:
		return badProof("the DPoP proof needs htm, htu and iat")
	case c.HTM != target.Method:
		return badProof("the DPoP proof's htm is " + c.HTM + "; this request is a " + target.Method)
	}
	if reason := htuMismatch(c.HTU, target.Origin, target.Path); reason != "" {
		return badProof(reason)
	}
	switch skew := c.IAT - float64(now.Unix()); {
	case skew < -ProofWindow.Seconds():
		return badProof("the DPoP proof's iat is more than 60 s in the past: make a new proof for each request, and check the client's clock")
	case skew > ProofWindow.Seconds():
		return badProof("the DPoP proof's iat is more than 60 s in the future: check the client's clock")
	}
	if target.AccessToken != "" {
		if c.ATH == "" {
			return badProof("the DPoP proof has no ath: a proof sent with an access token carries the token's hash")
		}
		if !athMatches(c.ATH, target.AccessToken) {
			return badProof("the DPoP proof's ath is not the hash of this access token")
		}
	}
	return nil
}

// athMatches compares ath with the base64url SHA-256 of the token, in
// constant time: the hash is derived from a secret.
func athMatches(ath, token string) bool {
	sum := sha256.Sum256([]byte(token))
	var want [43]byte // base64url of 32 bytes, unpadded
	base64.RawURLEncoding.Encode(want[:], sum[:])
	return subtle.ConstantTimeCompare([]byte(ath), want[:]) == 1
}

// htuMismatch says why htu is not the target's URL, or "" when it is.
// htu is the request's URL without query or fragment (RFC 9449 §4.2), and
// names what the gateway serves: the same origin, whatever spelling of it,
// and a path whose canonical form (policy.Canonical: escapes, dot
// segments, repeated slashes) is the request's canonical path. A proof
// for a path the gateway would not forward is for no request.
func htuMismatch(htu, origin, path string) string {
	if rest, ok := strings.CutPrefix(htu, origin); ok && rest == path {
		return "" // the usual case: the URL as the client sent it
	}
	wrong := "the DPoP proof's htu is not this request's URL, " + origin + path
	u, err := url.Parse(htu)
	switch {
	case err != nil || u.Opaque != "" || u.User != nil:
		return wrong
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(htu, "#"):
		return "the DPoP proof's htu has a query or a fragment; it is the URL without them"
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || scheme+"://"+CanonicalHost(u.Host, scheme) != origin {
		return wrong
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	canon, climbs, err := canonicalize(p)
	if err != nil || climbs || canon != path {
		return wrong
	}
	return ""
}

// errNoProof is a DPoP-scheme credential sent without a proof.
var errNoProof = errors.New("a DPoP proof (the DPoP header) is required with the DPoP scheme")
