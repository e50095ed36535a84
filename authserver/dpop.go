package authserver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// DPoP (RFC 9449) at the authorization server: a token request with a
// proof gets tokens bound to the proof's key (token.go mints them), a
// code asked with dpop_jkt is redeemed with that key only, and a school
// that asks for nonces hands them out here and at its resources alike.
// The proof itself is checked by policy, as the resources check theirs.

// settingDPoPNonceKey holds the key of the school's DPoP nonces: 32
// random bytes, stored on the first start that asks for nonces, so that
// every instance of the school on one store makes and accepts the same
// ones.
const settingDPoPNonceKey = "dpop_nonce_key"

// newDPoP makes the school's DPoP from its configuration, loading (or, on
// the first start that asks for nonces, storing) the nonce key.
func newDPoP(ctx context.Context, cfg *Config, st store.SettingStore) (*policy.DPoP, error) {
	if cfg.DPoP == policy.DPoPOff || !cfg.DPoPNonce {
		return policy.NewDPoP(cfg.DPoP, nil, cfg.Now), nil
	}
	key, err := st.GetSetting(ctx, settingDPoPNonceKey)
	if errors.Is(err, store.ErrNotFound) {
		key, err = st.InitSetting(ctx, settingDPoPNonceKey, newNonceKey())
	}
	if err != nil {
		return nil, fmt.Errorf("loading the DPoP nonce key: %w", err)
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("the stored DPoP nonce key is %d bytes, not 32", len(key))
	}
	return policy.NewDPoP(cfg.DPoP, policy.NewNonces(key), cfg.Now), nil
}

func newNonceKey() []byte {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return key
}

// DPoP is the school's DPoP, which its protected resources share with
// the token endpoint: one replay cache, one nonce key.
func (s *Server) DPoP() *policy.DPoP { return s.dpop }

// Guard is what the school's protected resources check requests with:
// this server's tokens, bound to its issuer, and its DPoP.
func (s *Server) Guard() *policy.Guard { return &s.guard }

// tokenProof reads a token request's DPoP proof: nil without one, or when
// the school has DPoP off (a server without DPoP ignores the header, RFC
// 9449 §5). A proof that is there must be good: a client that sends a bad
// one is refused, never given a bearer token instead.
func (s *Server) tokenProof(r *http.Request) (*policy.Proof, *oauthError) {
	if !s.dpop.On() {
		return nil, nil
	}
	p, perr := s.dpop.Proof(r, policy.ProofTarget{Method: r.Method, Origin: s.cfg.Issuer, Path: r.URL.EscapedPath()})
	if perr == nil {
		return p, nil
	}
	switch perr.Code {
	case policy.ErrUnavailable:
		return nil, errUnavailable(perr.Reason)
	case policy.ErrUseDPoPNonce:
		e := &oauthError{Status: http.StatusBadRequest, Code: perr.Code, Description: perr.Reason}
		e.Nonce = s.dpop.CurrentNonce()
		return nil, e
	}
	return nil, errInvalidDPoPProof(perr.Reason)
}

func errInvalidDPoPProof(desc string) *oauthError {
	return &oauthError{Status: http.StatusBadRequest, Code: policy.ErrInvalidDPoPProof, Description: desc}
}

// requiresDPoP reports whether client gets DPoP-bound tokens only: the
// school requires them, or the client asked for them (RFC 9449 §5.2,
// dpop_bound_access_tokens), and DPoP is on.
func (s *Server) requiresDPoP(client *store.Client) bool {
	switch s.dpop.Mode() {
	case policy.DPoPRequired:
		return true
	case policy.DPoPAllowed:
		return client.DPoPBound
	}
	return false
}

// proofKey is the thumbprint a proof binds tokens to, "" without one.
func proofKey(p *policy.Proof) string {
	if p == nil {
		return ""
	}
	return p.JKT
}

// validJKT reports whether s has the form of a base64url SHA-256
// thumbprint: 43 characters of the base64url alphabet.
func validJKT(s string) bool {
	if len(s) != 43 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
